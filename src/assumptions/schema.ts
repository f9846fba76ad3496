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
