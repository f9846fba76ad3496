import { sql, type RawBuilder } from 'kysely';
import type { ServiceCtx } from '../context.js';
import { addUsage, usageMonth, type UsageIncrement } from '../billing/usage-counter.js';
import {
  closeMonthDays,
  closeWeeks,
  dayRowsUpTo,
  firstDayRow,
  foldRollups,
  reopenMonths,
  seqRange,
} from './rollups.js';
import {
  DAY_MS,
  FOLD_PART_IDS,
  applyRollupDeltas,
  bucketAround,
  coarseThroughAt,
  deltasExact,
  hasCoarseBuckets,
  monthStart,
  monthsThroughAt,
  partGrains,
  rollupDeltas,
  type FoldPartId,
} from '../reports/rollups.js';
import {
  isUnavailableError,
  takeSqliteWriteLock,
  type Db,
  type DbOrTrx,
  type Engine,
} from '../storage/db.js';
import type { EventRow } from '../storage/schema.js';
import { inSnapshot, lowestWatermark } from '../storage/snapshot.js';
import { orgEventsBySeq } from '../storage/tail.js';
import { enqueueNewEventMessages, type NewEventMessage } from '../webhooks/outbox.js';
import { readSubscribers } from '../webhooks/subscribers.js';
import { eventView } from '../tracking/events.js';

/**
 * The folding stage (DESIGN §11). Tracking commits events only; this stage reads the events
 * committed after its watermark, in commit order and in large batches, and in one transaction
 * adds them to the report rollups and the usage counts, writes their webhook messages, and
 * advances the watermark. A crash repeats a batch, never half of one; processes on one
 * PostgreSQL fold one at a time (an advisory lock held for the transaction).
 *
 * The stage folds in parts (rollups.ts FOLD_PARTS), each with a watermark, a row of fold_state
 * and an advisory lock of its own: part 1 the rollups of six grains, usage and the webhook
 * messages, part 2 the rollups of the other two. A pass of several parts folds each from its
 * own watermark in its one transaction; on PostgreSQL a backlog folds each part in a pass of its
 * own, side by side (foldBacklog), so one per part at a time.
 *
 * The watermark is an `ingest_seq`: events with `ingest_seq >= watermark` are the tail, those
 * below it are folded.
 * - PostgreSQL: `ingest_seq` is the inserting transaction's id. A transaction id can commit
 *   after a larger one, so the stage folds only the ids below its snapshot's xmin (every
 *   transaction below it has ended: what it sees there is all there will ever be).
 * - SQLite: one writer at a time numbers its events after the largest stored, in commit order.
 */

/**
 * Events folded per transaction at most (a PostgreSQL transaction's events are never split),
 * unless TALLY_FOLD_BATCH says otherwise (config.foldBatch). Larger passes fold a backlog faster
 * (each writes the rollup rows its events share once, and each rollup page it touches once), but a
 * SQLite pass holds the main file's write lock throughout: the main thread's other writes (webhook
 * deliveries, settings, keys) queue behind it, and another process's writes wait up to
 * TALLY_SQLITE_BUSY_TIMEOUT_MS (5 s) for it. Tracking does not wait: it writes the events file
 * (storage/events-file.ts). bench:ingest on SQLite (1,000,000 random backfilled events; README
 * "The size of a pass"): the lag was under 1 s 90–95 s after the load in passes of 20,000, 49–54 s
 * in passes of 50,000 and 44–48 s in passes of 100,000, while a write to the main file waited up
 * to 4.6, 7.1 and 10.9 s (p50 1.5, 2.8 and 4.0 s). Since a backlog's passes write day rows only
 * (planPart): 18.4 s in passes of 20,000, a write waiting up to 1.6 s; 5.2–5.6 s in passes of
 * 50,000, a write waiting up to 2.8–2.9 s (p50 1.0–1.1 s), less than 20,000 made it wait before.
 * On a day the machine ran half as fast, the lag was 4.7–40.6 s in passes of 50,000 (90.1 s in
 * passes of 20,000) and a write waited up to 5.7–11.0 s, past the busy timeout of another process.
 * Smaller caps were measured slower in total (see FoldStage's pacing): 2,000 held bench:ingest to
 * 13 % of its floor. On PostgreSQL tracking and every other write go on while a pass folds, and a
 * larger pass folds faster: on 400,000 random backfilled events, 8,466 events/s in passes of
 * 20,000, 10,146 in passes of 50,000, 11,886 in passes of 100,000; on 1,000,000, 173–199 µs per
 * event in passes of 50,000 and 117–127 µs in passes of 200,000. With 200,000, bench:ingest's
 * stage caught up 99–106 s after the load instead of 155 s. A pass reads the events of the
 * organisations with webhooks into the service MESSAGE_CHUNK at a time, and one that outlasts the
 * statement timeout makes the next ones smaller (FoldStage.foldNow).
 */
