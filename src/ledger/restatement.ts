import { sql } from 'kysely';
import type { OrgCtx } from '../context.js';
import { recordAudit } from '../audit/audit-log.js';
import { AppError, notFound } from '../errors.js';
import { takeSqliteWriteLock, type DbOrTrx, type Engine } from '../storage/db.js';
import type { AdjustmentRow, EventRow, RestatementRow, ReviewRow } from '../storage/schema.js';
import { BACKSTOP_CHECKPOINT_PAGES } from '../storage/checkpointer.js';
import { enqueueMessage } from '../webhooks/outbox.js';
import { ledgerOf, type EventLedger } from './adjustments.js';
import { figuresAdd, figuresDelta, figuresView, isZero, type Figures, type Verdict } from './figures.js';

/**
 * Applying a restatement (docs/architecture.md "The adjustments ledger"): the repricing is the
 * caller's (`reprice`), the walk, the staging and the publication are here.
 *
 * - The organisation's events are walked in id order, `batch` at a time, each batch in a short
 *   transaction of its own that writes only `restatement_staging` rows and the restatement's
 *   cursor: tracking is never held, and no reader sees a staged entry. Before the walk the
 *   restatement notes `adjust_from`, the lowest `ingest_seq` of an entry written after it.
 * - Then one transaction publishes every staged entry into `adjustments` at once (a position in
 *   commit order for them all), marks the restatement applied, and writes its audit entry and
 *   its `figures.restated` webhook message: reports show the change entirely or not at all. It
 *   copies the staged rows PUBLISH_CHUNK at a time, letting the event loop run between two chunks
 *   (a SQLite statement holds it while it runs; tracking, in the events file, goes on meanwhile),
 *   and on SQLite its commit leaves the WAL it grew to the checkpoint thread.
 * - Its staged rows are removed after it commits, REMOVE_BATCH at a time, each in a short
 *   transaction: a restatement no longer `staging` ignores the rows it still has, and applying it
 *   again, abandoning it or the sweeper (removeLeftoverStaging) removes them.
 * - A kill while staging leaves the restatement `staging` with a cursor: `applyRestatement` with
 *   the same id resumes after it, or `abandonRestatement` removes what was staged. A kill while
 *   publishing rolls the publication back.
 * - An event whose figures changed after its entry was staged (a review meanwhile) is repriced
 *   again at publication, from its figures then. Only events with an entry at or after
 *   `adjust_from` are looked at (index adjustments_org_seq), and of those the ones whose count
 *   of entries differs from the one staged. The publication holds the organisation's figures
 *   lock, which every review takes shared (PostgreSQL; SQLite's write lock serialises them
 *   anyway).
 */

/** What the repricer is told of an event beside its row: its figures in force and its review. */
export interface CurrentFigures {
  figures: Figures;
  baselineMinutes: number;
  hourlyRateMicros: number;
  review: { verdict: Verdict; reviewMinutes: number } | null;
}

/** The event's new figures (those left out stay as they are), and the baseline and rate now in force. */
export type NewFigures = Partial<Figures> & { baselineMinutes?: number; hourlyRateMicros?: number };

export type Repricer = (event: EventRow, current: CurrentFigures) => NewFigures | null;

export interface ApplyOptions {
  restatementId: string;
  orgId: string;
  reason: string;
  reprice: Repricer;
  /** Events read per staging transaction (default 5,000). */
  batch?: number;
  /** Tests: staged rows copied per statement of the publication (default PUBLISH_CHUNK of the engine). */
  publishChunk?: number;
  /** Tests: after each staged batch commits, with the events seen so far. */
  afterBatch?: (seen: number) => Promise<void> | void;
  /** Tests: inside the publishing transaction, before it commits. */
  beforePublish?: () => Promise<void> | void;
  /**
   * Tests and the benchmark: once the publishing transaction committed, before the staged rows
   * are removed (not called when the restatement was applied already).
   */
  afterPublish?: () => Promise<void> | void;
  /** What the restatement changes, as its caller describes it (the assumption version). */
  change?: unknown;
}

