import { sql } from 'kysely';
import { coarseThroughAt, monthsThroughAt } from '../reports/rollups.js';
import type { DbOrTrx, Engine } from '../storage/db.js';
import { inSnapshot, lowestWatermark } from '../storage/snapshot.js';
import { afterMark, type Seq } from './seq.js';

/** The first event of the tail in commit order (the next the stage folds): its receipt time. */
function headReceivedAt(db: DbOrTrx, engine: Engine, watermark: Seq) {
  return sql<{ received_at: unknown }>`
    SELECT received_at FROM events WHERE ${afterMark(engine, watermark)} ORDER BY ingest_seq LIMIT 1`.execute(
    db,
  );
}

/**
 * The tail (events after the lowest watermark of the parts: not folded into every part yet), in
 * one snapshot: when the event the stage folds next was received (one index step; null when the
 * tail is empty), and, with `count`, how many events it holds (a walk of the whole tail, which
 * takes a backlog's database a while; null without `count`).
 */
export function readTail(
  db: DbOrTrx,
  engine: Engine,
  count: boolean,
): Promise<{ events: number | null; headReceivedAt: number | null; watermark: Seq }> {
  return inSnapshot(db, engine, async (trx) => {
    const watermark = await lowestWatermark(trx);
    const head = (await headReceivedAt(trx, engine, watermark)).rows[0]?.received_at;
    if (head === undefined || head === null) return { events: 0, headReceivedAt: null, watermark };
    if (!count) return { events: null, headReceivedAt: Number(head), watermark };
    const { rows } = await sql<{ n: unknown }>`
      SELECT COUNT(*) AS n FROM events WHERE ${afterMark(engine, watermark)}`.execute(trx);
    return { events: Number(rows[0]?.n ?? 0), headReceivedAt: Number(head), watermark };
  });
}

/**
 * The fold lag at `now` (`tally_fold_lag_seconds`, in milliseconds) and the lowest watermark,
 * without counting the tail: two index steps, cheap enough to read several times a second
 * (ingest-gate.ts).
 */
export async function foldLag(
  db: DbOrTrx,
  engine: Engine,
  now: number,
): Promise<{ lagMs: number; watermark: string }> {
  const tail = await readTail(db, engine, false);
  return { lagMs: lagMsAt(tail.headReceivedAt, now), watermark: String(tail.watermark) };
}

/** How long ago, at `now`, the next event to fold was received; 0 when the tail is empty. */
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

/** The tail's length, counted (readTail). */
export async function tailState(db: DbOrTrx, engine: Engine): Promise<{ events: number }> {
  return { events: (await readTail(db, engine, true)).events ?? 0 };
}
