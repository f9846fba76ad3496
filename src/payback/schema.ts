import { Type } from '@sinclair/typebox';
import { ListQueryFields, named, Nullable, Timestamp } from '../http/schemas.js';
import { PERIODS } from '../reports/params.js';
import { FIXED_COST_KINDS } from './fixed-costs.js';

const Kind = named(
  'FixedCostKind',
  Type.Unsafe<(typeof FIXED_COST_KINDS)[number]>({
    type: 'string',
    enum: [...FIXED_COST_KINDS],
    description: 'monthly (recurring, from start_month to end_month) or one_off (on date)',
  }),
);
const Month = Type.String({ pattern: '^\\d{4}-(0[1-9]|1[0-2])$', description: 'YYYY-MM' });
const Day = Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'YYYY-MM-DD' });
const Amount = Type.Number({ exclusiveMinimum: 0, maximum: 1_000_000_000 });
const Name = Type.String({ minLength: 1, maxLength: 200 });

export const CreateFixedCostBody = named(
  'CreateFixedCostRequest',
  Type.Object(
    {
      name: Name,
      kind: Kind,
      amount: {
        ...Amount,
        description: 'Per month (monthly) or once (one_off), in the organisation currency',
      },
      start_month: Type.Optional(Nullable(Month)),
      end_month: Type.Optional(Nullable(Month)),
      date: Type.Optional(Nullable(Day)),
    },
    { additionalProperties: false },
  ),
);

export const UpdateFixedCostBody = named(
  'UpdateFixedCostRequest',
  Type.Object(
    {
      name: Type.Optional(Name),
      kind: Type.Optional(Kind),
      amount: Type.Optional(Amount),
      start_month: Type.Optional(Nullable(Month)),
      end_month: Type.Optional(Nullable(Month)),
      date: Type.Optional(Nullable(Day)),
    },
    { additionalProperties: false },
  ),
);

export const FixedCostParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });
export const FixedCostListQuery = Type.Object(ListQueryFields, { additionalProperties: false });

export const FixedCostSchema = named(
  'FixedCost',
  Type.Object({
    id: Type.String(),
    name: Type.String(),
    kind: Kind,
    amount: Type.Number(),
    currency: Type.String(),
    start_month: Nullable(Type.String()),
    end_month: Nullable(Type.String()),
    date: Nullable(Type.String()),
    created_at: Timestamp,
    updated_at: Timestamp,
  }),
);

export const FixedCostListSchema = named(
  'FixedCostList',
  Type.Object({ data: Type.Array(FixedCostSchema), next_cursor: Nullable(Type.String()) }),
);

export const PaybackQuery = Type.Object(
  {
    period: Type.Optional(
      Type.Union(
        PERIODS.map((p) => Type.Literal(p)),
        { description: 'Window of the ROI figures (default all); the months always run from the start' },
      ),
    ),
  },
  { additionalProperties: false },
);

const Money = Type.Number();
const Ratio = Nullable(Type.Number());

export const PaybackSchema = named(
  'Payback',
  Type.Object({
    currency: Type.String(),
    as_of: Timestamp,
    fte_hours_per_month: Type.Number(),
    period: Type.Object({
      period: Type.String(),
      range: Type.Object({ from: Timestamp, to: Timestamp }),
      events: Type.Integer(),
      hours_saved: Type.Number(),
      cost_saved: Money,
      agent_cost: Money,
      net_saved: Money,
      fixed_costs: { ...Money, description: 'Fixed costs accrued in the window (monthly ones pro rata)' },
      net_after_fixed_costs: Money,
      roi_multiple: {
        ...Ratio,
        description: 'cost saved ÷ agent cost (the Overview ROI card); null without agent cost',
      },
      roi_percent: {
        ...Ratio,
        description:
          '(cost saved − agent cost − fixed costs) ÷ (agent cost + fixed costs) × 100; null when both are 0',
      },
    }),
    months: Type.Array(
      Type.Object({
        month: Type.String(),
        complete: Type.Boolean({ description: 'False for the current month (figures up to now)' }),
        events: Type.Integer(),
        hours_saved: Type.Number(),
        cost_saved: Money,
        agent_cost: Money,
        net_saved: Money,
        fixed_costs: Money,
        net_after_fixed_costs: Money,
        cumulative_net_after_fixed_costs: Money,
        fte_freed: { ...Ratio, description: 'hours saved ÷ fte_hours_per_month' },
      }),
    ),
    payback: Type.Object({
      status: Type.Unsafe<string>({
        type: 'string',
        enum: ['reached', 'forecast', 'not_forecast'],
        description: 'reached, forecast (month is the forecast) or not_forecast (not within 5 years)',
      }),
      month: Nullable(Type.String({ description: 'YYYY-MM' })),
      description: Type.String(),
      forecast_months: Type.Array(
        Type.Object({
          month: Type.String(),
          net_saved: Money,
          fixed_costs: Money,
          net_after_fixed_costs: Money,
          cumulative_net_after_fixed_costs: Money,
        }),
      ),
    }),
    this_month: Type.Object({
      month: Type.String(),
      hours_saved_forecast: Type.Number(),
      fte_freed_forecast: Ratio,
    }),
  }),
);