/** The sums of an applied restatement's entries, and the months (YYYY-MM) of their events. */
export interface RestatementSummary {
  affected_events: number;
  delta: ReturnType<typeof figuresView>;
  months: string[];
}

/** The `figures.restated` message: the restatement (with its change), its entries' sums, its months. */
export interface RestatedMessage extends RestatementSummary {
  restatement: ReturnType<typeof restatementView> & { change: unknown };
}

export const RESTATEMENT_BATCH = 5_000;

/**
 * Staged rows copied into `adjustments` per statement of the publication. Small on SQLite, whose
 * statements hold the event loop while they run: a request needs several turns of the loop to
 * be answered, and the next chunk runs between two of them. PostgreSQL's do not hold it; its
 * chunks only keep each statement well within the statement timeout.
 */
export const PUBLISH_CHUNK: Record<Engine, number> = { sqlite: 2_000, postgres: 50_000 };

/** Staged rows removed per transaction once the publication committed. */
export const REMOVE_BATCH = 5_000;

/** Lets the event loop run (a SQLite statement holds it while it runs). */
const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The first key of the organisation's figures lock (PostgreSQL advisory lock). */
export const ORG_FIGURES_LOCK = 7_311_021;

/** PostgreSQL: every change of one event's figures holds its organisation's lock shared. */
export async function lockOrgFiguresShared(trx: DbOrTrx, engine: Engine, orgId: string): Promise<void> {
  if (engine === 'postgres')
    await sql`SELECT pg_advisory_xact_lock_shared(${ORG_FIGURES_LOCK}, hashtext(${orgId}))`.execute(trx);
}

export function restatementView(row: RestatementRow) {
  return {
    id: row.id,
    reason: row.reason,
    status: row.status,
    events_seen: Number(row.events_seen),
    events_adjusted: Number(row.events_adjusted),
    created_at: new Date(Number(row.created_at)).toISOString(),
    applied_at: row.applied_at === null ? null : new Date(Number(row.applied_at)).toISOString(),
  };
}

function targetOf(
  ledger: EventLedger,
  next: NewFigures,
): { target: Figures; baseline: number | null; rate: number | null } {
  const target: Figures = {
    hoursSavedMicros: next.hoursSavedMicros ?? ledger.current.hoursSavedMicros,
    costSavedMicros: next.costSavedMicros ?? ledger.current.costSavedMicros,
    agentCostMicros: next.agentCostMicros ?? ledger.current.agentCostMicros,
    reviewHoursMicros: next.reviewHoursMicros ?? ledger.current.reviewHoursMicros,
    reviewCostMicros: next.reviewCostMicros ?? ledger.current.reviewCostMicros,
  };
  const baseline =
    next.baselineMinutes !== undefined && next.baselineMinutes !== ledger.baselineMinutes
      ? next.baselineMinutes
      : null;
  const rate =
    next.hourlyRateMicros !== undefined && next.hourlyRateMicros !== ledger.hourlyRateMicros
      ? next.hourlyRateMicros
      : null;
  return { target, baseline, rate };
}

/** The events' ledgers and reviews in force, for events of one organisation. */
export async function eventLedgers(
  db: DbOrTrx,
  orgId: string,
  events: readonly EventRow[],
): Promise<Map<string, { ledger: EventLedger; review: ReviewRow | null }>> {
  const ids = events.map((e) => e.id);
  const adjustments = new Map<string, AdjustmentRow[]>();
  const reviews = new Map<string, ReviewRow>();
  for (let i = 0; i < ids.length; i += 500) {
    if (i > 0) await yieldToLoop();
    const chunk = ids.slice(i, i + 500);
    const rows = await db
      .selectFrom('adjustments')
      .selectAll()
      .where('org_id', '=', orgId)
      .where('event_id', 'in', chunk)
      .orderBy('ingest_seq')
      .orderBy('id')
      .execute();
    for (const row of rows) adjustments.set(row.event_id, [...(adjustments.get(row.event_id) ?? []), row]);
    const reviewed = await db
      .selectFrom('reviews')
      .selectAll()
      .where('org_id', '=', orgId)
      .where('event_id', 'in', chunk)
      .orderBy('number')
      .execute();
    for (const row of reviewed) reviews.set(row.event_id, row);
  }
  return new Map(
    events.map((event) => [
      event.id,
      { ledger: ledgerOf(event, adjustments.get(event.id) ?? []), review: reviews.get(event.id) ?? null },
    ]),
  );
}

