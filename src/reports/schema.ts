import { Type, type TProperties } from '@sinclair/typebox';
import { named } from '../http/schemas.js';
import { ClosedPeriodNoteSchema } from '../periods/schema.js';
import { METRICS, PERIODS } from './params.js';

const literals = <T extends string>(values: readonly T[]) => Type.Union(values.map((v) => Type.Literal(v)));

/** `metadata.KEY=VALUE` filters: top-level metadata keys of letters, digits, `_` and `-`. */
export const METADATA_FILTER = '^metadata\\.[A-Za-z0-9_-]{1,64}$';

const filterFields = {
  period: Type.Optional(literals(PERIODS)),
  agent_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  task_type: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  client_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  outcome: Type.Optional(literals(['success', 'failure', 'needs_review'] as const)),
};

const Top = Type.Integer({ minimum: 1, maximum: 10_000 });

function query<T extends TProperties>(fields: T) {
  return Type.Object(fields, {
    additionalProperties: false,
    patternProperties: { [METADATA_FILTER]: Type.String({ maxLength: 500 }) },
  });
}

const groupedFields = {
  ...filterFields,
  group_by: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  sort: Type.Optional(literals(METRICS)),
  top: Type.Optional(Top),
};

export const GroupedQuery = query({
  ...groupedFields,
  format: Type.Optional(literals(['json', 'csv'] as const)),
});
export const ExportQuery = query({ ...groupedFields, format: Type.Optional(Type.Literal('csv')) });
export const LeaderboardQuery = query({
  ...filterFields,
  metric: Type.Optional(literals(METRICS)),
  top: Type.Optional(Top),
  format: Type.Optional(literals(['json', 'csv'] as const)),
});
export const UsageQuery = Type.Object({}, { additionalProperties: false });

const metricFields = {
  events: Type.Integer(),
  hours_saved: Type.Number(),
  cost_saved: Type.Number(),
  agent_cost: Type.Number(),
  net_saved: Type.Number(),
  review_hours: Type.Number({ description: 'Hours people spent reviewing the events (measured reviews)' }),
  review_cost: Type.Number({ description: "What that review time cost at the events' hourly rates" }),
};
const Group = Type.Record(Type.String(), Type.Union([Type.String(), Type.Null()]));

const Meta = Type.Object({
  period: Type.String(),
  range: Type.Object({
    from: Type.String({ format: 'date-time' }),
    to: Type.String({ format: 'date-time' }),
  }),
  group_by: Type.Array(Type.String()),
  sort: Type.String(),
  total_groups: Type.Integer(),
});

/** Present when the report's window meets a closed month (docs/periods.md). */
const closedPeriods = {
  closed_periods: Type.Optional(Type.Array(ClosedPeriodNoteSchema)),
};

export const ReportSchema = Type.Object({
  meta: Meta,
  currency: Type.String(),
  rows: Type.Array(Type.Object({ group: Group, ...metricFields })),
  ...closedPeriods,
});

export const LeaderboardSchema = Type.Object({
  meta: Meta,
  currency: Type.String(),
  rows: Type.Array(Type.Object({ rank: Type.Integer(), group: Group, ...metricFields })),
  ...closedPeriods,
});

export const UsageSchema = Type.Object({
  plan: Type.String(),
  currency: Type.String(),
  month: Type.String(),
  events_this_month: Type.Integer(),
  events_included_in_plan: Type.Integer(),
  overage_events: Type.Integer(),
  lifetime_events: Type.Integer(),
  projected_overage_eur: Type.Union([Type.Number(), Type.Null()]),
});

// Names in the OpenAPI document (#/components/schemas/…).
named('ReportMeta', Meta);
named('ReportRow', ReportSchema.properties.rows.items);
named('Report', ReportSchema);
named('LeaderboardRow', LeaderboardSchema.properties.rows.items);
named('Leaderboard', LeaderboardSchema);
named('Usage', UsageSchema);
