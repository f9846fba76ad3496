import { Type } from '@sinclair/typebox';
import { ListQueryFields, named } from '../http/schemas.js';
import { SUBSCRIBABLE_EVENT_TYPES } from './event-types.js';

const EventTypes = Type.Array(Type.Union(SUBSCRIBABLE_EVENT_TYPES.map((t) => Type.Literal(t))), {
  minItems: 1,
  uniqueItems: true,
});
const Url = Type.String({ minLength: 1, maxLength: 2048 });
const Description = Type.String({ maxLength: 500 });
const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

export const CreateWebhookBody = Type.Object(
  { url: Url, event_types: EventTypes, description: Type.Optional(Description) },
  { additionalProperties: false },
);

export const UpdateWebhookBody = Type.Object(
  {
    url: Type.Optional(Url),
    event_types: Type.Optional(EventTypes),
    description: Type.Optional(Type.Union([Description, Type.Null()])),
    status: Type.Optional(Type.Literal('active')),
  },
  { additionalProperties: false },
);

export const WebhookParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });
export const WebhookListQuery = Type.Object(ListQueryFields, { additionalProperties: false });

const EventTypeSchema = named(
  'WebhookEventType',
  Type.Unsafe<string>({ type: 'string', enum: [...SUBSCRIBABLE_EVENT_TYPES] }),
);
const Timestamp = Type.String({ format: 'date-time' });
const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);

const webhookFields = {
  id: Type.String(),
  url: Type.String(),
  event_types: Type.Array(EventTypeSchema),
  description: Nullable(Type.String()),
  status: named(
    'WebhookStatus',
    Type.Unsafe<string>({
      type: 'string',
      enum: ['active', 'failing', 'deactivated'],
      description: 'active, failing or deactivated',
    }),
  ),
  consecutive_failures: Type.Integer({ description: 'Failed deliveries in a row' }),
  created_at: Timestamp,
};
export const WebhookSchema = Type.Object(webhookFields);
export const CreatedWebhookSchema = Type.Object({
  ...webhookFields,
  secret: Type.String({ description: 'whsec_…; shown in this response only' }),
});
export const WebhookListSchema = Type.Object({
  data: Type.Array(WebhookSchema),
  next_cursor: Nullable(Type.String()),
});

const AttemptSchema = Type.Object({
  attempt: Type.Integer(),
  succeeded: Type.Boolean(),
  status_code: Type.Union([Type.Integer(), Type.Null()]),
  response_body: Nullable(Type.String({ description: 'First 4 KiB of the response' })),
  error: Nullable(Type.String()),
  signature: Nullable(Type.String({ description: 'The X-Tally-Signature header sent' })),
  duration_ms: Type.Integer(),
  started_at: NullableTimestamp,
  finished_at: NullableTimestamp,
});
const DeliverySchema = Type.Object({
  id: Type.String(),
  message_id: Type.String(),
  event_type: Type.String(),
  status: named(
    'DeliveryStatus',
    Type.Unsafe<string>({
      type: 'string',
      enum: ['pending', 'succeeded', 'failed', 'canceled'],
      description: 'pending, succeeded, failed or canceled',
    }),
  ),
  attempt_count: Type.Integer(),
  next_attempt_at: NullableTimestamp,
  created_at: NullableTimestamp,
  updated_at: NullableTimestamp,
  attempts: Type.Array(AttemptSchema),
});
export const DeliveryListSchema = Type.Object({
  data: Type.Array(DeliverySchema),
  next_cursor: Nullable(Type.String()),
});

// Names in the OpenAPI document (#/components/schemas/…).
named('CreateWebhookRequest', CreateWebhookBody);
named('UpdateWebhookRequest', UpdateWebhookBody);
named('Webhook', WebhookSchema);
named('WebhookWithSecret', CreatedWebhookSchema);
named('WebhookList', WebhookListSchema);
named('DeliveryAttempt', AttemptSchema);
named('Delivery', DeliverySchema);
named('DeliveryList', DeliveryListSchema);
