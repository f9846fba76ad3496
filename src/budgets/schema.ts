import { Type } from '@sinclair/typebox';
import { ListQueryFields, named, Nullable, Timestamp } from '../http/schemas.js';
import { BUDGET_SCOPES, MAX_AMOUNT } from './budgets.js';

const Scope = named(
  'BudgetScope',
  Type.Unsafe<(typeof BUDGET_SCOPES)[number]>({
    type: 'string',
    enum: [...BUDGET_SCOPES],
    description: 'org (the whole organisation), agent, client or task_type',
  }),
);
const Name = Type.String({ minLength: 1, maxLength: 200 });
const ScopeValue = Type.String({ minLength: 1, maxLength: 200 });
const Amount = Type.Number({
  exclusiveMinimum: 0,
  maximum: MAX_AMOUNT,
  description: 'Monthly agent spend allowed, in the organisation currency',
});
const Thresholds = Type.Array(Type.Integer({ minimum: 1, maximum: 1000 }), {
  minItems: 1,
  maxItems: 10,
  uniqueItems: true,
  description: 'Alert thresholds in whole percent of the amount (default 50, 80, 100)',
});

export const CreateBudgetBody = named(
  'CreateBudgetRequest',
  Type.Object(
    {
      name: Name,
      scope: Scope,
      scope_value: Type.Optional(
        Nullable({ ...ScopeValue, description: 'The agent id, client id or task type; absent for org' }),
      ),
      amount: Amount,
      thresholds: Type.Optional(Thresholds),
    },
    { additionalProperties: false },
  ),
);

export const UpdateBudgetBody = named(
  'UpdateBudgetRequest',
  Type.Object(
    {
      name: Type.Optional(Name),
      scope: Type.Optional(Scope),
      scope_value: Type.Optional(Nullable(ScopeValue)),
      amount: Type.Optional(Amount),
      thresholds: Type.Optional(Thresholds),
    },
    { additionalProperties: false },
  ),
);

export const BudgetParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });
export const BudgetListQuery = Type.Object(ListQueryFields, { additionalProperties: false });

const BudgetStatusSchema = named(
  'BudgetStatus',
  Type.Object({
    month: Type.String({ description: 'YYYY-MM: the calendar month in UTC, by occurred_at' }),
    state: Type.Unsafe<string>({
      type: 'string',
      enum: ['on_track', 'at_risk', 'exhausted'],
      description:
        'on_track: forecast below the amount; at_risk: the forecast reaches it; exhausted: the spend has',
    }),
    spend: Type.Number({ description: "Agent cost so far this month in the budget's scope" }),
    percent_used: Type.Number({ description: 'spend ÷ amount × 100, to one decimal' }),
    thresholds_crossed: Type.Array(Type.Integer()),
    forecast: Type.Number({ description: "Agent cost forecast for the month's end" }),
    forecast_low: Type.Number(),
    forecast_high: Type.Number(),
    run_out_date: Nullable(
      Type.String({
        description:
          'YYYY-MM-DD the spend reached the amount (exhausted) or is forecast to (at_risk); null when on track',
      }),
    ),
    method: Type.Object({ name: Type.String(), description: Type.String() }),
  }),
);

export const BudgetSchema = named(
  'Budget',
  Type.Object({
    id: Type.String(),
    name: Type.String(),
    scope: Scope,
    scope_value: Nullable(Type.String()),
    amount: Type.Number(),
    currency: Type.String(),
    thresholds: Type.Array(Type.Integer()),
    created_at: Timestamp,
    updated_at: Timestamp,
    status: BudgetStatusSchema,
  }),
);

export const BudgetListSchema = named(
  'BudgetList',
  Type.Object({ data: Type.Array(BudgetSchema), next_cursor: Nullable(Type.String()) }),
);