export function currentOf(ledger: EventLedger, review: ReviewRow | null): CurrentFigures {
  return {
    figures: ledger.current,
    baselineMinutes: ledger.baselineMinutes,
    hourlyRateMicros: ledger.hourlyRateMicros,
    review:
      review === null
        ? null
        : { verdict: review.verdict as Verdict, reviewMinutes: Number(review.review_minutes) },
  };
}

/** A staging row: the entry the restatement will publish for an event, or null for none. */
function stagedRow(restatementId: string, event: EventRow, ledger: EventLedger, next: NewFigures | null) {
  if (next === null) return null;
  const { target, baseline, rate } = targetOf(ledger, next);
  const delta = figuresDelta(ledger.current, target);
  if (isZero(delta) && baseline === null && rate === null) return null;
  return {
    restatement_id: restatementId,
    event_id: event.id,
    org_id: event.org_id,
    agent_id: event.agent_id,
    task_type: event.task_type,
    outcome: event.outcome,
    client_id: event.client_id,
    occurred_at: Number(event.occurred_at),
    hours_saved_micros: delta.hoursSavedMicros,
    cost_saved_micros: delta.costSavedMicros,
    agent_cost_micros: delta.agentCostMicros,
    review_hours_micros: delta.reviewHoursMicros,
    review_cost_micros: delta.reviewCostMicros,
    baseline_minutes: baseline,
    hourly_rate_micros: rate,
    based_on: ledger.adjustments.length,
  };
}

/**
 * Applies a restatement to the organisation's events: stages the entries in batches, then
 * publishes them all at once. Resumes a restatement left `staging` (after a crash) from its
 * cursor; an applied one is answered as it is.
 */
export async function applyRestatement(
  ctx: OrgCtx,
  options: ApplyOptions,
): Promise<ReturnType<typeof restatementView>> {
  const { restatementId, orgId } = options;
  if (orgId !== ctx.org.id) throw new AppError('bad_request', 'The restatement is of another organisation.');
  const batch = Math.max(1, options.batch ?? RESTATEMENT_BATCH);
  await openRestatement(ctx.db, { id: restatementId, orgId, reason: options.reason, at: ctx.clock.now() });
  const state = await readRestatement(ctx.db, orgId, restatementId);
  if (state.status === 'applied') {
    await removeStaged(ctx.db, restatementId);
    return restatementView(state);
  }
  if (state.status !== 'staging') throw new AppError('bad_request', `The restatement is ${state.status}.`);
  if (state.adjust_from === null) await noteAdjustFrom(ctx.db, ctx.engine, restatementId);

  let cursor = state.cursor;
  let seen = Number(state.events_seen);
  for (;;) {
    await yieldToLoop();
    // Read outside any transaction: tracking goes on meanwhile (an event tracked during the walk
    // is priced by the new assumptions already, and the repricer leaves it unchanged).
    const events = await ctx.db
      .selectFrom('events')
      .selectAll()
      .where('org_id', '=', orgId)
      .$if(cursor !== null, (q) => q.where('id', '>', cursor as string))
      .orderBy('id')
      .limit(batch)
      .execute();
    if (events.length === 0) break;
    const found = await eventLedgers(ctx.db, orgId, events);
    await yieldToLoop();
    const rows = events.flatMap((event) => {
      const { ledger, review } = found.get(event.id) as { ledger: EventLedger; review: ReviewRow | null };
      const row = stagedRow(restatementId, event, ledger, options.reprice(event, currentOf(ledger, review)));
      return row === null ? [] : [row];
    });
    const last = (events.at(-1) as EventRow).id;
    seen += events.length;
    const staging = await ctx.db.transaction().execute(async (trx) => {
      // The cursor first: another process that published or abandoned it meanwhile (two
      // processes finishing one restatement) leaves nothing to stage.
      const moved = await trx
        .updateTable('restatements')
        .set({ cursor: last, events_seen: seen })
        .where('id', '=', restatementId)
        .where('status', '=', 'staging')
        .executeTakeFirst();
      if (Number(moved.numUpdatedRows) === 0) return false;
      for (let i = 0; i < rows.length; i += 200) {
        if (i > 0 && i % 1000 === 0) await yieldToLoop();
        await trx
          .insertInto('restatement_staging')
          .values(rows.slice(i, i + 200))
          .onConflict((oc) => oc.columns(['restatement_id', 'event_id']).doNothing())
          .execute();
      }
      return true;
    });
    if (!staging) break;
    cursor = last;
    await options.afterBatch?.(seen);
    if (events.length < batch) break;
  }
  const { view, published } = await publish(ctx, options).finally(async () => {
    if (ctx.engine === 'sqlite')
      await sql`PRAGMA wal_autocheckpoint = ${sql.raw(String(BACKSTOP_CHECKPOINT_PAGES))}`.execute(ctx.db);
  });
  if (published) await options.afterPublish?.();
  // Applied whatever becomes of the removal: rows it leaves are ignored, and the sweeper (or
  // applying it again) removes them.
  await removeStaged(ctx.db, restatementId).catch(() => undefined);
  return view;
}

