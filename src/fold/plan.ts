import { sql, type RawBuilder } from 'kysely';
import type { ServiceCtx } from '../context.js';
import {
  DAY_MS,
  bucketAround,
  coarseThroughAt,
  hasCoarseBuckets,
  monthStart,
  monthsThroughAt,
  partGrains,
  type FoldPartId,
} from '../reports/rollups.js';
import type { DbOrTrx, Engine } from '../storage/db.js';
import { closeMonthDays, closeWeeks, dayRowsUpTo, firstDayRow, reopenMonths, seqRange } from './rollups.js';
import { seqAfter, seqEqual, type Seq } from './seq.js';

/**
 * The advisory lock of a part of the folding stage (reports/rollups.ts FOLD_PARTS): two keys, apart from
 * the capped-plan locks (7311001); the first is the part's (7311002 for part 1),
 * the second the schema's, since advisory locks span the database and stages of other schemas
 * (other deployments, parallel tests) need not wait for this one. A pass of several parts takes
 * their locks in the order of their ids, so passes cannot wait for each other in a circle.
 */
function foldLock(part: FoldPartId): RawBuilder<unknown> {
  return sql`${foldLockClass(part)}, hashtext(current_schema())`;
}

/** The first key of the advisory lock of a fold part (foldLock). */
export function foldLockClass(part: FoldPartId): number {
  return 7_311_001 + part;
}

/** What a pass folds of one part: the events of `from <= ingest_seq < to`. */
export interface PartPlan {
  part: FoldPartId;
  /** The part's watermark before the pass and after it. */
  from: Seq;
  to: Seq;
  /** Events in [from, to). */
  folded: number;
  /** The earliest day of their occurred_at (Infinity without events). */
  firstDay: number;
  /** Whether events committed before the pass, or weeks and days to close, are left for later. */
  more: boolean;
  coarseThrough: number;
  monthsThrough: number;
  /** The adjustments of `adjustFrom <= ingest_seq < adjustTo`, `adjusted` of them (src/ledger/). */
  adjustFrom: Seq;
  adjustTo: Seq;
  adjusted: number;
}

/**
 * A pass of a backlog from this many events on may leave the week and month rows of its events'
 * days to their day rows, to be built from them once the backlog is folded (planPart).
 */
export const DEFER_FROM = 10_000;

/**
 * The most a pass closes (planPart): one week's rows (cut at month ends), and this many days
 * added to their months' rows. A stage closes the weeks and days that end as it goes, one at a
 * time; after a deferred backlog it closes the whole range of the backlog's days, a step per pass,
 * so that no pass holds the events tracked meanwhile for long.
 */
export const CLOSE_DAYS = 7;

/** The upper end (exclusive) of what may be folded now. */
async function foldableUpTo(trx: DbOrTrx, engine: Engine, from: Seq): Promise<Seq> {
  if (engine === 'postgres') {
    const { rows } = await sql<{ xmin: string }>`
      SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin`.execute(trx);
    return rows[0]?.xmin ?? from;
  }
  const row = await trx
    .selectFrom('events')
    .select((eb) => eb.fn.max('ingest_seq').as('last'))
    .executeTakeFirst();
  const last = row?.last;
  return last === null || last === undefined ? from : Math.max(Number(from), Number(last) + 1);
}

/**
 * The adjustments a pass folds (src/ledger/): those with `from <= ingest_seq < to`, at most
 * `limit` of them unless one transaction wrote more (never split), up to what may be folded now:
 * on PostgreSQL the snapshot's xmin, as for events; on SQLite (the main file's writer numbers
 * them, and the pass holds its write lock) the last one stored.
 */