export const FOLD_BATCH = { sqlite: 50_000, postgres: 200_000 } as const;

/**
 * The advisory lock of a part of the folding stage (rollups.ts FOLD_PARTS): two keys, apart from
 * the capped-plan locks (7311001); the first is the part's (7311002 for part 1, as before parts),
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

type Seq = string | number;

export interface FoldResult {
  /** Events folded by this pass (by the part that folded most, when it folded several). */
  folded: number;
  /**
   * Whether events committed before the pass are left for the next one (the batch was full), or
   * weeks and days to close (planPart closes a step per pass).
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
   * every part, rollups.ts FOLD_PARTS). On PostgreSQL the stage folds a backlog in a pass per
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
 * row); larger ones fold in the database, a statement per grain and bucket (fold-rollups.ts).
 * Measured on a bench database (73,000 events, random keys), per event: SQLite, 50 events
 * 260–360 µs in SQL and 210–380 µs row by row, 200 events 60–80 µs against 160–190 µs;
 * PostgreSQL saves 20 round trips on small passes.
 */
export const SQL_FROM = { sqlite: 50, postgres: 500 } as const;

/** One increment per organisation and month of receipt, in sorted order. */
function usageIncrements(rows: readonly EventRow[]): UsageIncrement[] {
  const byKey = new Map<string, UsageIncrement>();
  for (const row of rows) {
    const month = usageMonth(new Date(Number(row.received_at)));
    const key = `${row.org_id} ${month}`;
    const increment = byKey.get(key);
    if (increment) increment.events += 1;
    else byKey.set(key, { org_id: row.org_id, month, shard: 0, events: 1 });
  }
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, increment]) => increment);
}

function seqEqual(a: Seq, b: Seq): boolean {
  return BigInt(a) === BigInt(b);
}

function seqMin(a: Seq, b: Seq): Seq {
  return BigInt(a) <= BigInt(b) ? a : b;
}

/** The next position after `seq`, in the engine's type (xid8 arrives as text). */
function seqAfter(seq: Seq): Seq {
  return typeof seq === 'number' ? seq + 1 : (BigInt(seq) + 1n).toString();
}

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