/**
 * Notes, before the walk, the lowest `ingest_seq` an entry written from now on may have: on
 * PostgreSQL the xmin of the current snapshot (every transaction below it has ended, and one
 * that commits later has an id at or above it); on SQLite the number after the largest stored.
 */
async function noteAdjustFrom(db: DbOrTrx, engine: Engine, restatementId: string): Promise<void> {
  const from =
    engine === 'postgres'
      ? sql`pg_snapshot_xmin(pg_current_snapshot())`
      : sql`(SELECT COALESCE(MAX(ingest_seq), 0) + 1 FROM adjustments)`;
  await sql`
    UPDATE restatements SET adjust_from = ${from}
    WHERE id = ${restatementId} AND adjust_from IS NULL`.execute(db);
}

/**
 * Removes the staged rows of a restatement that is no longer `staging`, REMOVE_BATCH at a time,
 * each batch a transaction of its own. A restatement still `staging` keeps them (another process
 * may be publishing it).
 */
async function removeStaged(db: DbOrTrx, restatementId: string): Promise<number> {
  let removed = 0;
  for (;;) {
    const deleted = await sql`
      DELETE FROM restatement_staging
      WHERE restatement_id = ${restatementId}
        AND event_id IN (
          SELECT s.event_id FROM restatement_staging s
          WHERE s.restatement_id = ${restatementId}
            AND NOT EXISTS (SELECT 1 FROM restatements r WHERE r.id = ${restatementId} AND r.status = 'staging')
          ORDER BY s.event_id LIMIT ${REMOVE_BATCH})`.execute(db);
    const n = Number(deleted.numAffectedRows ?? 0);
    removed += n;
    if (n < REMOVE_BATCH) return removed;
    await yieldToLoop();
  }
}

/**
 * Removes the staged rows left by restatements no longer `staging` (a process stopped between a
 * publication and the removal of its rows). Run by RestatementSweeper; returns how many.
 */
export async function removeLeftoverStaging(db: DbOrTrx): Promise<number> {
  const { rows } = await sql<{ id: string }>`
    SELECT r.id FROM restatements r
    WHERE r.status <> 'staging'
      AND EXISTS (SELECT 1 FROM restatement_staging s WHERE s.restatement_id = r.id)`.execute(db);
  let removed = 0;
  for (const { id } of rows) removed += await removeStaged(db, id);
  return removed;
}

/**
 * Records a restatement as `staging` (nothing staged yet), unless it exists. A caller may do it
 * in the transaction of what causes it, so that a restarted service finds it and finishes it.
 */
export async function openRestatement(
  db: DbOrTrx,
  r: { id: string; orgId: string; reason: string; at: Date },
): Promise<void> {
  await db
    .insertInto('restatements')
    .values({
      id: r.id,
      org_id: r.orgId,
      reason: r.reason,
      status: 'staging',
      events_seen: 0,
      events_adjusted: 0,
      cursor: null,
      created_at: r.at.getTime(),
      applied_at: null,
    })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
}

