import { sql } from 'kysely';
import type { ServiceCtx } from '../context.js';
import { addUsage } from '../billing/usage-counter.js';
import {
  FOLD_PART_IDS,
  applyRollupDeltas,
  coarseThroughAt,
  deltasExact,
  monthsThroughAt,
  partGrains,
  rollupDeltas,
  type FoldPartId,
} from '../reports/rollups.js';
import { takeSqliteWriteLock, type DbOrTrx, type Engine } from '../storage/db.js';
import type { EventRow } from '../storage/schema.js';
import { writeMessages } from './messages.js';
import { DEFER_FROM, planPart, type PartPlan } from './plan.js';
import { foldRollups, seqRange } from './rollups.js';
import { afterMark, seqEqual, seqMin, type Seq } from './seq.js';
import { foldUsage, usageIncrements } from './usage.js';

/**
 * Events folded per transaction at most (a PostgreSQL transaction's events are never split),
 * unless TALLY_FOLD_BATCH says otherwise (config.foldBatch). Larger passes fold a backlog faster:
 * each writes the rollup rows its events share once, and each rollup page it touches once. A
 * SQLite pass holds the main file's write lock throughout, so the main thread's other writes
 * (webhook deliveries, settings, keys) queue behind it and another process's wait up to
 * TALLY_SQLITE_BUSY_TIMEOUT_MS: its cap is the largest that keeps those waits near the busy
 * timeout (tracking writes the events file and waits for no pass, storage/events-file.ts). On
 * PostgreSQL every other write goes on while a pass folds, so the cap is larger. The figures are
 * in docs/benchmarks.md. A pass that outlasts the statement timeout makes the next ones smaller
 * (FoldStage.foldNow).
 */
export const FOLD_BATCH = { sqlite: 50_000, postgres: 200_000 } as const;

export interface FoldResult {
  /** Events folded by this pass (by the part that folded most, when it folded several). */
  folded: number;
  /**
   * Whether events committed before the pass are left for the next one (the batch was full), or
   * weeks and days to close (plan.ts planPart closes a step per pass).
   */
  more: boolean;
  /** The lowest watermark of the parts folded, after the pass. */
  watermark: Seq;
}

export interface FoldOptions {
  /** At most this many events (default FOLD_BATCH). */
  limit?: number;
  /** Tests: runs in the pass's transaction after its writes, before the watermark moves. */
  beforeCommit?: (trx: DbOrTrx) => Promise<void> | void;
  /** From this many events on, the rollups and usage are folded in SQL (default SQL_FROM). */
  sqlFrom?: number;
  /** Events read at a time to write webhook messages in a pass folded in SQL (MESSAGE_CHUNK). */
  messageChunk?: number;
  /**
   * The parts this pass folds, each from its own watermark, all in its one transaction (default:
   * every part, reports/rollups.ts FOLD_PARTS). On PostgreSQL the stage folds a backlog in a pass per
   * part, side by side (foldBacklog).
   */
  parts?: readonly FoldPartId[];
  /**
   * Whether the pass may leave its events' week and month rows to their day rows until its
   * backlog is folded (planPart): 'auto' (the default) from `deferFrom` events on, where the
   * rebuild reads no more than it saves; true whenever its events reach into closed weeks or days
   * (tests); false never.
   */
  defer?: boolean | 'auto';
  /** With `defer` 'auto': from this many events on (default DEFER_FROM). */
  deferFrom?: number;
}

/**
 * Passes of fewer events build their rollup rows in the service (rollupDeltas, one upsert per
 * row); larger ones fold in the database, a statement per grain and bucket (rollups.ts
 * foldRollups), which costs more per event on a few events and far less on many. PostgreSQL
 * moves later, since a small pass built in the service saves round trips (docs/benchmarks.md).
 */
export const SQL_FROM = { sqlite: 50, postgres: 500 } as const;

/**
 * One pass: folds the events committed after the watermark of each of its parts (at most `limit`
 * each, whole PostgreSQL transactions) and advances those watermarks, in one transaction. Waits
 * while another process folds one of its parts. Exactly once: the events, their derived rows
 * and the watermark of each part commit together.
 */
