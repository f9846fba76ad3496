import { sql } from 'kysely';
import type { OrgCtx } from '../context.js';
import { recordAudit } from '../audit/audit-log.js';
import { AppError, notFound } from '../errors.js';
import { takeSqliteWriteLock, type DbOrTrx, type Engine } from '../storage/db.js';
import type { AdjustmentRow, EventRow, RestatementRow, ReviewRow } from '../storage/schema.js';
import { enqueueMessage } from '../webhooks/outbox.js';
import { ledgerOf, type EventLedger } from './adjustments.js';
import { figuresDelta, figuresView, isZero, type Figures, type Verdict } from './figures.js';

/**
 * Applying a restatement (docs/architecture.md "The adjustments ledger"): the repricing is the
 * caller's (`reprice`), the walk, the staging and the publication are here.
 *
 * - The organisation's events are walked in id order, `batch` at a time, each batch in a short
 *   transaction of its own that writes only `restatement_staging` rows and the restatement's
 *   cursor: tracking is never held, and no reader sees a staged entry.
 * - Then one transaction publishes every staged entry into `adjustments` at once (a position in
 *   commit order for them all), marks the restatement applied, and writes its audit entry and
 *   its `figures.restated` webhook message: reports show the change entirely or not at all.
 * - A kill while staging leaves the restatement `staging` with a cursor: `applyRestatement` with
 *   the same id resumes after it, or `abandonRestatement` removes what was staged. A kill while
 *   publishing rolls the publication back.
 * - An event whose figures changed after its entry was staged (a review meanwhile) is repriced
 *   again at publication, from its figures then: the publication holds the organisation's
 *   figures lock, which every review takes shared (PostgreSQL; SQLite's write lock serialises
 *   them anyway).
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
  /** Tests: after each staged batch commits, with the events seen so far. */
  afterBatch?: (seen: number) => Promise<void> | void;
  /** Tests: inside the publishing transaction, before it commits. */
  beforePublish?: () => Promise<void> | void;
  /** Tests and the benchmark: once the publishing transaction committed. */
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
  if (state.status === 'applied') return restatementView(state);
  if (state.status !== 'staging') throw new AppError('bad_request', `The restatement is ${state.status}.`);

  let cursor = state.cursor;
  let seen = Number(state.events_seen);
  for (;;) {
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
      for (let i = 0; i < rows.length; i += 200)
        await trx
          .insertInto('restatement_staging')
          .values(rows.slice(i, i + 200))
          .onConflict((oc) => oc.columns(['restatement_id', 'event_id']).doNothing())
          .execute();
      return true;
    });
    if (!staging) break;
    cursor = last;
    await options.afterBatch?.(seen);
    if (events.length < batch) break;
  }
  const view = await publish(ctx, options);
  await options.afterPublish?.();
  return view;
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

