import type { FastifyInstance } from 'fastify';
import type { Static } from '@sinclair/typebox';
import { orgCtx } from '../http/app-types.js';
import { described, errorResponses } from '../http/schemas.js';
import { adjustmentView } from './adjustments.js';
import { figuresView } from './figures.js';
import { eventReviews, getReviewedEvent, recordReview, reviewView } from './review.js';
import {
  EventAdjustmentsSchema,
  EventParams,
  EventReviewsSchema,
  ReviewBody,
  ReviewHeaders,
  ReviewResultSchema,
} from './schema.js';

type Params = Static<typeof EventParams>;

export function registerLedgerRoutes(app: FastifyInstance): void {
  app.post<{ Params: Params; Body: Static<typeof ReviewBody>; Headers: Static<typeof ReviewHeaders> }>(
    '/v1/events/:event_id/review',
    {
      schema: {
        tags: ['tracking'],
        operationId: 'reviewEvent',
        summary: 'Record a person’s review of an event: its figures become the measured ones',
        params: EventParams,
        body: ReviewBody,
        headers: ReviewHeaders,
        response: {
          201: described(
            'The review and the event with its new figures; with Idempotent-Replayed: true, the review first recorded under this key',
            ReviewResultSchema,
          ),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const result = await recordReview({
        ctx: orgCtx(app, request),
        eventId: request.params.event_id,
        input: request.body,
        idempotencyKey: request.headers['idempotency-key'] ?? null,
      });
      if (result.replayed) reply.header('Idempotent-Replayed', 'true');
      return reply.code(201).send({ review: result.review, event: result.event });
    },
  );

  app.get<{ Params: Params }>(
    '/v1/events/:event_id/adjustments',
    {
      schema: {
        tags: ['tracking'],
        operationId: 'listEventAdjustments',
        summary: 'An event’s original figures, every adjustment in commit order, and its current figures',
        params: EventParams,
        response: { 200: described('The event’s ledger', EventAdjustmentsSchema), ...errorResponses },
      },
    },
    async (request) => {
      const { ledger, review } = await getReviewedEvent({
        ctx: orgCtx(app, request),
        eventId: request.params.event_id,
      });
      return {
        event_id: ledger.event.id,
        original: figuresView(ledger.original),
        current: figuresView(ledger.current),
        review: review === null ? null : reviewView(review),
        data: ledger.adjustments.map(adjustmentView),
      };
    },
  );

  app.get<{ Params: Params }>(
    '/v1/events/:event_id/reviews',
    {
      schema: {
        tags: ['tracking'],
        operationId: 'listEventReviews',
        summary: 'Every review of an event, oldest first; the last is the one in force',
        params: EventParams,
        response: { 200: described('The reviews', EventReviewsSchema), ...errorResponses },
      },
    },
    async (request) => {
      const ctx = orgCtx(app, request);
      const { ledger } = await getReviewedEvent({ ctx, eventId: request.params.event_id });
      const rows = await eventReviews(ctx.db, ctx.org.id, ledger.event.id);
      return { event_id: ledger.event.id, data: rows.map(reviewView) };
    },
  );
}
