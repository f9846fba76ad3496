import { AppError } from '../errors.js';
import { admitCapped, usageMonth } from '../billing/usage-counter.js';
import type { DbOrTrx } from '../storage/db.js';
import type { EventRow } from '../storage/schema.js';
import {
  loadCatalogueFacts,
  resolveBaselineOnce,
  type ResolvedBaseline,
  type ResolvedMemo,
  versionsPricing,
} from './baseline.js';
import { eventView } from './events.js';
import { claimIdempotencyKeys, IDEMPOTENCY_WINDOW_MS } from './idempotency.js';
import type { JobOutcome, TrackJob } from './job.js';
import { computeSavings } from './savings.js';
import { writeEvents, type KnownAgents } from './event-writes.js';
import { onEventsCreated } from './side-effects.js';
import { agentCostOf, checkOccurredAtWindow, clientIdOf } from './track-input.js';

function groupBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  return groups;
}

interface Live {
  index: number;
  job: TrackJob;
  baseline?: ResolvedBaseline;
}

/**
 * Processes a batch of track calls in one open transaction with set-wise statements, in the
 * order of DESIGN §2: idempotent replay, business rules, quota, then the writes and their side
 * effects. Each job ends with its own outcome; only a database failure fails the batch.
 * `knownAgents`: the agents already stored, whose events need not insert them (event-writes.ts).
 */
export async function processBatch(
  db: DbOrTrx,
  jobs: TrackJob[],
  knownAgents?: KnownAgents,
): Promise<JobOutcome[]> {
  const outcomes: JobOutcome[] = new Array<JobOutcome>(jobs.length);
  const orgKey = (job: TrackJob) => `${job.ctx.org.id}\n${job.idempotencyKey ?? ''}`;

  // Two calls with one key in one batch: the later one waits for the next batch, where the
  // first one's committed event answers it.
  const seen = new Set<string>();
  let live: Live[] = [];
  jobs.forEach((job, index) => {
    if (job.idempotencyKey !== null) {
      if (seen.has(orgKey(job))) return void (outcomes[index] = { retry: true });
      seen.add(orgKey(job));
    }
    live.push({ index, job });
  });

  live = await answerReplays(db, live, outcomes);

  for (const group of groupBy(live, (l) => l.job.ctx.org.id).values()) {
    const first = group[0];
    if (!first) continue;
    const taskTypes = [...new Set(group.map((l) => l.job.input.task_type))];
    const facts = await loadCatalogueFacts(db, first.job.ctx.org, taskTypes);
    const memo: ResolvedMemo = new Map();
    for (const l of group) {
      const { job } = l;
      try {
        // Each event is priced with the assumptions in force at its own occurred_at.
        l.baseline = resolveBaselineOnce(
          memo,
          job.ctx.org,
          facts,
          job.input.task_type,
          job.input.outcome,
          job.input.human_baseline_minutes ?? null,
          job.occurredAt.getTime(),
          job.path,
        );
        checkOccurredAtWindow(job.occurredAt, job.receivedAt, job.path);
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        outcomes[l.index] = { error };
      }
    }
  }
  live = live.filter((l) => outcomes[l.index] === undefined);

  // Claim keys in a fixed order so concurrent batches cannot deadlock on them.
  const claims = live
    .filter((l) => l.job.idempotencyKey !== null)
    .sort((a, b) => orgKey(a.job).localeCompare(orgKey(b.job)));
  const holders = await claimIdempotencyKeys(
    db,
    claims.map(({ job }) => ({
      orgId: job.ctx.org.id,
      key: job.idempotencyKey ?? '',
      eventId: job.eventId,
      nowMs: job.receivedAt.getTime(),
    })),
  );
  for (const [i, l] of claims.entries()) {
    const holder = holders[i] ?? null;
    if (holder !== null) outcomes[l.index] = await replayOf(db, l.job.ctx.org.id, holder);
  }
  live = live.filter((l) => outcomes[l.index] === undefined);

  live = await applyCappedQuota(db, live, outcomes);

  const rows = live.map((l) => eventRow(l.job, l.baseline));
  const newAgents = await writeEvents(db, rows, knownAgents);
  const created = live.map((l, i) => {
    const row = rows[i] as EventRow;
    // The event's metadata is the request's (what the row holds, serialised): no need to parse it back.
    const event = eventView(row, l.job.input.metadata ?? null);
    outcomes[l.index] = { ok: { event, replayed: false } };
    const { ctx } = l.job;
    const txCtx = {
      db,
      engine: ctx.engine,
      clock: ctx.clock,
      config: ctx.config,
      org: ctx.org,
      actorKeyId: ctx.actorKeyId,
    };
    return { ctx: txCtx, row, event, isNewAgent: newAgents.has(row.id) };
  });
  await onEventsCreated(db, created);
  return outcomes;
}

function planOf(job: TrackJob) {
  return job.ctx.config.plans[job.ctx.org.plan];
}

