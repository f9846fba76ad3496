import type { OrgCtx } from '../context.js';
import { AppError, validationError } from '../errors.js';
import { newId } from '../ids.js';
import { toMicros } from '../money.js';
import { countEvent, usageMonth } from '../billing/usage-counter.js';
import type { Outcome } from '../orgs/organizations.js';
import { priceRun } from '../pricing/price-run.js';
import type { EventRow } from '../storage/schema.js';
import { resolveBaseline } from './baseline.js';
import { eventView, type StoredEvent } from './events.js';
import { claimIdempotencyKey } from './idempotency.js';
import { computeSavings } from './savings.js';
import { onEventCreated } from './side-effects.js';

export interface TrackInput {
  agent_id: string;
  task_type: string;
  outcome: Outcome;
  agent_duration_seconds?: number;
  agent_cost?: number;
  model?: string;
  tokens_in?: number;
  tokens_out?: number;
  human_baseline_minutes?: number;
  metadata?: Record<string, unknown>;
  audit_sample?: {
    input_excerpt?: string;
    output_excerpt?: string;
    model?: string;
    tokens_in?: number;
    tokens_out?: number;
  };
  occurred_at?: string;
}

export interface TrackResult {
  event: StoredEvent;
  replayed: boolean;
}

export const METADATA_MAX_BYTES = 16 * 1024;
const DAY_MS = 24 * 60 * 60 * 1000;

/** Checks that need more than the JSON schema; `path` prefixes the field paths (batch items). */
export function checkTrackInput(input: TrackInput, path = '/body'): { occurredAt: Date | null } {
  if (
    input.metadata !== undefined &&
    Buffer.byteLength(JSON.stringify(input.metadata)) > METADATA_MAX_BYTES
  ) {
    throw validationError(`${path}/metadata`, `must be at most ${METADATA_MAX_BYTES} bytes serialized`);
  }
  if (input.occurred_at === undefined) return { occurredAt: null };
  const occurredAt = new Date(input.occurred_at);
  if (Number.isNaN(occurredAt.getTime())) {
    throw validationError(`${path}/occurred_at`, 'must be an RFC 3339 timestamp with a time zone');
  }
  return { occurredAt };
}

function checkOccurredAtWindow(occurredAt: Date, now: Date, path: string): void {
  const t = occurredAt.getTime();
  if (t < now.getTime() - 90 * DAY_MS || t > now.getTime() + DAY_MS) {
    throw new AppError(
      'occurred_at_out_of_range',
      'occurred_at must be at most 90 days in the past and at most 24 hours in the future.',
      [{ path: `${path}/occurred_at`, message: 'is out of range' }],
    );
  }
}

function clientIdOf(metadata: Record<string, unknown> | undefined): string | null {
  const value = metadata?.client_id;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return null;
}

/** Agent cost: given → provided; else model and tokens (top level, else audit_sample) → computed. */
function agentCostOf(input: TrackInput, org: OrgCtx['org'], occurredAt: Date) {
  if (input.agent_cost !== undefined) {
    return { micros: toMicros(input.agent_cost), source: 'provided', pricing: null } as const;
  }
  const model = input.model ?? input.audit_sample?.model;
  const tokensIn = input.tokens_in ?? input.audit_sample?.tokens_in;
  const tokensOut = input.tokens_out ?? input.audit_sample?.tokens_out;
  if (model !== undefined && tokensIn !== undefined && tokensOut !== undefined) {
    const priced = priceRun({
      model,
      tokensIn,
      tokensOut,
      at: occurredAt,
      currency: org.currency,
      usdExchangeRate: org.usdExchangeRate,
    });
    if (priced)
      return { micros: priced.agentCostMicros, source: 'computed', pricing: priced.pricing } as const;
  }
  return { micros: null, source: 'none', pricing: null } as const;
}

/**
 * Records one finished agent task. Order (DESIGN §2): idempotent replay, then business rules
 * (task type, occurred_at), then quota; the event, usage counter and side effects commit
 * together or not at all.
 */
export async function trackEvent({
  ctx,
  input,
  idempotencyKey,
  path = '/body',
}: {
  ctx: OrgCtx;
  input: TrackInput;
  idempotencyKey: string | null;
  path?: string;
}): Promise<TrackResult> {
  const { occurredAt: given } = checkTrackInput(input, path);
  const now = ctx.clock.now();
  const occurredAt = given ?? now;
  const eventId = newId('evt', now);
  const { org } = ctx;

  return ctx.db.transaction().execute(async (trx) => {
    const tctx: OrgCtx = { ...ctx, db: trx };
    if (idempotencyKey !== null) {
      const holder = await claimIdempotencyKey(trx, org.id, idempotencyKey, eventId, now.getTime());
      if (holder !== null) {
        const original = await trx
          .selectFrom('events')
          .selectAll()
          .where('id', '=', holder)
          .executeTakeFirstOrThrow();
        return { event: eventView(original), replayed: true };
      }
    }

    const baseline = await resolveBaseline({
      ctx: tctx,
      taskType: input.task_type,
      requestMinutes: input.human_baseline_minutes ?? null,
    });
    checkOccurredAtWindow(occurredAt, now, path);

    const plan = ctx.config.plans[org.plan];
    const cap = plan.hard_cap ? plan.included_events_per_month : null;
    if (!(await countEvent(trx, org.id, usageMonth(now), cap))) {
      throw new AppError(
        'quota_exceeded',
        `The ${org.plan} plan's ${plan.included_events_per_month} events this month are used up; upgrade to track more.`,
      );
    }

    const cost = agentCostOf(input, org, occurredAt);
    const savings = computeSavings({
      baselineMinutes: baseline.minutes,
      creditMicros: org.outcomeCreditMicros[input.outcome],
      hourlyRateMicros: baseline.hourlyRateMicros,
      agentCostMicros: cost.micros,
    });
    const row: EventRow = {
      id: eventId,
      org_id: org.id,
      agent_id: input.agent_id,
      task_type: input.task_type,
      outcome: input.outcome,
      client_id: clientIdOf(input.metadata),
      resolved_baseline_minutes: baseline.minutes,
      resolved_baseline_source: baseline.source,
      resolved_hourly_rate_micros: baseline.hourlyRateMicros,
      currency: org.currency,
      agent_duration_seconds: input.agent_duration_seconds ?? null,
      hours_saved_micros: savings.hoursSavedMicros,
      cost_saved_micros: savings.costSavedMicros,
      agent_cost_micros: cost.micros,
      resolved_cost_source: cost.source,
      model: input.model ?? null,
      tokens_in: input.tokens_in ?? null,
      tokens_out: input.tokens_out ?? null,
      metadata: input.metadata === undefined ? null : JSON.stringify(input.metadata),
      audit_sample: input.audit_sample === undefined ? null : JSON.stringify(input.audit_sample),
      pricing: cost.pricing === null ? null : JSON.stringify(cost.pricing),
      occurred_at: occurredAt.getTime(),
      received_at: now.getTime(),
      idempotency_key: idempotencyKey,
    };
    await trx.insertInto('events').values(row).execute();
    const agent = await trx
      .insertInto('agents')
      .values({
        org_id: org.id,
        agent_id: row.agent_id,
        first_event_id: row.id,
        first_seen_at: row.received_at,
      })
      .onConflict((oc) => oc.columns(['org_id', 'agent_id']).doNothing())
      .executeTakeFirst();
    const event = eventView(row);
    await onEventCreated({
      ctx: tctx,
      row,
      event,
      isNewAgent: Number(agent.numInsertedOrUpdatedRows ?? 0) > 0,
    });
    return { event, replayed: false };
  });
}
