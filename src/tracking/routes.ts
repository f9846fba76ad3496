import type { FastifyError, FastifyInstance } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { AppError } from '../errors.js';
import { orgCtx } from '../http/app-types.js';
import { consumeRate } from '../http/auth.js';
import { errorBody, toAppError } from '../http/errors.js';
import { batchItemIssues, invalidEvent } from './batch-items.js';
import { described, errorResponses, ListQueryFields } from '../http/schemas.js';
import { getEvent, listEvents } from './events.js';
import {
  BatchBody,
  BatchResponseSchema,
  EventListSchema,
  StoredEventSchema,
  TrackBody,
  TrackHeaders,
} from './schema.js';
import { trackEvent } from './track.js';

const BATCH_BODY_LIMIT_BYTES = 5 * 1024 * 1024;

const EventsQuery = Type.Object(
  {
    agent_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    task_type: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    awaiting_review: Type.Optional(
      Type.Boolean({ description: 'true: only needs_review events without a review yet' }),
    ),
    ...ListQueryFields,
  },
  { additionalProperties: false },
);

export function registerTrackingRoutes(app: FastifyInstance): void {
  app.post<{ Body: Static<typeof TrackBody>; Headers: Static<typeof TrackHeaders> }>(
    '/v1/track',
    {
      config: { rateClass: 'track' },
      schema: {
        tags: ['tracking'],
        operationId: 'trackEvent',
        summary: 'Record one finished agent task',
        body: TrackBody,
        headers: TrackHeaders,
        response: {
          201: described(
            'The stored event; with Idempotent-Replayed: true, the event first stored under this key',
            StoredEventSchema,
          ),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const result = await trackEvent({
        ctx: orgCtx(app, request),
        input: request.body,
        idempotencyKey: request.headers['idempotency-key'] ?? null,
      });
      if (result.replayed) reply.header('Idempotent-Replayed', 'true');
      else app.metrics.eventsTracked.inc();
      return reply.code(201).send(result.event);
    },
  );

  app.post<{ Body: Static<typeof BatchBody> }>(
    '/v1/track/batch',
    {
      bodyLimit: BATCH_BODY_LIMIT_BYTES,
      // An invalid event fails only itself (DESIGN §4): the handler sorts the issues by event.
      attachValidation: true,
      // Counted per event once the body is read, so a batch can be partly admitted.
      config: { rateClass: 'none', itemsAt: 'events' },
      schema: {
        tags: ['tracking'],
        operationId: 'trackBatch',
        summary: 'Record up to 500 finished agent tasks; each succeeds or fails on its own',
        body: BatchBody,
        response: {
          207: described('One result per event, in input order', BatchResponseSchema),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      // First: with the schema's issues attached, the body may not even be an object.
      const invalid = batchItemIssues(request.validationError, request.body);
      const { events } = request.body;
      const granted = await consumeRate(app, request, reply, 'track', events.length);
      if (granted < 1)
        throw new AppError('rate_limited', 'Too many requests for this API key; retry in a second.');
      const ctx = orgCtx(app, request);
      // A backfill goes at the pace the folding stage folds it (the ingest gate, app.ingestGate).
      const heldMs = (await app.ingestGate?.admit()) ?? 0;
      if (heldMs > 0) {
        app.metrics.ingestHeldBatches.inc();
        app.metrics.ingestHeldSeconds.inc(heldMs / 1000);
      }
      // Submitted together, the admitted events share one transaction; each still succeeds or
      // fails on its own.
      const settled = await Promise.allSettled(
        events.slice(0, granted).map((event, i) => {
          // An invalid event may be anything, null included: only a valid one is taken apart.
          const issues = invalid.get(i);
          if (issues) return Promise.reject(invalidEvent(issues));
          const { idempotency_key: idempotencyKey, ...input } = event;
          return trackEvent({
            ctx,
            input,
            idempotencyKey: idempotencyKey ?? null,
            path: `/body/events/${i}`,
          });
        }),
      );
      const data = events.map((_event, i) => {
        const result = settled[i];
        if (result === undefined) {
          const error = new AppError(
            'rate_limited',
            'Over the per-second track rate; send this event again.',
          );
          return { status: 429, error: errorBody(error.code, error.message, request.id).error };
        }
        if (result.status === 'rejected') {
          // An event the database refused fails alone too (the batcher isolates it).
          const error = toAppError(result.reason as FastifyError);
          if (error.code === 'internal_error') request.log.error({ err: result.reason }, 'event not stored');
          return {
            status: error.status,
            error: errorBody(error.code, error.message, request.id, error.details).error,
          };
        }
        if (!result.value.replayed) app.metrics.eventsTracked.inc();
        return {
          status: 201,
          event: result.value.event,
          ...(result.value.replayed ? { replayed: true } : {}),
        };
      });
      return reply.code(207).send({ data });
    },
  );

  app.get<{ Querystring: Static<typeof EventsQuery> }>(
    '/v1/events',
    {
      schema: {
        tags: ['tracking'],
        operationId: 'listEvents',
        summary: 'List stored events, newest first',
        querystring: EventsQuery,
        response: {
          200: described('A page of events; next_cursor fetches the next one', EventListSchema),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const q = request.query;
      return listEvents({
        ctx: orgCtx(app, request),
        input: {
          agentId: q.agent_id,
          taskType: q.task_type,
          awaitingReview: q.awaiting_review,
          limit: q.limit,
          cursor: q.cursor,
        },
      });
    },
  );

  app.get<{ Params: { event_id: string } }>(
    '/v1/events/:event_id',
    {
      schema: {
        tags: ['tracking'],
        operationId: 'getEvent',
        summary: 'One stored event',
        params: Type.Object({ event_id: Type.String() }),
        response: { 200: described('The event', StoredEventSchema), ...errorResponses },
      },
    },
    async (request) => getEvent({ ctx: orgCtx(app, request), eventId: request.params.event_id }),
  );
}
