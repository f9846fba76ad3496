import { Type } from '@sinclair/typebox';
import { named, Nullable } from '../http/schemas.js';
import { ASSUMPTION_KINDS } from './kinds.js';

/** An instant (RFC 3339 with a zone) or a UTC day (YYYY-MM-DD = its 00:00 UTC). */
export const EffectiveFrom = Type.String({
  pattern: '^\\d{4}-\\d{2}-\\d{2}([Tt ].+)?$',
  maxLength: 40,
  description:
    'From when the value applies: an RFC 3339 timestamp with a zone, or a date YYYY-MM-DD (00:00 UTC). Default now; a past date is a restatement.',
});

export const AssumptionKindSchema = named(
  'AssumptionKind',
  Type.Unsafe<(typeof ASSUMPTION_KINDS)[number]>({ type: 'string', enum: [...ASSUMPTION_KINDS] }),
);

export const AssumptionVersionSchema = named(
  'AssumptionVersion',
  Type.Object({
    id: Type.String(),
    kind: AssumptionKindSchema,
    key: Nullable(Type.String({ description: 'Task type, category or outcome; null for the organisation' })),
    value: Nullable(
      Type.Number({
        description:
          'Minutes for baselines, currency units per hour for rates, 0–1 for credits; null = unset',
      }),
    ),
    effective_from: Nullable(Type.String({ format: 'date-time', description: 'null = from the beginning' })),
    recorded_at: Type.String({ format: 'date-time' }),
    actor_key_id: Nullable(Type.String()),
    reason: Nullable(Type.String()),
    restatement_id: Nullable(Type.String()),
    status: Type.Unsafe<'superseded' | 'in_force' | 'scheduled'>({
      type: 'string',
      enum: ['superseded', 'in_force', 'scheduled'],
    }),
  }),
);

const ChangeFields = {
  kind: AssumptionKindSchema,
  key: Type.Optional(
    Nullable(
      Type.String({
        maxLength: 200,
        description:
          'The task type (baseline_override, custom_*), category (category_hourly_rate) or outcome (outcome_credit); absent for the organisation-wide kinds',
      }),
    ),
  ),
  value: Nullable(
    Type.Number({
      description: 'Minutes for baselines, currency units per hour for rates, 0–1 for credits; null = unset',
    }),
  ),
  effective_from: EffectiveFrom,
};

export const ChangeBody = named(
  'AssumptionChange',
  Type.Object(ChangeFields, { additionalProperties: false }),
);

export const RestatementBody = named(
  'RestatementRequest',
  Type.Object(
    { ...ChangeFields, reason: Type.String({ minLength: 1, maxLength: 1000 }) },
    { additionalProperties: false },
  ),
);

const Totals = Type.Object({
  events: Type.Integer(),
  hours_saved: Type.Number(),
  cost_saved: Type.Number(),
  agent_cost: Type.Number(),
  net_saved: Type.Number(),
});

const EventFigures = Type.Object({
  resolved_baseline_minutes: Type.Number(),
  resolved_hourly_rate: Type.Number(),
  hours_saved: Type.Number(),
  cost_saved: Type.Number(),
  net_saved: Type.Number(),
});

const group = (key: string) =>
  Type.Object({
    [key]: Nullable(Type.String()),
    events_affected: Type.Integer(),
    before: Totals,
    after: Totals,
  });

export const PreviewSchema = named(
  'RestatementPreview',
  Type.Object({
    restatement: Type.Boolean({ description: 'true when effective_from lies in the past' }),
    affected_events: Type.Integer(),
    delta: Type.Object({ hours_saved: Type.Number(), cost_saved: Type.Number(), net_saved: Type.Number() }),
    events: Type.Array(
      Type.Object({
        event_id: Type.String(),
        occurred_at: Type.String({ format: 'date-time' }),
        agent_id: Type.String(),
        task_type: Type.String(),
        client_id: Nullable(Type.String()),
        before: EventFigures,
        after: EventFigures,
      }),
      { description: 'The first 50 affected events, oldest first' },
    ),
    months: Type.Array(
      Type.Object({
        month: Type.String(),
        events_affected: Type.Integer(),
        before: Totals,
        after: Totals,
        by_agent: Type.Array(group('agent_id')),
        by_task_type: Type.Array(group('task_type')),
        by_client: Type.Array(group('client_id')),
      }),
    ),
  }),
);

export const RestatementSchema = named(
  'Restatement',
  Type.Object({
    id: Type.String(),
    reason: Type.String(),
    status: Type.Unsafe<'staging' | 'applied' | 'abandoned'>({
      type: 'string',
      enum: ['staging', 'applied', 'abandoned'],
      description: 'staging: being applied (poll GET /v1/restatements/{id}); applied: in every report',
    }),
    events_seen: Type.Integer({ description: 'Events walked so far' }),
    events_adjusted: Type.Integer({ description: 'Events given an adjustment (once applied)' }),
    created_at: Type.String({ format: 'date-time' }),
    applied_at: Nullable(Type.String({ format: 'date-time' })),
    version: AssumptionVersionSchema,
  }),
);

export const RestatementParams = Type.Object({
  restatement_id: Type.String({ maxLength: 100 }),
});

export const HistoryQuery = Type.Object(
  {
    kind: Type.Optional(AssumptionKindSchema),
    key: Type.Optional(Type.String({ maxLength: 200 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 })),
    cursor: Type.Optional(Type.String({ maxLength: 100 })),
  },
  { additionalProperties: false },
);

export const HistoryListSchema = named(
  'AssumptionHistory',
  Type.Object({ data: Type.Array(AssumptionVersionSchema), next_cursor: Nullable(Type.String()) }),
);