export async function foldOnce(ctx: ServiceCtx, options: FoldOptions = {}): Promise<FoldResult> {
  const limit = Math.max(1, options.limit ?? FOLD_BATCH[ctx.engine]);
  const parts = [...new Set(options.parts ?? FOLD_PART_IDS)].sort((a, b) => a - b);
  // Most passes of a polling stage find no tail and no bucket to close: they end on these
  // reads, without a transaction.
  const now = ctx.clock.now().getTime();
  const idle = await idleState(ctx.db, ctx.engine, now, parts);
  if (idle !== null) return { folded: 0, more: false, watermark: idle };
  return ctx.db.transaction().execute(async (trx) => {
    // SQLite: take the write lock first, so no other process writes between the reads below
    // and this pass's writes.
    if (ctx.engine === 'sqlite') await takeSqliteWriteLock(trx);
    const plans: PartPlan[] = [];
    for (const part of parts)
      plans.push(
        await planPart(trx, ctx, part, now, limit, options.defer ?? 'auto', options.deferFrom ?? DEFER_FROM),
      );
    // Parts at the same point (on SQLite always: it folds every part in each pass) fold together,
    // as one part of all their grains: their events read once, each statement once.
    const groups = new Map<string, PartPlan[]>();
    for (const plan of plans) {
      if (plan.folded === 0 && plan.adjusted === 0) continue;
      const key = `${plan.from} ${plan.to} ${plan.coarseThrough} ${plan.monthsThrough} ${plan.adjustFrom} ${plan.adjustTo}`;
      groups.set(key, [...(groups.get(key) ?? []), plan]);
    }
    for (const group of groups.values()) await foldPlans(trx, ctx, group, options);
    await options.beforeCommit?.(trx);
    for (const plan of plans) {
      if (seqEqual(plan.from, plan.to) && seqEqual(plan.adjustFrom, plan.adjustTo)) continue;
      await trx
        .updateTable('fold_state')
        .set({ watermark: plan.to, adjust_watermark: plan.adjustTo, folded_at: now })
        .where('id', '=', plan.part)
        .execute();
    }
    return {
      folded: Math.max(0, ...plans.map((p) => p.folded + p.adjusted)),
      more: plans.some((p) => p.more),
      watermark: plans.map((p) => p.to).reduce(seqMin),
    };
  });
}

/**
 * Folds the events of parts planned at the same point (plan.ts planPart) into the rollups of all their
 * grains; with part 1 among them, into usage and webhook messages too (reports/rollups.ts FOLD_PARTS).
 */
async function foldPlans(
  trx: DbOrTrx,
  ctx: ServiceCtx,
  plans: readonly PartPlan[],
  options: FoldOptions,
): Promise<void> {
  const { from, to, folded, firstDay, coarseThrough, monthsThrough, adjustFrom, adjustTo, adjusted } =
    plans[0] as PartPlan;
  const grains = plans.flatMap((plan) => partGrains(plan.part));
  const derived = plans.some((plan) => plan.part === 1);
  // The adjustments ledger's entries (src/ledger/) add their deltas to the same rollup rows, in
  // SQL: they are few beside the events, and a pass without any runs none of this.
  if (adjusted > 0)
    await foldRollups(
      trx,
      ctx.engine,
      adjustFrom,
      adjustTo,
      coarseThrough,
      monthsThrough,
      grains,
      -Infinity,
      'adjustments',
    );
  if (folded === 0) return;
  if (folded < (options.sqlFrom ?? SQL_FROM[ctx.engine])) {
    // A few events (the usual pass of a stage keeping up): their rows are read and their
    // rollup rows built here, cheaper than a statement per grain.
    const { rows } = await sql<EventRow>`
      SELECT * FROM events WHERE ${seqRange(ctx.engine, from, to)} ORDER BY ingest_seq, id`.execute(trx);
    // Their sums in the service only while JavaScript numbers carry them exactly.
    if (deltasExact(rows))
      await applyRollupDeltas(trx, rollupDeltas(rows, 0, coarseThrough, monthsThrough, grains));
    else await foldRollups(trx, ctx.engine, from, to, coarseThrough, monthsThrough, grains);
    if (derived) {
      await addUsage(trx, usageIncrements(rows)).execute();
      await writeMessages(trx, ctx, from, to, rows);
    }
    return;
  }
  await foldRollups(trx, ctx.engine, from, to, coarseThrough, monthsThrough, grains, firstDay);
  if (derived) {
    await foldUsage(trx, ctx.engine, from, to);
    await writeMessages(trx, ctx, from, to, undefined, options.messageChunk);
  }
}

/**
 * The lowest watermark of `parts` when a pass of them has nothing to do at `now`: no event after
 * any of their watermarks and no week or day to close; null when it has.
 */
async function idleState(
  db: DbOrTrx,
  engine: Engine,
  now: number,
  parts: readonly FoldPartId[],
): Promise<Seq | null> {
  const states = await db
    .selectFrom('fold_state')
    .select(['watermark', 'coarse_through', 'months_through', 'adjust_watermark'])
    .where('id', 'in', parts)
    .execute();
  if (states.length < parts.length) return null;
  const closing = (state: (typeof states)[number]) =>
    coarseThroughAt(now) > Number(state.coarse_through) ||
    monthsThroughAt(now) > Number(state.months_through);
  if (states.some(closing)) return null;
  const watermark = states.map((state) => state.watermark).reduce(seqMin);
  const { rows } = await sql<{ one: unknown }>`
    SELECT 1 AS one FROM events WHERE ${afterMark(engine, watermark)} LIMIT 1`.execute(db);
  if (rows.length > 0) return null;
  const adjusted = states.map((state) => state.adjust_watermark).reduce(seqMin);
  const { rows: adjustments } = await sql<{ one: unknown }>`
    SELECT 1 AS one FROM adjustments WHERE ${afterMark(engine, adjusted)} LIMIT 1`.execute(db);
  return adjustments.length > 0 ? null : watermark;
}
