import type { OrgCtx, ServiceCtx } from '../context.js';
import { getOrganization } from '../orgs/organizations.js';
import { draftRun, type RunDraft } from './draft.js';
import {
  addToCounters,
  expiredTraces,
  forgetDoneTraces,
  heldSpansOf,
  isTraceDone,
  releaseSpans,
} from './held.js';
import { loadRules } from './rule-store.js';
import { splitTrace } from './runs.js';
import { lockTraces, traceQueueOf, withRetries } from './trace-locks.js';
import { trackRunsIn } from './track-runs.js';
import { forgetUnresolvedBefore, recordUnresolved } from './unresolved.js';
import { inTransaction, trackDb, type DbOrTrx } from '../storage/db.js';
import { announceCommitted } from '../tracking/track.js';

/** Names of the service-wide totals in otlp_counters (metrics.ts shows them). */
export const COUNTERS = {
  droppedTraces: 'dropped_traces',
  droppedSpans: 'dropped_spans',
  lateSpans: 'late_spans',
} as const;

/** Traces settled per pass (a pass that finds more goes again at once). */
const TRACES_PER_PASS = 200;
const DAY_MS = 24 * 60 * 60 * 1000;

export interface SweepResult {
  traces: number;
  tracked: number;
  droppedTraces: number;
  droppedSpans: number;
  lateSpans: number;
}

/**
 * Settles the traces whose spans have been held for longer than the bound
 * (TALLY_OTLP_HOLD_SECONDS): a run whose task span came is tracked with whatever of it came (its
 * local root never did: a parent filtered out before export, or a process that died); spans of
 * no run are dropped, or counted late when their trace's runs were tracked already. Each trace is
 * settled in one transaction that holds its lock (trace-locks.ts): its runs, its held rows and
 * its counters commit together, so a crash or two sweeping processes count every span once.
 */
export async function sweepHeldSpans(ctx: ServiceCtx): Promise<SweepResult> {
  const now = ctx.clock.now().getTime();
  const holdMs = ctx.config.otlpHoldSeconds * 1000;
  const result: SweepResult = { traces: 0, tracked: 0, droppedTraces: 0, droppedSpans: 0, lateSpans: 0 };
  const expired = await expiredTraces(ctx.db, now - holdMs, TRACES_PER_PASS);
  const orgCtxs = new Map<string, OrgCtx>();
  for (const { orgId, traceId } of expired) {
    let orgCtx = orgCtxs.get(orgId);
    if (!orgCtx) {
      orgCtx = { ...ctx, org: await getOrganization({ ctx, id: orgId }), actorKeyId: null };
      orgCtxs.set(orgId, orgCtx);
    }
    const release = await traceQueueOf(ctx.db).acquire([`${orgId}:${traceId}`]);
    let swept: Swept | null;
    try {
      swept = await withRetries(() =>
        inTransaction(trackDb(ctx), async (trx) => {
          await lockTraces(trx, ctx.engine, orgId, [traceId]);
          return sweepTrace(trx, orgCtx, traceId, now);
        }),
      );
    } finally {
      release();
    }
    // Another process settled this trace meanwhile: it counted it.
    if (swept === null) continue;
    if (ctx.engine !== 'postgres') await recordUnresolved(ctx.db, orgId, new Date(now), swept.unresolved);
    if (swept.tracked > 0) await announceCommitted(orgCtx);
    result.tracked += swept.tracked;
    result.droppedTraces += swept.counts[COUNTERS.droppedTraces] ?? 0;
    result.droppedSpans += swept.counts[COUNTERS.droppedSpans] ?? 0;
    result.lateSpans += swept.counts[COUNTERS.lateSpans] ?? 0;
    result.traces++;
  }
  // Done marks serve spans held after their run, which wait the bound at most.
  await forgetDoneTraces(trackDb(ctx), now - 2 * holdMs);
  // Runs past the occurred_at window (90 days) can never be tracked.
  await forgetUnresolvedBefore(ctx.db, now - 90 * DAY_MS);
  return result;
}

interface Swept {
  tracked: number;
  counts: Record<string, number>;
  unresolved: { draft: RunDraft; reason: string }[];
}

/**
 * One expired trace, in the transaction that holds its lock: its runs tracked, its held spans
 * released and counted. Null when nothing of it is held any more.
 */
async function sweepTrace(trx: DbOrTrx, ctx: OrgCtx, traceId: string, now: number): Promise<Swept | null> {
  const orgId = ctx.org.id;
  const spans = (await heldSpansOf(trx, orgId, [traceId])).get(traceId) ?? [];
  if (spans.length === 0) return null;
  const split = splitTrace(spans, true);
  const drafts: RunDraft[] = split.runs.map((run) => draftRun(run, ctx.org));
  const counts: Record<string, number> = {};
  const unresolved: { draft: RunDraft; reason: string }[] = [];
  let tracked = 0;
  if (drafts.length > 0) {
    const outcomes = await trackRunsIn(trx, { ctx, drafts, rules: await loadRules(trx, orgId) });
    drafts.forEach((draft, i) => {
      const outcome = outcomes[i];
      if (outcome?.kind === 'tracked') tracked += outcome.replayed ? 0 : 1;
      else if (outcome?.kind === 'unresolved') unresolved.push({ draft, reason: outcome.reason });
      // No exporter waits for this answer: a run tracking refuses now is dropped.
      else if (outcome?.kind === 'rejected')
        counts[COUNTERS.droppedSpans] = (counts[COUNTERS.droppedSpans] ?? 0) + draft.spanCount;
    });
    // Spans of no run beside runs that were tracked: dropped too.
    if (split.outside.length > 0)
      counts[COUNTERS.droppedSpans] = (counts[COUNTERS.droppedSpans] ?? 0) + split.outside.length;
  } else {
    const late = await isTraceDone(trx, orgId, traceId);
    counts[late ? COUNTERS.lateSpans : COUNTERS.droppedSpans] = spans.length;
    if (!late) counts[COUNTERS.droppedTraces] = 1;
  }
  await releaseSpans(trx, orgId, spans);
  await addToCounters(trx, orgId, counts);
  if (ctx.engine === 'postgres') await recordUnresolved(trx, orgId, new Date(now), unresolved);
  return { tracked, counts, unresolved };
}

export interface SweeperOptions {
  /** How often to look for expired traces (default: a tenth of the bound, 1 to 30 seconds). */
  everyMs?: number;
  onError?: (error: unknown) => void;
}

/**
 * The loop of the worker role (tally serve unless TALLY_ROLE=api, tally worker): sweeps held
 * spans now and then. Several processes may sweep one database (sweepHeldSpans counts once).
 */
export class HeldSpanSweeper {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;
  private readonly everyMs: number;

  constructor(
    private readonly ctx: ServiceCtx,
    private readonly options: SweeperOptions = {},
  ) {
    this.everyMs =
      options.everyMs ?? Math.min(30_000, Math.max(1_000, (ctx.config.otlpHoldSeconds * 1000) / 10));
  }

  start(): void {
    this.schedule(0);
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.pass().finally(() => {
        this.running = null;
      });
    }, delayMs);
    this.timer.unref();
  }

  private async pass(): Promise<void> {
    let more = false;
    try {
      const swept = await sweepHeldSpans(this.ctx);
      more = swept.traces >= TRACES_PER_PASS;
    } catch (error) {
      this.options.onError?.(error);
    }
    this.schedule(more ? 0 : this.everyMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }
}
