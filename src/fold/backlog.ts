import { sql } from 'kysely';
import type { ServiceCtx } from '../context.js';
import { FOLD_PART_IDS } from '../reports/rollups.js';
import type { DbOrTrx } from '../storage/db.js';
import { lowestWatermark } from '../storage/snapshot.js';
import { foldOnce, type FoldOptions, type FoldResult } from './pass.js';
import { CLOSE_DAYS } from './plan.js';
import { afterMark, seqMin } from './seq.js';
import { closingDays } from './tail.js';

/**
 * From this many events in the tail on, a PostgreSQL stage folds its parts at once, each in its
 * own transaction on a connection of its own (foldBacklog). A stage keeping up with live traffic
 * has a tail of a few thousand events at most, which one pass of every part folds for less: its
 * events read once, one transaction instead of two (docs/benchmarks.md).
 */
export const PARALLEL_FROM = 10_000;

/**
 * The stage's pass (FoldStage): on PostgreSQL with a backlog (`parallelFrom` events or more not
 * folded into some part), a pass of each part at once, each from its own watermark, so that a
 * backlog folds on two cores (docs/benchmarks.md); likewise with more than a step of weeks and
 * days to close (after a backlog that deferred them, plan.ts planPart). Otherwise (SQLite, with
 * one writer per file; a short tail; a test's pass with options of its own) one pass of every
 * part. Each part's pass is atomic on its own: when one fails, the other's stays, and the next
 * pass goes on from each part's watermark.
 */
export async function foldBacklog(
  ctx: ServiceCtx,
  pass: FoldOptions & { limit: number },
  parallelFrom = PARALLEL_FROM,
): Promise<FoldResult> {
  const plain = pass.parts !== undefined || pass.beforeCommit !== undefined;
  const backlog = async () =>
    (await tailReaches(ctx.db, parallelFrom)) ||
    (await closingDays(ctx.db, ctx.clock.now().getTime())) > CLOSE_DAYS;
  if (ctx.engine !== 'postgres' || plain || !(await backlog())) return foldOnce(ctx, pass);
  const settled = await Promise.allSettled(
    FOLD_PART_IDS.map((part) => foldOnce(ctx, { ...pass, parts: [part] })),
  );
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  const results = settled.map((s) => (s as PromiseFulfilledResult<FoldResult>).value);
  return {
    folded: Math.max(...results.map((r) => r.folded)),
    more: results.some((r) => r.more),
    watermark: results.map((r) => r.watermark).reduce(seqMin),
  };
}

/** Whether `events` or more are not folded into some part yet (a walk of at most that many). */
async function tailReaches(db: DbOrTrx, events: number): Promise<boolean> {
  const watermark = await lowestWatermark(db);
  const { rows } = await sql<{ one: unknown }>`
    SELECT 1 AS one FROM events WHERE ${afterMark('postgres', watermark)}
    ORDER BY ingest_seq OFFSET ${Math.max(0, events - 1)} LIMIT 1`.execute(db);
  return rows.length > 0;
}
