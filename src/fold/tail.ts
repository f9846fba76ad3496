import { sql } from 'kysely';
import { coarseThroughAt, monthsThroughAt } from '../reports/rollups.js';
import type { DbOrTrx, Engine } from '../storage/db.js';
import { inSnapshot } from '../storage/snapshot.js';
import { afterMark, seqMin, type Seq } from './seq.js';

/** The first event of the tail in commit order (the next the stage folds): its receipt time. */
function headReceivedAt(db: DbOrTrx, engine: Engine, watermark: Seq) {
  return sql<{ at: unknown }>`
    SELECT received_at AS at FROM events WHERE ${afterMark(engine, watermark)} ORDER BY ingest_seq LIMIT 1`.execute(
    db,
  );
}

/**
 * The first adjustment of the adjustments' tail in commit order (src/ledger/; the next the stage
 * folds): when it was recorded. Its own statement, through its own index (adjustments_seq).
 */
function headRecordedAt(db: DbOrTrx, engine: Engine, watermark: Seq) {
  return sql<{ at: unknown }>`
    SELECT created_at AS at FROM adjustments WHERE ${afterMark(engine, watermark)} ORDER BY ingest_seq LIMIT 1`.execute(
    db,
  );
}

/**
 * The lowest watermarks of all fold parts, of the events and of the adjustments: what is at or
 * after them is not folded into every part yet (the tails /metrics shows). A row per part: few.
 */
async function lowestWatermarks(db: DbOrTrx): Promise<{ watermark: Seq; adjustWatermark: Seq }> {
  const states = await db.selectFrom('fold_state').select(['watermark', 'adjust_watermark']).execute();
  if (states.length === 0) return { watermark: 0, adjustWatermark: 0 };
  return {
    watermark: states.map((s) => s.watermark).reduce(seqMin),
    adjustWatermark: states.map((s) => s.adjust_watermark).reduce(seqMin),
  };
}

/** What readTail reads of the tails; a count is null when not counted (`count` false). */
export interface Tail {
  /** Events after the lowest watermark. */
  events: number | null;
  /** When the event the stage folds next was received; null when no event waits. */
  headReceivedAt: number | null;
  watermark: Seq;
  /** Adjustments (src/ledger/) after the lowest adjustments' watermark. */
  adjustments: number | null;
  /** When the adjustment the stage folds next was recorded; null when none waits. */
  headRecordedAt: number | null;
  adjustWatermark: Seq;
}

const timeOf = (value: unknown): number | null =>
  value === undefined || value === null ? null : Number(value);

/**
 * The tails (events and adjustments after the lowest watermarks of the parts: not folded into
 * every part yet), in one snapshot: when the event and the adjustment the stage folds next were
 * received or recorded (one index step each; null when that tail is empty), and, with `count`,
 * how many each tail holds (a walk of the whole tail, which takes a backlog's database a while;
 * null without `count`, 0 for an empty tail).
 */
export function readTail(db: DbOrTrx, engine: Engine, count: boolean): Promise<Tail> {
  return inSnapshot(db, engine, async (trx) => {
    const { watermark, adjustWatermark } = await lowestWatermarks(trx);
    const headReceived = timeOf((await headReceivedAt(trx, engine, watermark)).rows[0]?.at);
    const headRecorded = timeOf((await headRecordedAt(trx, engine, adjustWatermark)).rows[0]?.at);
    const length = async (table: 'events' | 'adjustments', mark: Seq, head: number | null) => {
      if (head === null) return 0;
      if (!count) return null;
      const { rows } = await sql<{ n: unknown }>`
        SELECT COUNT(*) AS n FROM ${sql.table(table)} WHERE ${afterMark(engine, mark)}`.execute(trx);
      return Number(rows[0]?.n ?? 0);
    };
    return {
      events: await length('events', watermark, headReceived),
      headReceivedAt: headReceived,
      watermark,
      adjustments: await length('adjustments', adjustWatermark, headRecorded),
      headRecordedAt: headRecorded,
      adjustWatermark,
    };
  });
}

/** When the oldest of what waits to be folded (the events' head or the adjustments') arrived. */
export function tailHeadAt(tail: Pick<Tail, 'headReceivedAt' | 'headRecordedAt'>): number | null {
  const { headReceivedAt: events, headRecordedAt: adjustments } = tail;
  if (events === null) return adjustments;
  return adjustments === null ? events : Math.min(events, adjustments);
}

/**
 * The fold lag at `now` (`tally_fold_lag_seconds`, in milliseconds: the age of the oldest head of
 * the two tails) and where the stage stands (both lowest watermarks, as one text that changes
 * whenever either moves), without counting the tails: four index steps, cheap enough to read
 * several times a second (ingest-gate.ts).
 */
export async function foldLag(
  db: DbOrTrx,
  engine: Engine,
  now: number,
): Promise<{ lagMs: number; watermark: string }> {
  const tail = await readTail(db, engine, false);
  return {
    lagMs: lagMsAt(tailHeadAt(tail), now),
    watermark: `${String(tail.watermark)} ${String(tail.adjustWatermark)}`,
  };
}

/** How long ago, at `now`, the head of the tail arrived (tailHeadAt); 0 when the tail is empty. */
export function lagMsAt(headReceivedAt: number | null, now: number): number {
  return headReceivedAt === null ? 0 : Math.max(0, now - headReceivedAt);
}

/**
 * The days whose week or month rows the stage has still to build from their day rows, at `now`:
 * a day or so when a week or day has just ended, more after a backlog that deferred them
 * (plan.ts planPart), 0 when every part is closed up to now.
 */
export async function closingDays(db: DbOrTrx, now: number): Promise<number> {
  const states = await db.selectFrom('fold_state').select(['coarse_through', 'months_through']).execute();
  return Math.max(
    0,
    ...states.map((state) =>
      Math.max(
        coarseThroughAt(now) - Number(state.coarse_through),
        monthsThroughAt(now) - Number(state.months_through),
      ),
    ),
  );
}

/** The tails' lengths, counted (readTail). */
export async function tailState(
  db: DbOrTrx,
  engine: Engine,
): Promise<{ events: number; adjustments: number }> {
  const tail = await readTail(db, engine, true);
  return { events: tail.events ?? 0, adjustments: tail.adjustments ?? 0 };
}
