import { sql, type RawBuilder } from 'kysely';
import type { Engine } from './db.js';
import type { IngestSeq } from './snapshot.js';

/**
 * Where a read of the tail starts (DESIGN §11): the events with `ingest_seq >= watermark`.
 * - `watermark`: the value, read in the statement's snapshot (storage/snapshot.ts inSnapshot).
 * - `part` and `floor`: the statement reads the watermark of fold part `part` itself, in its own
 *   snapshot (exports, and the capped count in a track transaction, whose statements each see
 *   their own on PostgreSQL); `floor` is a watermark of that part read earlier, or null. The stage
 *   only ever moves a watermark forward, so the floor is never above the one the statement reads,
 *   and PostgreSQL plans the seek with it: for a subquery's value it guesses a third of the table.
 */
export type TailMark = { watermark: IngestSeq } | { part: number; floor: IngestSeq | null };

/** `ingest_seq >= watermark` of `mark` (xid8 on PostgreSQL). */
export function tailCondition(engine: Engine, mark: TailMark): RawBuilder<unknown> {
  const seq = (value: IngestSeq) => (engine === 'postgres' ? sql`${String(value)}::xid8` : sql`${value}`);
  if ('watermark' in mark) return sql`ingest_seq >= ${seq(mark.watermark)}`;
  const read = sql`ingest_seq >= (SELECT watermark FROM fold_state WHERE id = ${mark.part})`;
  // SQLite seeks from the subquery's value (orgEventsBySeq names the index); a second lower
  // bound could be the one it seeks from.
  if (engine === 'sqlite' || mark.floor === null) return read;
  return sql`ingest_seq >= ${seq(mark.floor)} AND ${read}`;
}

/**
 * An organisation's events that meet `condition`, a condition on `ingest_seq` alone (a range
 * from a watermark), as a FROM item named `events`, read through `events_ingest_seq`: the seek
 * starts at the condition's lower bound and walks the events after it, of every organisation, so
 * a read of the tail costs the tail's length, whatever the organisation's history.
 *
 * Each engine's planner would rather walk the organisation's events (events_org_occurred, or
 * events_org_id), all of them back to its first, to find the few after the watermark:
 * - SQLite has no statistics (the service never runs ANALYZE) and takes an equality on the
 *   first column of an index for a few rows: `INDEXED BY` names the index.
 * - PostgreSQL cannot estimate how many events lie after a watermark past its statistics: it
 *   has no arithmetic on xid8 and takes half a bucket of its histogram, 0.5 % of the table
 *   whatever the tail's length, so for an organisation with fewer events than that it walks the
 *   organisation's events (and walks them all for a watermark a subquery reads).
 *   The organisation is filtered outside a subquery it cannot enter (OFFSET 0), whose only
 *   condition is on `ingest_seq`.
 * During a backlog every organisation's tail read walks the backlog: a stalled stage makes
 * reads slower, never wrong (DESIGN §11). An index by organisation and `ingest_seq` would spare
 * that, at the cost of every tracked event's write (migration 0014).
 */
export function orgEventsBySeq(
  engine: Engine,
  orgId: string,
  condition: RawBuilder<unknown>,
): RawBuilder<unknown> {
  if (engine === 'sqlite')
    return sql`(SELECT * FROM events INDEXED BY events_ingest_seq WHERE org_id = ${orgId} AND ${condition}) AS events`;
  return sql`(SELECT * FROM (SELECT * FROM events WHERE ${condition} OFFSET 0) AS tail WHERE org_id = ${orgId}) AS events`;
}
