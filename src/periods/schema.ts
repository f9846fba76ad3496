import { Type } from '@sinclair/typebox';
import { named, Nullable, Timestamp } from '../http/schemas.js';
import { MAX_REASON, MONTH_PATTERN } from './months.js';

const metricFields = {
  events: Type.Integer(),
  hours_saved: Type.Number(),
  cost_saved: Type.Number(),
  agent_cost: Type.Number(),
  net_saved: Type.Number(),
  review_hours: Type.Number({ description: 'Measured review time of reviewed events' }),
  review_cost: Type.Number({ description: 'review_hours × the hourly rate in force' }),
};

export const FiguresSchema = named(
  'PeriodFigures',
  Type.Object(metricFields, { description: 'The report metrics of a set of events (DESIGN §7)' }),
);

const Key = Nullable(Type.String());
const breakdowns = {
  by_agent: Type.Array(Type.Object({ agent_id: Key, ...metricFields })),
  by_task_type: Type.Array(Type.Object({ task_type: Key, ...metricFields })),
  by_client: Type.Array(Type.Object({ client_id: Key, ...metricFields })),
};

export const MonthFiguresSchema = named(
  'PeriodMonthFigures',
  Type.Object({ totals: FiguresSchema, ...breakdowns }),
);

export const PeriodParams = Type.Object({
  month: Type.String({ pattern: MONTH_PATTERN, description: 'YYYY-MM, a calendar month in UTC' }),
});

export const ReasonBody = named(
  'PeriodReasonRequest',
  Type.Object(
    {
      reason: Type.String({
        minLength: 1,
        maxLength: MAX_REASON,
        description: 'Why; kept with the audit entry',
      }),
    },
    { additionalProperties: false },
  ),
);

export const StatementQuery = Type.Object(
  { format: Type.Optional(Type.Union([Type.Literal('json'), Type.Literal('csv')])) },
  { additionalProperties: false },
);

const statementFields = {
  id: Type.String(),
  month: Type.String(),
  currency: Type.String(),
  range: Type.Object({ from: Timestamp, to: Timestamp }),
  closed_at: Timestamp,
  closed_by: Nullable(Type.String({ description: 'The API key that closed it; null from the CLI' })),
  reason: Type.String(),
  reopened_at: Nullable(Timestamp),
  reopened_by: Nullable(Type.String()),
  reopen_reason: Nullable(Type.String()),
  totals: FiguresSchema,
  ...breakdowns,
  assumptions: Type.Unknown({
    description:
      'The assumptions at closing: settings, baseline overrides and custom task types as they stood, and `versions`, the assumption versions in force during the month',
  }),
};

export const StatementSchema = named('PeriodStatement', Type.Object(statementFields));

export const PeriodSchema = named(
  'Period',
  Type.Object({
    status: Type.Union([Type.Literal('open'), Type.Literal('closed')]),
    ...statementFields,
  }),
);

export const StatementListSchema = named(
  'PeriodStatementList',
  Type.Object({ data: Type.Array(StatementSchema) }),
);

export const PeriodListSchema = named(
  'PeriodList',
  Type.Object({
    data: Type.Array(
      named(
        'PeriodSummary',
        Type.Object({
          month: Type.String(),
          status: Type.Union([Type.Literal('open'), Type.Literal('closed')]),
          statement_id: Type.String(),
          closed_at: Timestamp,
          closed_by: Nullable(Type.String()),
          reason: Type.String(),
          reopened_at: Nullable(Timestamp),
          reopen_reason: Nullable(Type.String()),
        }),
      ),
    ),
  }),
);

const EntrySchema = named(
  'PeriodChangeEntry',
  Type.Object({
    kind: Type.Union([Type.Literal('late_event'), Type.Literal('adjustment')]),
    id: Type.String(),
    event_id: Type.String(),
    at: Timestamp,
    occurred_at: Type.Optional(Timestamp),
    agent_id: Type.String(),
    task_type: Type.String(),
    client_id: Nullable(Type.String()),
    outcome: Type.Optional(Type.String()),
    cause: Type.Optional(Type.String()),
    cause_id: Type.Optional(Type.String()),
    ...metricFields,
  }),
);

export const ChangesSchema = named(
  'PeriodChanges',
  Type.Object({
    month: Type.String(),
    status: Type.Union([Type.Literal('open'), Type.Literal('closed')]),
    statement_id: Type.String(),
    closed_at: Timestamp,
    currency: Type.String(),
    statement: FiguresSchema,
    live: MonthFiguresSchema,
    difference: MonthFiguresSchema,
    entries: Type.Array(EntrySchema),
    entries_total: FiguresSchema,
    entries_truncated: Type.Boolean(),
    unexplained: FiguresSchema,
  }),
);

/** A closed month a report's window meets: its statement's totals and the live difference. */
export const ClosedPeriodNoteSchema = named(
  'ClosedPeriodNote',
  Type.Object({
    month: Type.String(),
    closed_at: Timestamp,
    statement_id: Type.String(),
    statement: FiguresSchema,
    live: FiguresSchema,
    difference: FiguresSchema,
  }),
);