/** The sums of staged entries and the days (since the epoch) of their events. */
interface StagedSums {
  n: number;
  figures: Figures;
  days: Set<number>;
}

/** Sums of the staged entries of a restatement with `after < event_id <= upTo` (null: no bound). */
async function stagedSums(
  trx: DbOrTrx,
  restatementId: string,
  after: string | null,
  upTo: string | null,
): Promise<StagedSums> {
  const range = sql`${after === null ? sql`` : sql`AND event_id > ${after}`} ${upTo === null ? sql`` : sql`AND event_id <= ${upTo}`}`;
  // Per day since the epoch (integer division on both engines): few distinct values.
  const { rows } = await sql<
    Record<'day' | 'n' | 'hours' | 'cost' | 'agent' | 'review_hours' | 'review_cost', unknown>
  >`
    SELECT occurred_at / 86400000 AS day, COUNT(*) AS n, SUM(hours_saved_micros) AS hours,
      SUM(cost_saved_micros) AS cost, SUM(agent_cost_micros) AS agent,
      SUM(review_hours_micros) AS review_hours, SUM(review_cost_micros) AS review_cost
    FROM restatement_staging WHERE restatement_id = ${restatementId} ${range}
    GROUP BY occurred_at / 86400000`.execute(trx);
  const n = (v: unknown) => Number(v ?? 0);
  return {
    n: rows.reduce((sum, r) => sum + n(r.n), 0),
    figures: rows.reduce<Figures>(
      (sum, r) =>
        figuresAdd(sum, {
          hoursSavedMicros: n(r.hours),
          costSavedMicros: n(r.cost),
          agentCostMicros: n(r.agent),
          reviewHoursMicros: n(r.review_hours),
          reviewCostMicros: n(r.review_cost),
        }),
      ZERO_FIGURES,
    ),
    days: new Set(rows.map((r) => n(r.day))),
  };
}

const ZERO_FIGURES: Figures = {
  hoursSavedMicros: 0,
  costSavedMicros: 0,
  agentCostMicros: 0,
  reviewHoursMicros: 0,
  reviewCostMicros: 0,
};

/**
 * The event ids that split a restatement's staged rows into chunks of `chunk` (each the last of
 * its chunk), read before the publication's transaction: any ids split them correctly, the last
 * chunk being open-ended. PostgreSQL numbers them in one statement; SQLite steps through its
 * index, letting the event loop run between two steps.
 */
async function chunkBounds(
  db: DbOrTrx,
  engine: Engine,
  restatementId: string,
  chunk: number,
): Promise<string[]> {
  if (engine === 'postgres') {
    const { rows } = await sql<{ event_id: string }>`
      SELECT event_id FROM (
        SELECT event_id, ROW_NUMBER() OVER (ORDER BY event_id) AS n
        FROM restatement_staging WHERE restatement_id = ${restatementId}) ranked
      WHERE n % ${chunk} = 0 ORDER BY event_id`.execute(db);
    return rows.map((r) => r.event_id);
  }
  const bounds: string[] = [];
  for (;;) {
    const after = bounds.at(-1);
    const { rows } = await sql<{ event_id: string }>`
      SELECT event_id FROM restatement_staging
      WHERE restatement_id = ${restatementId} ${after === undefined ? sql`` : sql`AND event_id > ${after}`}
      ORDER BY event_id LIMIT 1 OFFSET ${chunk - 1}`.execute(db);
    const bound = rows[0]?.event_id;
    if (bound === undefined) return bounds;
    bounds.push(bound);
    await yieldToLoop();
  }
}

function summaryOf(parts: readonly StagedSums[]): RestatementSummary {
  let figures = ZERO_FIGURES;
  const months = new Set<string>();
  let affected = 0;
  for (const part of parts) {
    affected += part.n;
    figures = figuresAdd(figures, part.figures);
    for (const day of part.days) months.add(new Date(day * 86_400_000).toISOString().slice(0, 7));
  }
  return { affected_events: affected, delta: figuresView(figures), months: [...months].sort() };
}