async function planAdjustments(
  trx: DbOrTrx,
  engine: Engine,
  from: Seq,
  limit: number,
  xmin: Seq,
): Promise<{ from: Seq; to: Seq; folded: number; more: boolean }> {
  let to: Seq = xmin;
  if (engine === 'sqlite') {
    const row = await trx
      .selectFrom('adjustments')
      .select((eb) => eb.fn.max('ingest_seq').as('last'))
      .executeTakeFirst();
    const last = row?.last;
    to = last === null || last === undefined ? from : Math.max(Number(from), Number(last) + 1);
  }
  if (seqEqual(to, from) || BigInt(to) < BigInt(from)) return { from, to: from, folded: 0, more: false };
  const cut = await trx
    .selectFrom('adjustments')
    .select('ingest_seq')
    .where('ingest_seq', '>=', from)
    .where('ingest_seq', '<', to)
    .orderBy('ingest_seq')
    .limit(1)
    .offset(limit)
    .executeTakeFirst();
  let more = false;
  if (cut !== undefined) {
    to = cut.ingest_seq as Seq;
    if (seqEqual(to, from)) to = seqAfter(from);
    more = !seqEqual(to, from);
  }
  const { rows } = await sql<{ n: unknown }>`
    SELECT COUNT(*) AS n FROM adjustments WHERE ${seqRange(engine, from, to)}`.execute(trx);
  return { from, to, folded: Number(rows[0]?.n ?? 0), more };
}

/** The events of a range, counted, and the earliest day they occurred on (Infinity: none). */
async function countRange(
  trx: DbOrTrx,
  engine: Engine,
  from: Seq,
  to: Seq,
): Promise<{ folded: number; firstDay: number }> {
  const { rows } = await sql<{ n: unknown; first: unknown }>`
    SELECT COUNT(*) AS n, MIN(occurred_at) AS first FROM events WHERE ${seqRange(engine, from, to)}`.execute(
    trx,
  );
  const first = rows[0]?.first;
  return {
    folded: Number(rows[0]?.n ?? 0),
    firstDay: first === null || first === undefined ? Infinity : Math.floor(Number(first) / DAY_MS),
  };
}

/**
 * The first half of a part's pass in the pass's transaction `trx`: takes the part's lock, finds
 * the events after its watermark it folds (at most `limit`), sets where their week and month rows
 * start being left to their day rows (`coarse_through`, `months_through`: reports/rollups.ts
 * coarseThroughAt, monthsThroughAt), and closes a step of the weeks and days that ended since;
 * foldPlans folds the events and the caller moves the watermark.
 *
 * A random backfill's events rarely share a two- or three-key row, and their week and month rows
 * were most of what it cost to fold (docs/benchmarks.md). So a pass of a
 * backlog (DEFER_FROM events or more; FoldOptions.defer) whose events reach into closed weeks or
 * days moves both points back before its earliest day, and takes out the month rows of the months
 * from there on: its events, and the rest of the backlog's, write day rows only, and reports read
 * those days from their day rows. Once the backlog is folded, the passes close the weeks and days
 * again, a step each (CLOSE_DAYS), building each week's rows and each month's from their days'
 * rows: a rebuild writes each of them once, instead of once per pass whose events touch it. It
 * defers only where the day rows of the days it reopens (which the rebuild reads again) are no
 * more than its events could add (one per event and grain): a small backfill into days of many
 * events folds into their weeks and months as it comes.
 */
