import type { OrgCtx } from '../context.js';
import { fromMicros } from '../money.js';
import type { ReportFilters } from '../reports/params.js';
import { buildReport } from '../reports/report.js';
import { DAY_MS } from '../reports/rollups.js';
import { figuresOf, figuresView, type Figures } from './figures.js';
import { PROFILE_DAYS, forecastMonth, type Band, type MonthForecast } from './method.js';

/** The organisation's first event's day: its history starts there (forecast method choice). */
async function firstEventDay(ctx: OrgCtx): Promise<number | null> {
  const row = await ctx.db
    .selectFrom('events')
    .select('occurred_at')
    .where('org_id', '=', ctx.org.id)
    .orderBy('occurred_at')
    .limit(1)
    .executeTakeFirst();
  return row === undefined ? null : Math.floor(Number(row.occurred_at) / DAY_MS);
}

/**
 * The current month's forecast for the events matching `filters` (agent, task type, client,
 * outcome, metadata: the report filters). Its figures come from the report verb by day (exact,
 * with the events not folded yet), over the month so far and the 4 weeks before today; the
 * month is the calendar month in UTC by occurred_at, like every report.
 */
export async function buildForecast({
  ctx,
  filters,
}: {
  ctx: OrgCtx;
  filters: ReportFilters;
}): Promise<MonthForecast> {
  const now = ctx.clock.now().getTime();
  const today = Math.floor(now / DAY_MS);
  const date = new Date(now);
  const monthStart = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
  const from = Math.min(monthStart, (today - PROFILE_DAYS) * DAY_MS);
  const [firstDay, report] = await Promise.all([
    firstEventDay(ctx),
    buildReport({
      ctx,
      input: { period: '90d', groupBy: ['day'], sort: 'events', top: null, filters },
      // Up to now, this very millisecond included (as every report's window).
      options: { range: { from, to: now + 1 } },
    }),
  ]);
  const days = new Map<number, Figures>();
  for (const row of report.rows) {
    const day = row.group.day;
    if (day) days.set(Date.parse(`${day}T00:00:00.000Z`) / DAY_MS, figuresOf(row));
  }
  return forecastMonth({ now, firstDay, days });
}

export const dayText = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10);

const daysText = (n: number) => `${n} ${n === 1 ? 'day' : 'days'}`;

/** The days left in the month, to two decimals (today's rest counts for its share). */
export function daysLeft(f: MonthForecast): number {
  return Math.round(((f.monthEnd * DAY_MS - f.now) / DAY_MS) * 100) / 100;
}

/** The method in a sentence, with the dates it rests on (shown in the API answer and on pages). */
export function methodSentence(f: MonthForecast): string {
  const first = f.basis[0];
  const last = f.basis[f.basis.length - 1];
  const left = `${daysLeft(f)} days left in the month`;
  if (f.method === 'none' || first === undefined || last === undefined) {
    return 'No complete day of history yet, so nothing is projected: the forecast is the month so far.';
  }
  const span = `${dayText(first)} to ${dayText(last)}`;
  if (f.method === 'weekday_profile') {
    return `The month so far, plus each of the ${left} at the average of the same weekday over the last 4 complete weeks (${span}).`;
  }
  const days =
    f.basis.length === 7
      ? 'the last 7 complete days'
      : `the ${daysText(f.basis.length)} of history there are`;
  return `The month so far, plus the daily average of ${days} (${span}) times the ${left}.`;
}

export const BAND_SENTENCE =
  'The band projects each day left at the lowest and at the highest daily figure of the days it averages.';

/** A band's figures; its net saved is the days' own lowest or highest net, not cost − agent cost. */
function bandView(b: Band) {
  return { ...figuresView(b), net_saved: fromMicros(b.net) };
}

/** The answer of GET /v1/reports/forecast. */
export function forecastView(f: MonthForecast, currency: string, filters: ReportFilters) {
  const first = f.basis[0];
  const last = f.basis[f.basis.length - 1];
  return {
    currency,
    month: dayText(f.monthStart).slice(0, 7),
    as_of: new Date(f.now).toISOString(),
    range: {
      from: new Date(f.monthStart * DAY_MS).toISOString(),
      to: new Date(f.monthEnd * DAY_MS).toISOString(),
    },
    days_left: daysLeft(f),
    filters: {
      agent_id: filters.agentId ?? null,
      task_type: filters.taskType ?? null,
      client_id: filters.clientId ?? null,
      outcome: filters.outcome ?? null,
      metadata: Object.fromEntries(filters.metadata),
    },
    method: {
      name: f.method,
      description: methodSentence(f),
      band: BAND_SENTENCE,
      basis: {
        from: first === undefined ? null : dayText(first),
        to: last === undefined ? null : dayText(last),
        days: f.basis.length,
      },
    },
    month_to_date: figuresView(f.monthToDate),
    forecast: figuresView(f.forecast),
    low: bandView(f.low),
    high: bandView(f.high),
    basis_days: f.basisFigures.map((d) => ({ day: dayText(d.day), ...figuresView(d.figures) })),
    rest_of_month: f.rest.map((r) => ({ day: dayText(r.day), ...figuresView(r.figures) })),
  };
}