export async function readRestatement(db: DbOrTrx, orgId: string, id: string): Promise<RestatementRow> {
  const row = await db
    .selectFrom('restatements')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .executeTakeFirst();
  if (row === undefined) throw notFound(`Restatement ${id}`);
  return row;
}

/**
 * Publishes the staged entries in one transaction (applyRestatement); `published` is false when
 * the restatement was applied already.
 */
async function publish(
  ctx: OrgCtx,
  options: ApplyOptions,
): Promise<{ view: ReturnType<typeof restatementView>; published: boolean }> {
  const { restatementId, orgId } = options;
  const at = ctx.clock.now();
  const chunk = Math.max(1, options.publishChunk ?? PUBLISH_CHUNK[ctx.engine]);
  const bounds = await chunkBounds(ctx.db, ctx.engine, restatementId, chunk);
  return ctx.db.transaction().execute(async (trx) => {
    if (ctx.engine === 'postgres')
      await sql`SELECT pg_advisory_xact_lock(${ORG_FIGURES_LOCK}, hashtext(${orgId}))`.execute(trx);
    else await takeSqliteWriteLock(trx);
    const state = await readRestatement(trx, orgId, restatementId);
    if (state.status === 'applied') return { view: restatementView(state), published: false };
    if (state.status !== 'staging') throw new AppError('bad_request', `The restatement is ${state.status}.`);
    // Entries whose event changed since they were staged: repriced again from the figures now.
    // Only an event with an entry written since the walk began can have changed (adjust_from).
    const from = state.adjust_from ?? 0;
    const { rows: stale } = await sql<{ event_id: string }>`
      SELECT s.event_id FROM restatement_staging s
      WHERE s.restatement_id = ${restatementId}
        AND s.event_id IN (
          SELECT a.event_id FROM adjustments a
          WHERE a.org_id = ${orgId} AND a.ingest_seq >= ${ctx.engine === 'postgres' ? sql`${String(from)}::xid8` : sql`${Number(from)}`})
        AND s.based_on <> (SELECT COUNT(*) FROM adjustments a WHERE a.org_id = s.org_id AND a.event_id = s.event_id)`.execute(
      trx,
    );
    for (let i = 0; i < stale.length; i += 500) {
      const ids = stale.slice(i, i + 500).map((r) => r.event_id);
      const events = await trx
        .selectFrom('events')
        .selectAll()
        .where('org_id', '=', orgId)
        .where('id', 'in', ids)
        .execute();
      const found = await eventLedgers(trx, orgId, events);
      await trx
        .deleteFrom('restatement_staging')
        .where('restatement_id', '=', restatementId)
        .where('event_id', 'in', ids)
        .execute();
      const rows = events.flatMap((event) => {
        const { ledger, review } = found.get(event.id) as { ledger: EventLedger; review: ReviewRow | null };
        const row = stagedRow(
          restatementId,
          event,
          ledger,
          options.reprice(event, currentOf(ledger, review)),
        );
        return row === null ? [] : [row];
      });
      if (rows.length > 0) await trx.insertInto('restatement_staging').values(rows).execute();
    }
    // The entries' positions in commit order. PostgreSQL: this transaction's id (the column's
    // default), one position for all. SQLite: the next numbers after the largest stored, under
    // the write lock, one per chunk, so that the folding stage, which takes a position whole,
    // can fold a large publication over several passes of its usual size instead of one that
    // holds the main file's write lock for all of it. No other writer can number an entry
    // between them, and reports read the publication whole or not at all either way.
    let firstSeq = 0;
    if (ctx.engine === 'sqlite') {
      const row = await trx
        .selectFrom('adjustments')
        .select((eb) => eb.fn.max('ingest_seq').as('last'))
        .executeTakeFirst();
      firstSeq = Number(row?.last ?? 0) + 1;
    }
    const seqColumn = ctx.engine === 'sqlite' ? sql`, ingest_seq` : sql``;
    const seqValue = (i: number) => (ctx.engine === 'sqlite' ? sql`, ${firstSeq + i}` : sql``);
    // A chunk of staged rows at a time, in event id order, with their sums for the message; the
    // event loop runs between two chunks, the transaction stays open.
    const parts: StagedSums[] = [];
    let adjusted = 0;
    for (let i = 0; i <= bounds.length; i++) {
      await yieldToLoop();
      const after = bounds[i - 1] ?? null;
      const upTo = bounds[i] ?? null;
      const range = sql`${after === null ? sql`` : sql`AND event_id > ${after}`} ${upTo === null ? sql`` : sql`AND event_id <= ${upTo}`}`;
      parts.push(await stagedSums(trx, restatementId, after, upTo));
      const inserted = await sql`
        INSERT INTO adjustments (id, org_id, event_id, cause, cause_id, agent_id, task_type, outcome, client_id,
          occurred_at, hours_saved_micros, cost_saved_micros, agent_cost_micros, review_hours_micros,
          review_cost_micros, baseline_minutes, hourly_rate_micros, created_at${seqColumn})
        SELECT 'adj_' || restatement_id || '_' || event_id, org_id, event_id, 'restatement', restatement_id,
          agent_id, task_type, outcome, client_id, occurred_at, hours_saved_micros, cost_saved_micros,
          agent_cost_micros, review_hours_micros, review_cost_micros, baseline_minutes, hourly_rate_micros,
          ${at.getTime()}${seqValue(i)}
        FROM restatement_staging WHERE restatement_id = ${restatementId} ${range}`.execute(trx);
      adjusted += Number(inserted.numAffectedRows ?? 0);
    }
    const summary = summaryOf(parts);
    await trx
      .updateTable('restatements')
      .set({ status: 'applied', applied_at: at.getTime(), events_adjusted: adjusted })
      .where('id', '=', restatementId)
      .execute();
    const applied = await readRestatement(trx, orgId, restatementId);
    const view = restatementView(applied);
    const message: RestatedMessage = { restatement: { ...view, change: options.change ?? null }, ...summary };
    await recordAudit(
      { ...ctx, db: trx },
      {
        action: 'figures.restated',
        target: `restatement:${restatementId}`,
        before: null,
        after: message,
        reason: options.reason,
      },
    );
    await enqueueMessage({
      db: trx,
      orgId,
      type: 'figures.restated',
      payload: message,
      webhookIds: await subscribedTo(trx, orgId, 'figures.restated'),
      at,
      firstDelaySeconds: ctx.config.webhookRetryDelaysSeconds[0] ?? 0,
    });
    // SQLite: the commit does not checkpoint the WAL it grew (the checkpoint thread does, off
    // the event loop, storage/checkpointer.ts); restored once committed.
    if (ctx.engine === 'sqlite') await sql`PRAGMA wal_autocheckpoint = 0`.execute(trx);
    await options.beforePublish?.();
    return { view, published: true };
  });
}

