import { Type, type TSchema } from '@sinclair/typebox';
import { AssumptionVersionSchema, EffectiveFrom } from '../assumptions/schema.js';
import { named } from '../http/schemas.js';
import { CATEGORIES, type Category } from './categories.js';

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

// One `enum` rather than a union of literals, so a bad value yields one clear detail.
export const CategorySchema = Type.Unsafe<Category>({ type: 'string', enum: [...CATEGORIES] });
const Minutes = Type.Number({ exclusiveMinimum: 0, maximum: 525600 });

export const OverrideSchema = Type.Object({
  baseline_minutes_override: Type.Number(),
  original_baseline_minutes: Type.Number(),
  reason: Nullable(Type.String()),
  updated_at: Type.String({ format: 'date-time' }),
});

export const TaskTypeSchema = Type.Object({
  key: Type.String(),
  display_name: Type.String(),
  category: CategorySchema,
  kind: Type.Union([Type.Literal('builtin'), Type.Literal('custom')]),
  status: Type.Union([Type.Literal('active'), Type.Literal('archived')]),
  default_baseline_minutes: Type.Number(),
  effective_baseline_minutes: Type.Number(),
  baseline_source: Nullable(Type.String()),
  hourly_rate: Nullable(Type.Number()),
  override: Nullable(OverrideSchema),
  created_at: Nullable(Type.String({ format: 'date-time' })),
  assumption_history: Type.Array(AssumptionVersionSchema, {
    description: "The versions of the type's baseline (and a custom type's hourly rate), each with its dates",
  }),
});

export const TaskTypeListSchema = Type.Object({ data: Type.Array(TaskTypeSchema) });

export const TaskTypeListQuery = Type.Object(
  {
    category: Type.Optional(CategorySchema),
    include_archived: Type.Optional(Type.Boolean({ default: false })),
  },
  { additionalProperties: false },
);

export const CreateTaskTypeBody = Type.Object(
  {
    key: Type.String({ pattern: '^[a-z][a-z0-9_]{0,63}$' }),
    display_name: Type.String({ minLength: 1, maxLength: 200 }),
    category: CategorySchema,
    default_baseline_minutes: Minutes,
    baseline_source: Type.Optional(Type.String({ maxLength: 500 })),
    hourly_rate: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 1_000_000 }))),
  },
  { additionalProperties: false },
);

export const OverrideBody = Type.Object(
  {
    baseline_minutes_override: Minutes,
    reason: Type.Optional(Type.String({ maxLength: 1000 })),
    effective_from: Type.Optional(EffectiveFrom),
  },
  { additionalProperties: false },
);

export const RemoveOverrideQuery = Type.Object(
  { effective_from: Type.Optional(EffectiveFrom) },
  { additionalProperties: false },
);

// No pattern: a key that cannot exist is simply not found.
export const TaskTypeParams = Type.Object({ key: Type.String({ minLength: 1, maxLength: 200 }) });

// Names in the OpenAPI document (#/components/schemas/…).
named('Category', CategorySchema);
named('TaskTypeOverride', OverrideSchema);
named('TaskType', TaskTypeSchema);
named('TaskTypeList', TaskTypeListSchema);
named('CreateTaskTypeRequest', CreateTaskTypeBody);
named('OverrideRequest', OverrideBody);