export async function planPart(
  trx: DbOrTrx,
  ctx: ServiceCtx,
  part: FoldPartId,
  now: number,
  limit: number,
  defer: boolean | 'auto',
  deferFrom: number,
): Promise<PartPlan> {
  const postgres = ctx.engine === 'postgres';
  if (postgres) await sql`SELECT pg_advisory_xact_lock(${foldLock(part)})`.execute(trx);
  const state = await trx
    .selectFrom('fold_state')
    .select(['watermark', 'coarse_through', 'months_through', 'adjust_watermark'])
    .where('id', '=', part)
    .$if(postgres, (q) => q.forUpdate())
    .executeTakeFirstOrThrow();
  const from: Seq = state.watermark;
  let to = await foldableUpTo(trx, ctx.engine, from);
  const adjustments = await planAdjustments(trx, ctx.engine, state.adjust_watermark, limit, to);
  const cut = await trx
    .selectFrom('events')
    .select('ingest_seq')
    .where('ingest_seq', '>=', from)
    .where('ingest_seq', '<', to)
    .orderBy('ingest_seq')
    .limit(1)
    .offset(limit)
    .executeTakeFirst();
  const cutAt = cut?.ingest_seq ?? null;
  let more = cutAt !== null;
  if (cutAt !== null) {
    to = cutAt as Seq;
    // One transaction's events are never split (their positions are equal).
    if (seqEqual(to, from)) to = seqAfter(from);
  }
  more = more && !seqEqual(to, from);
  const { folded, firstDay } = seqEqual(to, from)
    ? { folded: 0, firstDay: Infinity }
    : await countRange(trx, ctx.engine, from, to);

  let coarseThrough = Number(state.coarse_through);
  let monthsThrough = Number(state.months_through);
  const coarse = partGrains(part).filter(hasCoarseBuckets);
  const backlog = defer === true ? folded > 0 : defer === 'auto' && folded >= deferFrom;
  if (backlog && coarse.length > 0) {
    const weeksFrom = Math.min(coarseThrough, bucketAround('week', firstDay)[0]);
    const monthsFrom = Math.min(monthsThrough, monthStart(firstDay));
    // The day rows the rebuild reads that it would not have read: those of the days reopened now.
    const most = folded * coarse.length;
    const reopened = async () => {
      const months = await dayRowsUpTo(trx, monthsFrom, monthsThrough, coarse, most);
      return months > most
        ? months
        : months + (await dayRowsUpTo(trx, weeksFrom, coarseThrough, coarse, most - months));
    };
    if (
      (weeksFrom < coarseThrough || monthsFrom < monthsThrough) &&
      (defer === true || (await reopened()) <= most)
    ) {
      if (monthsFrom < monthsThrough) await reopenMonths(trx, monthsFrom, coarse);
      coarseThrough = weeksFrom;
      monthsThrough = monthsFrom;
    }
  }
  // The weeks and days that ended since the last pass get their week and month rows first (a
  // step of them; none in the middle of a backlog); this pass's events then add to them like any
  // back-dated event.
  const weeksTo = coarseThroughAt(now);
  const monthsTo = monthsThroughAt(now);
  if (!(backlog && more) && (coarseThrough < weeksTo || monthsThrough < monthsTo)) {
    // Days without rows close at no cost: the step starts at the first day with rows.
    const first = await firstDayRow(trx, Math.min(coarseThrough, monthsThrough), coarse);
    const weeks =
      first >= weeksTo
        ? weeksTo
        : Math.min(weeksTo, bucketAround('week', Math.max(coarseThrough, bucketAround('week', first)[0]))[1]);
    const days =
      first >= monthsTo ? monthsTo : Math.min(monthsTo, Math.max(monthsThrough, first) + CLOSE_DAYS);
    await closeWeeks(trx, ctx.engine, coarseThrough, weeks, coarse);
    await closeMonthDays(trx, ctx.engine, monthsThrough, days, coarse);
    coarseThrough = Math.max(coarseThrough, weeks);
    monthsThrough = Math.max(monthsThrough, days);
  }
  if (coarseThrough !== Number(state.coarse_through) || monthsThrough !== Number(state.months_through)) {
    await trx
      .updateTable('fold_state')
      .set({ coarse_through: coarseThrough, months_through: monthsThrough })
      .where('id', '=', part)
      .execute();
  }
  // Weeks or days still to close: the next pass follows at once.
  const closing = coarseThrough < weeksTo || monthsThrough < monthsTo;
  return {
    part,
    from,
    to,
    folded,
    firstDay,
    more: more || closing || adjustments.more,
    coarseThrough,
    monthsThrough,
    adjustFrom: adjustments.from,
    adjustTo: adjustments.to,
    adjusted: adjustments.folded,
  };
}