/** Marks a restatement left `staging` abandoned, then removes what it staged; an applied one stays. */
export async function abandonRestatement(
  ctx: OrgCtx,
  restatementId: string,
): Promise<ReturnType<typeof restatementView>> {
  const view = await ctx.db.transaction().execute(async (trx) => {
    const state = await readRestatement(trx, ctx.org.id, restatementId);
    if (state.status === 'applied')
      throw new AppError('bad_request', 'An applied restatement stays; restate again instead.');
    await trx
      .updateTable('restatements')
      .set({ status: 'abandoned' })
      .where('id', '=', restatementId)
      .execute();
    return restatementView(await readRestatement(trx, ctx.org.id, restatementId));
  });
  await removeStaged(ctx.db, restatementId);
  return view;
}

/** The webhooks subscribed to `type` now and not deactivated. */
export async function subscribedTo(db: DbOrTrx, orgId: string, type: string): Promise<string[]> {
  const hooks = await db
    .selectFrom('webhooks')
    .select(['id', 'event_types'])
    .where('org_id', '=', orgId)
    .where('deleted_at', 'is', null)
    .where('status', '<>', 'deactivated')
    .execute();
  return hooks.filter((h) => (JSON.parse(h.event_types) as string[]).includes(type)).map((h) => h.id);
}