/** The ids of the events in `rows` that are the first of their agent (tracking records them). */
async function firstEventIds(trx: DbOrTrx, rows: readonly EventRow[]): Promise<Set<string>> {
  const byOrg = new Map<string, Set<string>>();
  for (const row of rows) {
    const agents = byOrg.get(row.org_id) ?? new Set<string>();
    agents.add(row.agent_id);
    byOrg.set(row.org_id, agents);
  }
  const firsts = new Set<string>();
  for (const [orgId, agents] of byOrg) {
    const ids = [...agents];
    for (let i = 0; i < ids.length; i += 500) {
      const found = await trx
        .selectFrom('agents')
        .select('first_event_id')
        .where('org_id', '=', orgId)
        .where('agent_id', 'in', ids.slice(i, i + 500))
        .execute();
      for (const f of found) firsts.add(f.first_event_id);
    }
  }
  return firsts;
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

/** Adds the events of a range to their organisation's month of receipt (usage_monthly, shard 0). */
async function foldUsage(trx: DbOrTrx, engine: Engine, from: Seq, to: Seq): Promise<void> {
  const month =
    engine === 'sqlite'
      ? sql`strftime('%Y-%m', received_at / 1000, 'unixepoch')`
      : sql`to_char(to_timestamp(received_at / 1000) AT TIME ZONE 'UTC', 'YYYY-MM')`;
  await sql`
    INSERT INTO usage_monthly (org_id, month, shard, events)
    SELECT org_id, ${month}, 0, COUNT(*) FROM events WHERE ${seqRange(engine, from, to)} GROUP BY 1, 2
    ON CONFLICT (org_id, month, shard) DO UPDATE SET events = usage_monthly.events + excluded.events`.execute(
    trx,
  );
}

/** The events a pass reads into the service at a time to write their webhook messages. */
export const MESSAGE_CHUNK = 5_000;

/**
 * The webhook messages of the events of a range, for the organisations with a webhook
 * subscribed when some of them were committed (webhooks/subscribers.ts): only their events are
 * read back (or taken from `read`, the pass's events when it read them).
 */
async function writeMessages(
  trx: DbOrTrx,
  ctx: ServiceCtx,
  from: Seq,
  to: Seq,
  read?: readonly EventRow[],
  chunk = MESSAGE_CHUNK,
): Promise<void> {
  const subscribers = await readSubscribers(trx, ctx.engine, from, to);
  if (subscribers === null) return;
  const enqueue = async (rows: readonly EventRow[]) => {
    const firsts = await firstEventIds(trx, rows);
    const messages: NewEventMessage[] = rows.map((row) => ({
      orgId: row.org_id,
      event: eventView(row),
      seq: row.ingest_seq,
      isNewAgent: firsts.has(row.id),
    }));
    await enqueueNewEventMessages(trx, messages, ctx.config.webhookRetryDelaysSeconds[0] ?? 0, subscribers);
  };
  if (read) {
    await enqueue(read.filter((r) => subscribers.orgs.has(r.org_id)));
    return;
  }
  // A pass of a backlog holds up to FOLD_BATCH events: they are read `chunk` at a time, in
  // commit order, so that the service never holds more of them. Each read seeks from the last
  // one's position (storage/tail.ts).
  const seq = (value: unknown) => (ctx.engine === 'postgres' ? sql`${String(value)}::xid8` : sql`${value}`);
  for (const orgId of subscribers.orgs) {
    let after: { ingest_seq: Seq; id: string } | null = null;
    for (;;) {
      const range: RawBuilder<unknown> =
        after === null
          ? seqRange(ctx.engine, from, to)
          : sql`${seqRange(ctx.engine, after.ingest_seq, to)} AND (ingest_seq, id) > (${seq(after.ingest_seq)}, ${after.id})`;
      const { rows } = await sql<EventRow>`
        SELECT * FROM ${orgEventsBySeq(ctx.engine, orgId, range)} ORDER BY ingest_seq, id LIMIT ${chunk}`.execute(
        trx,
      );
      await enqueue(rows);
      const last = rows.at(-1);
      if (last === undefined || rows.length < chunk) break;
      after = { ingest_seq: last.ingest_seq as Seq, id: last.id };
    }
  }
}

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
      if (plan.folded === 0) continue;
      const key = `${plan.from} ${plan.to} ${plan.coarseThrough} ${plan.monthsThrough}`;
      groups.set(key, [...(groups.get(key) ?? []), plan]);
    }
    for (const group of groups.values()) await foldPlans(trx, ctx, group, options);
    await options.beforeCommit?.(trx);
    for (const plan of plans) {
      if (seqEqual(plan.from, plan.to)) continue;
      await trx
        .updateTable('fold_state')
        .set({ watermark: plan.to, folded_at: now })
        .where('id', '=', plan.part)
        .execute();
    }
    return {
      folded: Math.max(0, ...plans.map((p) => p.folded)),
      more: plans.some((p) => p.more),
      watermark: plans.map((p) => p.to).reduce(seqMin),
    };
  });
}

