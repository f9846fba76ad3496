import { Type } from '@sinclair/typebox';
import { named, Nullable } from '../http/schemas.js';
import { METADATA_FILTER } from '../reports/schema.js';

const Filter = Type.String({ minLength: 1, maxLength: 200 });

/** The report filters (DESIGN §7), without period, grouping or sort: a forecast is of this month. */
export const forecastFilterFields = {
  agent_id: Type.Optional(Filter),
  task_type: Type.Optional(Filter),
  client_id: Type.Optional(Filter),
  outcome: Type.Optional(
    Type.Union([Type.Literal('success'), Type.Literal('failure'), Type.Literal('needs_review')]),
  ),
};

export const ForecastQuery = Type.Object(forecastFilterFields, {
  additionalProperties: false,
  patternProperties: { [METADATA_FILTER]: Type.String({ maxLength: 500 }) },
});

export const FiguresSchema = named(
  'Figures',
  Type.Object({
    events: Type.Number({ description: 'A count (whole in figures that happened, whole in projections)' }),
    hours_saved: Type.Number(),
    cost_saved: Type.Number(),
    agent_cost: Type.Number(),
    net_saved: Type.Number(),
  }),
);

const DayFigures = named(
  'DayFigures',
  Type.Object({
    day: Type.String({ description: 'YYYY-MM-DD (UTC)' }),
    events: Type.Number(),
    hours_saved: Type.Number(),
    cost_saved: Type.Number(),
    agent_cost: Type.Number(),
    net_saved: Type.Number(),
  }),
);

export const ForecastMethodSchema = named(
  'ForecastMethod',
  Type.Object({
    name: Type.Unsafe<string>({ type: 'string', enum: ['weekday_profile', 'run_rate', 'none'] }),
    description: Type.String({ description: 'The method in a sentence, with the days it rests on' }),
    band: Type.String({ description: 'How the low and high figures are made' }),
    basis: Type.Object({
      from: Nullable(Type.String({ description: 'First day averaged (YYYY-MM-DD)' })),
      to: Nullable(Type.String({ description: 'Last day averaged (YYYY-MM-DD)' })),
      days: Type.Integer(),
    }),
  }),
);

export const ForecastSchema = named(
  'Forecast',
  Type.Object({
    currency: Type.String(),
    month: Type.String({ description: 'YYYY-MM, the calendar month in UTC by occurred_at' }),
    as_of: Type.String({ format: 'date-time' }),
    range: Type.Object({
      from: Type.String({ format: 'date-time' }),
      to: Type.String({ format: 'date-time' }),
    }),
    days_left: Type.Number({ description: 'Days from now to the end of the month, to two decimals' }),
    filters: Type.Object({
      agent_id: Nullable(Type.String()),
      task_type: Nullable(Type.String()),
      client_id: Nullable(Type.String()),
      outcome: Nullable(Type.String()),
      metadata: Type.Record(Type.String(), Type.String()),
    }),
    method: ForecastMethodSchema,
    month_to_date: FiguresSchema,
    forecast: named('ForecastFigures', { ...FiguresSchema, description: "The month's end, point estimate" }),
    low: named('ForecastLow', { ...FiguresSchema, description: 'Low end of the band' }),
    high: named('ForecastHigh', { ...FiguresSchema, description: 'High end of the band' }),
    basis_days: Type.Array(DayFigures, { description: 'The complete days the projection averages' }),
    rest_of_month: Type.Array(DayFigures, {
      description: 'Each day left (first: the rest of today), projected; they add up to the forecast',
    }),
  }),
);