/** Sums of the staged entries of a restatement, and the months of their events. */
async function stagedSummary(trx: DbOrTrx, restatementId: string): Promise<RestatementSummary> {
  const sums = await trx
    .selectFrom('restatement_staging')
    .where('restatement_id', '=', restatementId)
    .select((eb) => [
      eb.fn.countAll<number>().as('n'),
      eb.fn.sum<number>('hours_saved_micros').as('hours'),
      eb.fn.sum<number>('cost_saved_micros').as('cost'),
      eb.fn.sum<number>('agent_cost_micros').as('agent'),
      eb.fn.sum<number>('review_hours_micros').as('review_hours'),
      eb.fn.sum<number>('review_cost_micros').as('review_cost'),
    ])
    .executeTakeFirst();
  // Days since the epoch (integer division on both engines), then months: few distinct values.
  const { rows: days } = await sql<{ day: number }>`
    SELECT DISTINCT occurred_at / 86400000 AS day FROM restatement_staging
    WHERE restatement_id = ${restatementId}`.execute(trx);
  const months = new Set(days.map((d) => new Date(Number(d.day) * 86_400_000).toISOString().slice(0, 7)));
  const n = (v: unknown) => Number(v ?? 0);
  return {
    affected_events: n(sums?.n),
    delta: figuresView({
      hoursSavedMicros: n(sums?.hours),
      costSavedMicros: n(sums?.cost),
      agentCostMicros: n(sums?.agent),
      reviewHoursMicros: n(sums?.review_hours),
      reviewCostMicros: n(sums?.review_cost),
    }),
    months: [...months].sort(),
  };
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

/** Publishes the staged entries in one transaction (applyRestatement). */
async function publish(ctx: OrgCtx, options: ApplyOptions) {
  const { restatementId, orgId } = options;
  const at = ctx.clock.now();
  return ctx.db.transaction().execute(async (trx) => {
    if (ctx.engine === 'postgres')
      await sql`SELECT pg_advisory_xact_lock(${ORG_FIGURES_LOCK}, hashtext(${orgId}))`.execute(trx);
    else await takeSqliteWriteLock(trx);
    const state = await readRestatement(trx, orgId, restatementId);
    if (state.status === 'applied') return restatementView(state);
    if (state.status !== 'staging') throw new AppError('bad_request', `The restatement is ${state.status}.`);
    // Entries whose event changed since they were staged: repriced again from the figures now.
    const { rows: stale } = await sql<{ event_id: string }>`
      SELECT s.event_id FROM restatement_staging s
      WHERE s.restatement_id = ${restatementId}
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
    const summary = await stagedSummary(trx, restatementId);
    // Every entry at one position in commit order: PostgreSQL's default (this transaction's
    // id); on SQLite the next number, under the write lock.
    let seq = sql`DEFAULT`;
    if (ctx.engine === 'sqlite') {
      const row = await trx
        .selectFrom('adjustments')
        .select((eb) => eb.fn.max('ingest_seq').as('last'))
        .executeTakeFirst();
      seq = sql`${Number(row?.last ?? 0) + 1}`;
    }
    const seqColumn = ctx.engine === 'sqlite' ? sql`, ingest_seq` : sql``;
    const seqValue = ctx.engine === 'sqlite' ? sql`, ${seq}` : sql``;
    const inserted = await sql`
      INSERT INTO adjustments (id, org_id, event_id, cause, cause_id, agent_id, task_type, outcome, client_id,
        occurred_at, hours_saved_micros, cost_saved_micros, agent_cost_micros, review_hours_micros,
        review_cost_micros, baseline_minutes, hourly_rate_micros, created_at${seqColumn})
      SELECT 'adj_' || restatement_id || '_' || event_id, org_id, event_id, 'restatement', restatement_id,
        agent_id, task_type, outcome, client_id, occurred_at, hours_saved_micros, cost_saved_micros,
        agent_cost_micros, review_hours_micros, review_cost_micros, baseline_minutes, hourly_rate_micros,
        ${at.getTime()}${seqValue}
      FROM restatement_staging WHERE restatement_id = ${restatementId}`.execute(trx);
    const adjusted = Number(inserted.numAffectedRows ?? 0);
    await trx.deleteFrom('restatement_staging').where('restatement_id', '=', restatementId).execute();
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
    await options.beforePublish?.();
    return view;
  });
}

/** Removes what a restatement left staged (after a crash) and marks it abandoned; an applied one stays. */
export async function abandonRestatement(
  ctx: OrgCtx,
  restatementId: string,
): Promise<ReturnType<typeof restatementView>> {
  return ctx.db.transaction().execute(async (trx) => {
    const state = await readRestatement(trx, ctx.org.id, restatementId);
    if (state.status === 'applied')
      throw new AppError('bad_request', 'An applied restatement stays; restate again instead.');
    await trx.deleteFrom('restatement_staging').where('restatement_id', '=', restatementId).execute();
    await trx
      .updateTable('restatements')
      .set({ status: 'abandoned' })
      .where('id', '=', restatementId)
      .execute();
    return restatementView(await readRestatement(trx, ctx.org.id, restatementId));
  });
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
