import { requireRole } from '../accounts/authorize.js';
import type { OrgCtx } from '../context.js';
import { recordAudit } from '../audit/audit-log.js';
import { notFound, validationError } from '../errors.js';
import { newId } from '../ids.js';
import { fromMicros } from '../money.js';
import type { DbOrTrx } from '../storage/db.js';
import type { EventRow, ReviewRow } from '../storage/schema.js';
import { eventView } from '../tracking/events.js';
import { enqueueMessage } from '../webhooks/outbox.js';
import { insertAdjustments, lockEventFigures, readEventLedger, type EventLedger } from './adjustments.js';
import { figuresDelta, figuresView, isZero, reviewFigures, type Figures, type Verdict } from './figures.js';
import { lockOrgFiguresShared, subscribedTo } from './restatement.js';

export interface ReviewInput {
  review_minutes: number;
  verdict: Verdict;
  reviewer?: string | null;
  note?: string | null;
}

export function reviewView(row: ReviewRow) {
  return {
    id: row.id,
    event_id: row.event_id,
    review_minutes: Number(row.review_minutes),
    verdict: row.verdict as Verdict,
    reviewer: row.reviewer,
    note: row.note,
    hours_saved: fromMicros(Number(row.hours_saved_micros)),
    cost_saved: fromMicros(Number(row.cost_saved_micros)),
    review_hours: fromMicros(Number(row.review_hours_micros)),
    review_cost: fromMicros(Number(row.review_cost_micros)),
    created_at: new Date(Number(row.created_at)).toISOString(),
  };
}

export type ReviewView = ReturnType<typeof reviewView>;

async function findEvent(db: DbOrTrx, orgId: string, eventId: string): Promise<EventRow> {
  const event = await db
    .selectFrom('events')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('id', '=', eventId)
    .executeTakeFirst();
  if (event === undefined) throw notFound(`Event ${eventId}`);
  return event;
}

/** Every review of an event, oldest first; the last is the one in force. */
export async function eventReviews(db: DbOrTrx, orgId: string, eventId: string): Promise<ReviewRow[]> {
  return db
    .selectFrom('reviews')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('event_id', '=', eventId)
    .orderBy('number')
    .execute();
}

/** The event with its current figures and the review in force (GET /v1/events/{id}). */
export function reviewedEventView(ledger: EventLedger, review: ReviewRow | null) {
  return {
    ...eventView(ledger.event),
    current: figuresView(ledger.current),
    review: review === null ? null : reviewView(review),
  };
}

/**
 * Records a review of an event (docs/figures.md): its figures become the measured ones, written
 * as an adjustment from the figures in force (the original and every earlier entry), so that a
 * second review writes the difference from the first. The review, its entry, the audit entry and
 * the `event.reviewed` webhook message commit together. With an idempotency key, a repeat
 * answers the review first recorded under it (`replayed`).
 */
export async function recordReview({
  ctx,
  eventId,
  input,
  idempotencyKey,
}: {
  ctx: OrgCtx;
  eventId: string;
  input: ReviewInput;
  idempotencyKey: string | null;
}): Promise<{ review: ReviewView; event: ReturnType<typeof reviewedEventView>; replayed: boolean }> {
  requireRole(ctx, 'admin');
  if (!Number.isFinite(input.review_minutes) || input.review_minutes < 0)
    throw validationError('/body/review_minutes', 'review_minutes must be a finite number ≥ 0');
  const at = ctx.clock.now();
  return ctx.db.transaction().execute(async (trx) => {
    const orgId = ctx.org.id;
    await lockOrgFiguresShared(trx, ctx.engine, orgId);
    await lockEventFigures(trx, ctx.engine, orgId, eventId);
    if (idempotencyKey !== null) {
      const held = await replay(trx, orgId, eventId, idempotencyKey);
      if (held !== null) return held;
    }
    const event = await findEvent(trx, orgId, eventId);
    const ledger = await readEventLedger(trx, event);
    const earlier = await eventReviews(trx, orgId, eventId);
    const measured = reviewFigures({
      verdict: input.verdict,
      reviewMinutes: input.review_minutes,
      baselineMinutes: ledger.baselineMinutes,
      hourlyRateMicros: ledger.hourlyRateMicros,
    });
    const next: Figures = { ...measured, agentCostMicros: ledger.current.agentCostMicros };
    const row: ReviewRow = {
      id: newId('rev', at),
      org_id: orgId,
      event_id: eventId,
      number: earlier.length + 1,
      review_minutes: input.review_minutes,
      verdict: input.verdict,
      reviewer: input.reviewer ?? null,
      note: input.note ?? null,
      idempotency_key: idempotencyKey,
      actor_key_id: ctx.actorKeyId,
      hours_saved_micros: next.hoursSavedMicros,
      cost_saved_micros: next.costSavedMicros,
      review_hours_micros: next.reviewHoursMicros,
      review_cost_micros: next.reviewCostMicros,
      created_at: at.getTime(),
    };
    const claimed = await trx
      .insertInto('reviews')
      .values(row)
      .onConflict((oc) => oc.columns(['org_id', 'idempotency_key']).doNothing())
      .executeTakeFirst();
    if (Number(claimed.numInsertedOrUpdatedRows ?? 0) === 0) {
      // Another request took the key meanwhile (PostgreSQL waited for it on the unique index).
      const held = await replay(trx, orgId, eventId, idempotencyKey as string);
      if (held !== null) return held;
    }
    const delta = figuresDelta(ledger.current, next);
    if (!isZero(delta))
      await insertAdjustments(trx, ctx.engine, [
        { id: newId('adj', at), event, cause: 'review', causeId: row.id, delta, at: at.getTime() },
      ]);
    const after = await readEventLedger(trx, event);
    const view = reviewedEventView(after, row);
    await recordAudit(
      { ...ctx, db: trx },
      {
        action: 'event.reviewed',
        target: `event:${eventId}`,
        before: figuresView(ledger.current),
        after: { review: reviewView(row), figures: view.current },
        reason: input.note ?? null,
      },
    );
    await enqueueMessage({
      db: trx,
      orgId,
      type: 'event.reviewed',
      payload: { event: view },
      webhookIds: await subscribedTo(trx, orgId, 'event.reviewed'),
      at,
      firstDelaySeconds: ctx.config.webhookRetryDelaysSeconds[0] ?? 0,
    });
    return { review: reviewView(row), event: view, replayed: false };
  });
}

/** The review held by `key`, answered again; a key used for another event is refused. */
async function replay(trx: DbOrTrx, orgId: string, eventId: string, key: string) {
  const held = await trx
    .selectFrom('reviews')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('idempotency_key', '=', key)
    .executeTakeFirst();
  if (held === undefined) return null;
  if (held.event_id !== eventId)
    throw validationError('/headers/idempotency-key', 'This Idempotency-Key was used for another event.');
  const event = await findEvent(trx, orgId, eventId);
  const ledger = await readEventLedger(trx, event);
  const latest = (await eventReviews(trx, orgId, eventId)).at(-1) ?? held;
  return { review: reviewView(held), event: reviewedEventView(ledger, latest), replayed: true };
}

/** An event with its figures, review and entries (GET /v1/events/{id}). */
export async function getReviewedEvent({ ctx, eventId }: { ctx: OrgCtx; eventId: string }) {
  const event = await findEvent(ctx.db, ctx.org.id, eventId);
  const ledger = await readEventLedger(ctx.db, event);
  const review = (await eventReviews(ctx.db, ctx.org.id, eventId)).at(-1) ?? null;
  return { ledger, review, view: reviewedEventView(ledger, review) };
}