/** What a pass folds of one part: the events of `from <= ingest_seq < to`. */
interface PartPlan {
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

/**
 * The first half of a part's pass in the pass's transaction `trx`: takes the part's lock, finds
 * the events after its watermark it folds (at most `limit`), sets where their week and month rows
 * start being left to their day rows (`coarse_through`, `months_through`: rollups.ts
 * coarseThroughAt, monthsThroughAt), and closes a step of the weeks and days that ended since;
 * foldPlans folds the events and the caller moves the watermark.
 *
 * A random backfill's events rarely share a two- or three-key row, and their week and month rows
 * were most of what it cost to fold (issue 14's notes: 62 % on PostgreSQL). So a pass of a
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
async function planPart(
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
    .select(['watermark', 'coarse_through', 'months_through'])
    .where('id', '=', part)
    .$if(postgres, (q) => q.forUpdate())
    .executeTakeFirstOrThrow();
  const from: Seq = state.watermark;
  let to = await foldableUpTo(trx, ctx.engine, from);
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
  return { part, from, to, folded, firstDay, more: more || closing, coarseThrough, monthsThrough };
}

/**
 * Folds the events of parts planned at the same point (planPart) into the rollups of all their
 * grains; with part 1 among them, into usage and webhook messages too (rollups.ts FOLD_PARTS).
 */
async function foldPlans(
  trx: DbOrTrx,
  ctx: ServiceCtx,
  plans: readonly PartPlan[],
  options: FoldOptions,
): Promise<void> {
  const { from, to, folded, firstDay, coarseThrough, monthsThrough } = plans[0] as PartPlan;
  const grains = plans.flatMap((plan) => partGrains(plan.part));
  const derived = plans.some((plan) => plan.part === 1);
  if (folded < (options.sqlFrom ?? SQL_FROM[ctx.engine])) {
    // A few events (the usual pass of a stage keeping up): their rows are read and their
    // rollup rows built here, as tracking used to, cheaper than a statement per grain.
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
 * From this many events in the tail on, a PostgreSQL stage folds its parts at once, each in its
 * own transaction on a connection of its own (foldBacklog). A stage keeping up with live traffic
 * has a tail of a few thousand events at most (bench:track: up to ~2,000), and folds them in
 * one pass of every part: reading its few events once, and one transaction instead of two
 * (folding the parts at once there cost bench:track ~5 % of its req/s).
 */
export const PARALLEL_FROM = 10_000;

/**
 * The stage's pass (FoldStage): on PostgreSQL with a backlog (`parallelFrom` events or more not
 * folded into some part), a pass of each part at once, each from its own watermark, so that a
 * backlog folds on two cores: on 200,000 random backfilled events (PostgreSQL), the rollups of
 * every grain took 18.6–22.5 s in one transaction, and the two parts side by side 12.2–12.8 s
 * (each alone 10.6–11.3 s; issue 14's note); likewise with more than a step of weeks and days
 * to close (after a backlog that deferred them, planPart). Otherwise (SQLite, with
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

/**
 * `ingest_seq >= watermark` with the watermark as a value: PostgreSQL then estimates from the
 * index that few rows match (with a subquery it guesses a third of the table, and a LIMIT 1
 * may then scan the table from its start).
 */
function afterMark(engine: Engine, watermark: Seq): RawBuilder<unknown> {
  return engine === 'postgres'
    ? sql`ingest_seq >= ${String(watermark)}::xid8`
    : sql`ingest_seq >= ${watermark}`;
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
    .select(['watermark', 'coarse_through', 'months_through'])
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
  return rows.length > 0 ? null : watermark;
}

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
 * tail is empty), and, with `count`, how many events it holds (a walk of the whole tail: a
 * backlog of 800,000 events took PostgreSQL a few hundred milliseconds of both cores; null
 * without `count`).
 */
function readTail(
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
function lagMsAt(headReceivedAt: number | null, now: number): number {
  return headReceivedAt === null ? 0 : Math.max(0, now - headReceivedAt);
}

/**
 * The days whose week or month rows the stage has still to build from their day rows, at `now`:
 * a day or so when a week or day has just ended, more after a backlog that deferred them
 * (planPart), 0 when every part is closed up to now.
 */
async function closingDays(db: DbOrTrx, now: number): Promise<number> {
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

/** A tail up to `countAlways` events is counted at every scrape; a longer one every `recountMs`. */
export const TAIL_RECOUNT = { countAlways: 10_000, recountMs: 5_000 } as const;

/**
 * What /metrics reads of the tail at each scrape (`tally_fold_tail_events`,
 * `tally_fold_lag_seconds`): the lag from the head of the tail, every time; the length counted
 * every time while it is short, and at most every `recountMs` of the service's clock once it
 * passed `countAlways` (TAIL_RECOUNT; the last count shows meanwhile, and an empty tail shows 0
 * at once). Counting a long tail at every scrape slowed the stage it measures: `bench:ingest`,
 * which reads /metrics every 100 ms after its load, took 183 s for its PostgreSQL stage to catch
 * up, against 115 s when it read every 2 s.
 */
export class TailMeter {
  private last: { events: number; at: number } | null = null;

  constructor(
    private readonly db: DbOrTrx,
    private readonly engine: Engine,
    private readonly now: () => number,
    private readonly recount: { countAlways: number; recountMs: number } = TAIL_RECOUNT,
  ) {}

  async read(): Promise<{ events: number; lagSeconds: number; closingDays: number }> {
    const at = this.now();
    const last = this.last;
    const { countAlways, recountMs } = this.recount;
    const count = last === null || last.events <= countAlways || at - last.at >= recountMs;
    const tail = await readTail(this.db, this.engine, count);
    if (tail.headReceivedAt === null) this.last = null;
    else if (tail.events !== null) this.last = { events: tail.events, at };
    const lagSeconds = lagMsAt(tail.headReceivedAt, at) / 1000;
    return { events: this.last?.events ?? 0, lagSeconds, closingDays: await closingDays(this.db, at) };
  }
}

export interface FoldStageOptions {
  /**
   * How long the loop waits after a pass that emptied the tail: when it found none, local
   * tracking wakes it earlier; when it folded some, it waits the whole time, so that the next
   * pass folds many events at once rather than each batch of the API alone. A pass that left a
   * backlog (a full batch) is followed by the next one at once.
   */
  idlePollMs?: number;
  batch?: number;
  /**
   * A pass failed in a way not seen since the stage last folded (FoldFailures): called once per
   * distinct failure, not on every retry.
   */
  onError?: (error: unknown) => void;
  /** A pass succeeded after `failures` failed ones. */
  onRecover?: (failures: number) => void;
  /** The waits after failed passes (default FOLD_RETRY). */
  retry?: { firstMs: number; mostMs: number };
  /**
   * Runs one pass (default: foldBacklog here; a SQLite file folds in a thread, fold-thread.ts).
   */
  runPass?: (options: FoldOptions & { limit: number }) => Promise<FoldResult>;
  /** PostgreSQL: the tail from which a pass folds the parts at once (default PARALLEL_FROM). */
  parallelFrom?: number;
  /** The events from which a pass may defer week and month rows (FoldOptions.deferFrom). */
  deferFrom?: number;
}

/** Failed passes of a stage, by kind, for /metrics (tally_fold_errors_total). */
export interface FoldErrorCounts {
  /** The database could not be reached (storage/db.ts isUnavailableError). */
  unavailable: number;
  /** Any other failure: a pass that fails again on retry until something changes. */
  failed: number;
}

/**
 * A statement the database cancelled for its timeout (PostgreSQL `statement_timeout`, 57014), or
 * one the client stopped waiting for (storage/db.ts boundQueries).
 */
function isTimeoutError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '57014' || code === 'TALLY_DB_TIMEOUT';
}

/** The wait after the first failed pass; it doubles with each further one, up to the most. */
export const FOLD_RETRY = { firstMs: 1_000, mostMs: 60_000 } as const;

/**
 * What a stage remembers of its failing passes: how many in a row, which distinct failures were
 * reported (an error's code and message), and how long to wait before the next pass. A pass
 * that fails because the database is away waits FOLD_RETRY.firstMs (it comes back by itself);
 * any other failure backs off exponentially, since it repeats until the cause is fixed.
 */
class FoldFailures {
  readonly counts: FoldErrorCounts = { unavailable: 0, failed: 0 };
  inARow = 0;
  private readonly reported = new Set<string>();

  constructor(private readonly retry: { firstMs: number; mostMs: number }) {}

  /** Records a failed pass; returns whether it is a distinct failure to report, and the wait. */
  fail(error: unknown): { report: boolean; waitMs: number } {
    this.inARow += 1;
    const unavailable = isUnavailableError(error);
    if (unavailable) this.counts.unavailable += 1;
    else this.counts.failed += 1;
    const e = error as { code?: unknown; message?: unknown } | null;
    const key = `${String(e?.code ?? '')} ${String(e?.message ?? error)}`;
    // A bounded memory: a failure whose message changes every time is reported at most 100 times
    // before the stage folds again.
    const report = !this.reported.has(key) && this.reported.size < 100;
    if (report) this.reported.add(key);
    const { firstMs, mostMs } = this.retry;
    const waitMs = unavailable ? firstMs : Math.min(mostMs, firstMs * 2 ** Math.min(this.inARow - 1, 16));
    return { report, waitMs };
  }

  /** A pass succeeded: returns how many failed before it (0: none). */
  succeed(): number {
    const failures = this.inARow;
    this.inARow = 0;
    this.reported.clear();
    return failures;
  }
}

/**
 * The folding stage of one process: a loop that folds as soon as there is a tail, and sleeps
 * `idlePollMs` when there is none, unless tracking in this process wakes it. Passes of one
 * process never overlap (a pass may fold its parts at once, foldBacklog); several processes
 * take turns (the advisory locks).
 */
export class FoldStage {
  private running = false;
  private loopDone: Promise<void> | null = null;
  private wakeUp: (() => void) | null = null;
  private woken = false;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly idlePollMs: number;
  private readonly batch: number;
  /** The events the next pass may take: `batch`, or less after passes that timed out. */
  private limit: number;
  private readonly onError: (error: unknown) => void;
  private readonly onRecover: (failures: number) => void;
  private readonly failures: FoldFailures;
  private readonly runPass: (options: FoldOptions & { limit: number }) => Promise<FoldResult>;
  private readonly deferFrom: number | undefined;

  constructor(
    private readonly ctx: ServiceCtx,
    options: FoldStageOptions = {},
  ) {
    this.idlePollMs = options.idlePollMs ?? 100;
    this.batch = options.batch ?? ctx.config.foldBatch ?? FOLD_BATCH[ctx.engine];
    this.limit = this.batch;
    this.onError = options.onError ?? (() => undefined);
    this.onRecover = options.onRecover ?? (() => undefined);
    this.failures = new FoldFailures(options.retry ?? FOLD_RETRY);
    const parallelFrom = options.parallelFrom ?? PARALLEL_FROM;
    this.runPass = options.runPass ?? ((pass) => foldBacklog(ctx, pass, parallelFrom));
    this.deferFrom = options.deferFrom;
  }

  /** Failed passes of this stage's loop so far, by kind. */
  get errors(): FoldErrorCounts {
    return { ...this.failures.counts };
  }

  /**
   * One pass, after the passes already asked of this process. A pass that outlasts the database's
   * statement timeout would do so again at every retry, and the stage would fold nothing while
   * the tail grows: after a timed-out pass the next ones take half as many events (down to one
   * transaction's), and the full `batch` again once a pass finds the tail folded.
   */
  foldNow(options: FoldOptions = {}): Promise<FoldResult> {
    const pass = this.queue.then(async () => {
      try {
        const deferFrom = this.deferFrom === undefined ? {} : { deferFrom: this.deferFrom };
        const result = await this.runPass({ limit: this.limit, ...deferFrom, ...options });
        if (!result.more) this.limit = this.batch;
        return result;
      } catch (error) {
        if (isTimeoutError(error)) this.limit = Math.max(1, Math.floor(this.limit / 2));
        throw error;
      }
    });
    this.queue = pass.catch(() => undefined);
    return pass;
  }

  /** Passes until everything committed before the call is folded. */
  async foldAll(): Promise<number> {
    let total = 0;
    for (;;) {
      const result = await this.foldNow();
      total += result.folded;
      if (!result.more) return total;
    }
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loopDone = this.loop();
  }

  wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wakeUp?.();
    await this.loopDone;
    await this.queue;
  }

  private async loop(): Promise<void> {
    while (this.running) {
      this.woken = false;
      let result: FoldResult | null = null;
      let retryMs = 0;
      const passStart = performance.now();
      try {
        result = await this.foldNow();
        const failed = this.failures.succeed();
        if (failed > 0) this.onRecover(failed);
      } catch (error) {
        // Every pass starts again from the watermark, so a failure repeats until its cause
        // goes: reported once, counted each time (/metrics), retried less and less often.
        const { report, waitMs } = this.failures.fail(error);
        if (report) this.onError(error);
        retryMs = waitMs;
      }
      // After a pass that emptied the tail, the stage waits before the next one:
      // - PostgreSQL: idlePollMs, whatever the pass took, so that it keeps up with any rate it
      //   can fold (tracking commits while a pass folds).
      // - SQLite: as long as the pass took, at least idlePollMs. One writer per file: the main
      //   thread's other writes wait while a pass writes, so they get at least half of the
      //   writer (tracking writes the events file and waits for no pass since the split,
      //   storage/events-file.ts; waiting idlePollMs instead was measured after it: the same
      //   req/s, the tail halved, a report under load no faster), and under a backfill the tail
      //   and the passes grow, which makes each event cheaper to fold (a commit writes each
      //   rollup page it touched once): on 200,000 random events, 164 µs per event in passes of
      //   2,000, 57 µs in passes of 20,000. bench:ingest went from 13 % to 20 % of its floor.
      //   Before the split, waiting twice as long as the pass was measured and not kept:
      //   bench:track rose from 6,549–6,859 to 7,206–8,379 req/s and its p99 fell from ~150 ms
      //   to 15–47 ms, but only
      //   because fewer requests met a pass: the passes doubled, so the slowest request waited
      //   489–576 ms instead of 193–208 ms, and a report under the load took 3.2× its idle time
      //   instead of 1.8×.
      // A full pass (a backlog past FOLD_BATCH) is followed by the next at once either way.
      const passMs = performance.now() - passStart;
      const wait = this.ctx.engine === 'sqlite' ? Math.max(this.idlePollMs, passMs) : this.idlePollMs;
      if (!this.running) break;
      if (result?.more) {
        // A backlog: the next pass at once, but after the writes that queued behind this one
        // (they wait for the connection; a pass taken straight away would go first).
        if (this.ctx.engine === 'sqlite') await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      const idle = result !== null && result.folded === 0;
      if (idle && this.woken) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, result === null ? Math.max(wait, retryMs) : wait);
        // Only an idle stage is woken early by tracking; stop() ends any wait.
        this.wakeUp = () => {
          if (idle || !this.running) {
            clearTimeout(timer);
            resolve();
          }
        };
      });
      this.wakeUp = null;
    }
  }
}

const stages = new WeakMap<Db | DbOrTrx, FoldStage>();

/** The folding stage of a database handle (one per handle, like the track batcher). */
export function foldStageFor(ctx: ServiceCtx, options: FoldStageOptions = {}): FoldStage {
  let stage = stages.get(ctx.db);
  if (!stage) {
    stage = new FoldStage(ctx, options);
    stages.set(ctx.db, stage);
  }
  return stage;
}

/** The failed passes of the folding stage of a database handle (zeros when it has none). */
export function foldErrorCounts(db: Db | DbOrTrx): FoldErrorCounts {
  return stages.get(db)?.errors ?? { unavailable: 0, failed: 0 };
}

/** After a track call committed: wake this process's folding stage, or fold now (foldInline). */
export async function afterTrack(ctx: ServiceCtx): Promise<void> {
  if (!ctx.config.foldInline) {
    stages.get(ctx.db)?.wake();
    return;
  }
  const stage = foldStageFor(ctx);
  // PostgreSQL folds only below the oldest running transaction: a batch of another call still
  // committing keeps the tail a moment longer.
  for (let attempt = 0; attempt < 200; attempt++) {
    await stage.foldAll();
    if ((await readTail(ctx.db, ctx.engine, false)).headReceivedAt === null) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
