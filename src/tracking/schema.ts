import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { ErrorObjectSchema, named } from '../http/schemas.js';

/**
 * Upper bounds of the numbers of a track body (README "Limits"). Every value derived from them
 * (micro-units, hours × rate) stays an exact integer in JavaScript and in a 64-bit column, and a
 * report can sum a thousand events at the maxima without overflow.
 */
export const MAX_AGENT_COST = 1_000_000_000;
export const MAX_DURATION_SECONDS = 31_622_400;
export const MAX_TOKENS = 1_000_000_000;
export const MAX_BASELINE_MINUTES = 525_600;

const TokenCount = Type.Integer({ minimum: 0, maximum: MAX_TOKENS });

export const AuditSample = Type.Object(
  {
    input_excerpt: Type.Optional(Type.String({ maxLength: 2000 })),
    output_excerpt: Type.Optional(Type.String({ maxLength: 2000 })),
    model: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    tokens_in: Type.Optional(TokenCount),
    tokens_out: Type.Optional(TokenCount),
  },
  { additionalProperties: false },
);

const trackFields = {
  agent_id: Type.String({ minLength: 1, maxLength: 200 }),
  task_type: Type.String({ minLength: 1, maxLength: 200 }),
  outcome: Type.Union([Type.Literal('success'), Type.Literal('failure'), Type.Literal('needs_review')]),
  agent_duration_seconds: Type.Optional(Type.Number({ minimum: 0, maximum: MAX_DURATION_SECONDS })),
  agent_cost: Type.Optional(Type.Number({ minimum: 0, maximum: MAX_AGENT_COST })),
  model: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  tokens_in: Type.Optional(TokenCount),
  tokens_out: Type.Optional(TokenCount),
  human_baseline_minutes: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: MAX_BASELINE_MINUTES })),
  metadata: Type.Optional(Type.Object({}, { additionalProperties: true })),
  audit_sample: Type.Optional(AuditSample),
  occurred_at: Type.Optional(Type.String({ format: 'date-time' })),
};

/** Body of POST /v1/track (spec §2.1, limits of DESIGN §4). */
export const TrackBody = Type.Object(trackFields, { additionalProperties: false });

export const IdempotencyKey = Type.String({ pattern: '^[\\x20-\\x7E]{1,255}$' });

export const TrackHeaders = Type.Object({ 'idempotency-key': Type.Optional(IdempotencyKey) });

export const BATCH_MAX_EVENTS = 500;

export const BatchBody = Type.Object(
  {
    events: Type.Array(
      Type.Object(
        { ...trackFields, idempotency_key: Type.Optional(IdempotencyKey) },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: BATCH_MAX_EVENTS },
    ),
  },
  { additionalProperties: false },
);

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

/** The stored event (spec §2.2 plus DESIGN §4's extra fields). */
export const StoredEventSchema = Type.Object({
  event_id: Type.String(),
  agent_id: Type.String(),
  task_type: Type.String(),
  outcome: named(
    'Outcome',
    Type.Unsafe<Outcome>({ type: 'string', enum: ['success', 'failure', 'needs_review'] }),
  ),
  resolved_baseline_minutes: Type.Number(),
  resolved_baseline_source: Type.String({ enum: ['request', 'override', 'custom', 'builtin', 'fallback'] }),
  resolved_hourly_rate: Type.Number(),
  currency: Type.String(),
  agent_duration_seconds: Nullable(Type.Number()),
  hours_saved: Type.Number(),
  cost_saved: Type.Number(),
  agent_cost: Nullable(Type.Number()),
  resolved_cost_source: Type.String({ enum: ['provided', 'computed', 'none'] }),
  net_saved: Type.Number(),
  occurred_at: Type.String({ format: 'date-time' }),
  model: Type.Union([Type.String(), Type.Null()]),
  tokens_in: Nullable(Type.Integer()),
  tokens_out: Nullable(Type.Integer()),
  metadata: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()]),
  received_at: Type.String({ format: 'date-time' }),
});

type Outcome = Static<typeof trackFields.outcome>;

// Names in the OpenAPI document (#/components/schemas/…).
named('TrackRequest', TrackBody);
named('TrackBatchRequest', BatchBody);
named('TrackBatchItem', BatchBody.properties.events.items);
named('Event', StoredEventSchema);

export const EventListSchema = named(
  'EventList',
  Type.Object({ data: Type.Array(StoredEventSchema), next_cursor: Nullable(Type.String()) }),
);

/** One answer of a batch, in input order: the stored event, or the error of that event alone. */
export const BatchResultSchema = named(
  'TrackBatchResult',
  Type.Object({
    status: Type.Integer({ description: '201, or the HTTP status this event alone would have had' }),
    event: Type.Optional(StoredEventSchema),
    replayed: Type.Optional(Type.Boolean({ description: 'true when an idempotency key replayed the event' })),
    error: Type.Optional(ErrorObjectSchema),
  }),
);

export const BatchResponseSchema = named(
  'TrackBatchResponse',
  Type.Object({ data: Type.Array(BatchResultSchema) }),
);
