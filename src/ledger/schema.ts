import { Type } from '@sinclair/typebox';
import { Nullable, named } from '../http/schemas.js';
import { IdempotencyKey, MAX_BASELINE_MINUTES, StoredEventSchema } from '../tracking/schema.js';
import { VERDICTS } from './figures.js';

const Verdict = named(
  'ReviewVerdict',
  Type.Union(
    VERDICTS.map((v) => Type.Literal(v)),
    { description: 'accepted and corrected save the baseline minus the review time; rejected saves nothing' },
  ),
);

export const ReviewBody = named(
  'ReviewRequest',
  Type.Object(
    {
      review_minutes: Type.Number({
        minimum: 0,
        maximum: MAX_BASELINE_MINUTES,
        description: 'Minutes a person spent reviewing (and fixing) the agent’s work',
      }),
      verdict: Verdict,
      reviewer: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
      note: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
    },
    { additionalProperties: false },
  ),
);

export const ReviewHeaders = Type.Object({ 'idempotency-key': Type.Optional(IdempotencyKey) });
export const EventParams = Type.Object({ event_id: Type.String({ minLength: 1, maxLength: 200 }) });

export const FiguresSchema = named(
  'EventFigures',
  Type.Object({
    hours_saved: Type.Number(),
    cost_saved: Type.Number(),
    agent_cost: Type.Number(),
    net_saved: Type.Number(),
    review_hours: Type.Number(),
    review_cost: Type.Number(),
  }),
);

export const ReviewSchema = named(
  'Review',
  Type.Object({
    id: Type.String(),
    event_id: Type.String(),
    review_minutes: Type.Number(),
    verdict: Verdict,
    reviewer: Nullable(Type.String()),
    note: Nullable(Type.String()),
    hours_saved: Type.Number({ description: 'The hours saved the review set' }),
    cost_saved: Type.Number(),
    review_hours: Type.Number(),
    review_cost: Type.Number(),
    created_at: Type.String({ format: 'date-time' }),
  }),
);

export const ReviewedEventSchema = named(
  'ReviewedEvent',
  Type.Composite([
    StoredEventSchema,
    Type.Object({
      current: FiguresSchema,
      review: Nullable(ReviewSchema),
    }),
  ]),
);

export const ReviewResultSchema = named(
  'ReviewResult',
  Type.Object({ review: ReviewSchema, event: ReviewedEventSchema }),
);

export const AdjustmentSchema = named(
  'Adjustment',
  Type.Object({
    id: Type.String(),
    event_id: Type.String(),
    cause: Type.Union([Type.Literal('review'), Type.Literal('restatement')]),
    cause_id: Type.String(),
    hours_saved: Type.Number(),
    cost_saved: Type.Number(),
    agent_cost: Type.Number(),
    net_saved: Type.Number(),
    review_hours: Type.Number(),
    review_cost: Type.Number(),
    baseline_minutes: Nullable(Type.Number()),
    hourly_rate: Nullable(Type.Number()),
    created_at: Type.String({ format: 'date-time' }),
  }),
);

export const EventAdjustmentsSchema = named(
  'EventAdjustments',
  Type.Object({
    event_id: Type.String(),
    original: FiguresSchema,
    current: FiguresSchema,
    review: Nullable(ReviewSchema),
    data: Type.Array(AdjustmentSchema),
  }),
);

export const EventReviewsSchema = named(
  'EventReviews',
  Type.Object({ event_id: Type.String(), data: Type.Array(ReviewSchema) }),
);