async function replayOf(db: DbOrTrx, orgId: string, eventId: string): Promise<JobOutcome> {
  const row = await db
    .selectFrom('events')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('id', '=', eventId)
    .executeTakeFirstOrThrow();
  return { ok: { event: eventView(row), replayed: true } };
}

/** Jobs whose key already holds a committed event within 24 h answer with that event. */
async function answerReplays(db: DbOrTrx, live: Live[], outcomes: JobOutcome[]): Promise<Live[]> {
  const keyed = live.filter((l) => l.job.idempotencyKey !== null);
  for (const [orgId, group] of groupBy(keyed, (l) => l.job.ctx.org.id)) {
    const holders = await db
      .selectFrom('idempotency_keys')
      .select(['key', 'event_id', 'created_at'])
      .where('org_id', '=', orgId)
      .where(
        'key',
        'in',
        group.map((l) => l.job.idempotencyKey ?? ''),
      )
      .execute();
    const byKey = new Map(holders.map((h) => [h.key, h]));
    for (const l of group) {
      const holder = byKey.get(l.job.idempotencyKey ?? '');
      if (holder && Number(holder.created_at) > l.job.receivedAt.getTime() - IDEMPOTENCY_WINDOW_MS) {
        outcomes[l.index] = await replayOf(db, orgId, holder.event_id);
      }
    }
  }
  return live.filter((l) => outcomes[l.index] === undefined);
}

/**
 * Counts the batch per organisation and month for plans with a hard cap, before the events are
 * written: the exact count decides which get in; calls past the cap get quota_exceeded. (Every
 * event, capped or not, is counted into usage_monthly by the folding stage.)
 */
async function applyCappedQuota(db: DbOrTrx, live: Live[], outcomes: JobOutcome[]): Promise<Live[]> {
  const capped = live.filter((l) => planOf(l.job).hard_cap);
  const groups = [...groupBy(capped, (l) => `${l.job.ctx.org.id} ${usageMonth(l.job.receivedAt)}`)].sort(
    ([a], [b]) => (a < b ? -1 : 1),
  );
  for (const [, group] of groups) {
    const first = group[0];
    if (!first) continue;
    const { org } = first.job.ctx;
    const plan = planOf(first.job);
    const admitted = await admitCapped(
      db,
      org.id,
      usageMonth(first.job.receivedAt),
      group.length,
      plan.included_events_per_month,
    );
    for (const l of group.slice(admitted)) {
      outcomes[l.index] = {
        error: new AppError(
          'quota_exceeded',
          `The ${org.plan} plan's ${plan.included_events_per_month} events this month are used up; upgrade to track more.`,
        ),
      };
      if (l.job.idempotencyKey !== null) {
        await db
          .deleteFrom('idempotency_keys')
          .where('org_id', '=', org.id)
          .where('key', '=', l.job.idempotencyKey)
          .where('event_id', '=', l.job.eventId)
          .execute();
      }
    }
  }
  return live.filter((l) => outcomes[l.index] === undefined);
}

function eventRow(job: TrackJob, baseline: ResolvedBaseline | undefined): EventRow {
  if (!baseline) throw new Error('baseline not resolved');
  const { input, ctx } = job;
  const cost = agentCostOf(input, ctx.org, job.occurredAt);
  const savings = computeSavings({
    baselineMinutes: baseline.minutes,
    creditMicros: baseline.creditMicros,
    hourlyRateMicros: baseline.hourlyRateMicros,
    agentCostMicros: cost.micros,
  });
  return {
    id: job.eventId,
    org_id: ctx.org.id,
    agent_id: input.agent_id,
    task_type: input.task_type,
    outcome: input.outcome,
    client_id: clientIdOf(input.metadata),
    resolved_baseline_minutes: baseline.minutes,
    resolved_baseline_source: baseline.source,
    resolved_hourly_rate_micros: baseline.hourlyRateMicros,
    currency: ctx.org.currency,
    agent_duration_seconds: input.agent_duration_seconds ?? null,
    hours_saved_micros: savings.hoursSavedMicros,
    cost_saved_micros: savings.costSavedMicros,
    agent_cost_micros: cost.micros,
    resolved_cost_source: cost.source,
    model: input.model ?? null,
    tokens_in: input.tokens_in ?? null,
    tokens_out: input.tokens_out ?? null,
    metadata: job.metadataJson,
    audit_sample: input.audit_sample === undefined ? null : JSON.stringify(input.audit_sample),
    // What priced the agent cost (when it was computed) and the assumption versions that priced
    // the savings.
    pricing:
      cost.pricing === null
        ? versionsPricing(baseline)
        : JSON.stringify({ ...cost.pricing, assumptions: baseline.versions }),
    occurred_at: job.occurredAt.getTime(),
    received_at: job.receivedAt.getTime(),
    idempotency_key: job.idempotencyKey,
    // Given by writeEvents (SQLite) or the database (PostgreSQL).
    ingest_seq: null,
  };
}
