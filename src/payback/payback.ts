import type { OrgCtx } from '../context.js';
import { ZERO, divRound, figuresOf, type Figures } from '../forecast/figures.js';
import { buildForecast } from '../forecast/forecast.js';
import { projectDays, type MonthForecast } from '../forecast/method.js';
import { fromMicros } from '../money.js';
import type { Period } from '../reports/params.js';
import { buildReport } from '../reports/report.js';
import { DAY_MS } from '../reports/rollups.js';
import { getPlanningSettings } from '../settings/planning-settings.js';
import {
  allFixedCosts,
  firstFixedCostMonth,
  fixedCostsIn,
  monthStartMs,
  nextMonth,
  type FixedCost,
} from './fixed-costs.js';

/** How far ahead a payback is looked for before it is called not forecast. */
export const PAYBACK_HORIZON_MONTHS = 60;

export interface PaybackMonth {
  month: string;
  /** False for the current month, whose figures run up to now. */
  complete: boolean;
  figures: Figures;
  fixedCosts: number;
  cumulative: number;
}

export interface ForecastMonth {
  month: string;
  net: number;
  fixedCosts: number;
  cumulative: number;
}

export type PaybackStatus = 'reached' | 'forecast' | 'not_forecast';

export interface Payback {
  now: number;
  fteHoursMicros: number;
  period: { period: Period; from: number; to: number; figures: Figures; fixedCosts: number };
  months: PaybackMonth[];
  status: PaybackStatus;
  paybackMonth: string | null;
  forecastMonths: ForecastMonth[];
  forecast: MonthForecast;
}

const net = (f: Figures) => f.cost - f.agentCost;

/** a ÷ b to `decimals` decimals, halves away from zero; null when b is 0. */
export function ratio(a: number, b: number, decimals: number): number | null {
  if (b === 0) return null;
  const scale = 10n ** BigInt(decimals);
  return Number(divRound(BigInt(a) * scale, BigInt(b))) / Number(scale);
}

/** ROI net of fixed costs, in % to one decimal: (cost saved − agent cost − fixed) ÷ (agent cost + fixed). */
export function roiPercent(f: Figures, fixedCosts: number): number | null {
  return ratio((f.cost - f.agentCost - fixedCosts) * 100, f.agentCost + fixedCosts, 1);
}

/** The existing ROI card: cost saved ÷ agent cost (×), to two decimals. */
export function roiMultiple(f: Figures): number | null {
  return ratio(f.cost, f.agentCost, 2);
}

/** FTE capacity freed: hours saved ÷ working hours per FTE-month, to two decimals. */
export function fteFreed(hoursMicros: number, fteHoursMicros: number): number | null {
  return ratio(hoursMicros, fteHoursMicros, 2);
}

function monthsFrom(first: string, last: string): string[] {
  const months: string[] = [];
  for (let m = first; m <= last; m = nextMonth(m)) months.push(m);
  return months;
}

/**
 * The months ahead at the forecast's rate: the rest of this month, then whole months, each with
 * its fixed costs, until the cumulative figure turns positive or the horizon ends.
 */
function forecastAhead(
  f: MonthForecast,
  costs: readonly FixedCost[],
  currentMonth: string,
  monthToDate: { net: number; fixed: number },
  cumulative: number,
): { forecastMonths: ForecastMonth[]; paybackMonth: string | null } {
  const monthEnd = f.monthEnd * DAY_MS;
  const restNet = f.rest.reduce((s, r) => s + net(r.figures), 0);
  const restFixed = fixedCostsIn(costs, f.now, monthEnd);
  let total = cumulative + restNet - restFixed;
  const forecastMonths: ForecastMonth[] = [
    {
      month: currentMonth,
      net: monthToDate.net + restNet,
      fixedCosts: monthToDate.fixed + restFixed,
      cumulative: total,
    },
  ];
  if (total > 0) return { forecastMonths, paybackMonth: currentMonth };
  let month = currentMonth;
  for (let k = 1; k <= PAYBACK_HORIZON_MONTHS; k++) {
    month = nextMonth(month);
    const from = monthStartMs(month);
    const to = monthStartMs(nextMonth(month));
    const variable = net(projectDays(f, from / DAY_MS, to / DAY_MS));
    const fixed = fixedCostsIn(costs, from, to);
    total += variable - fixed;
    forecastMonths.push({ month, net: variable, fixedCosts: fixed, cumulative: total });
    if (total > 0) return { forecastMonths, paybackMonth: month };
  }
  return { forecastMonths, paybackMonth: null };
}

/**
 * Payback and ROI net of fixed costs (docs/budgets-and-forecasts.md): month by month since the
 * first event or fixed cost, the net saved after fixed costs and its running total; the payback
 * month, when the running total turned positive for good, or its forecast at the rate of this
 * month's forecast; ROI % and FTE capacity for a report period. Every figure of events comes
 * from the report verb (by month, calendar months in UTC by occurred_at).
 */
export async function buildPayback({ ctx, period }: { ctx: OrgCtx; period: Period }): Promise<Payback> {
  const now = ctx.clock.now().getTime();
  const [settings, costs, byMonth, inPeriod, forecast] = await Promise.all([
    getPlanningSettings(ctx.db, ctx.org.id),
    allFixedCosts(ctx),
    buildReport({
      ctx,
      input: { period: 'all', groupBy: ['month'], sort: 'events', top: null, filters: { metadata: [] } },
    }),
    buildReport({
      ctx,
      input: { period, groupBy: ['month'], sort: 'events', top: null, filters: { metadata: [] } },
    }),
    buildForecast({ ctx, filters: { metadata: [] } }),
  ]);
  const figuresByMonth = new Map(byMonth.rows.map((r) => [r.group.month ?? '', figuresOf(r)]));
  const currentMonth = new Date(now).toISOString().slice(0, 7);
  const candidates = [...figuresByMonth.keys(), firstFixedCostMonth(costs) ?? ''].filter(
    (m) => m !== '' && m <= currentMonth,
  );
  const first = candidates.sort()[0];
  let cumulative = 0;
  const months: PaybackMonth[] = (first === undefined ? [] : monthsFrom(first, currentMonth)).map((month) => {
    const start = monthStartMs(month);
    const end = Math.min(monthStartMs(nextMonth(month)), now);
    const figures = figuresByMonth.get(month) ?? ZERO;
    const fixedCosts = fixedCostsIn(costs, start, end);
    cumulative += net(figures) - fixedCosts;
    return { month, complete: month < currentMonth, figures, fixedCosts, cumulative };
  });

  let status: PaybackStatus;
  let paybackMonth: string | null = null;
  let forecastMonths: ForecastMonth[] = [];
  const last = months[months.length - 1];
  if (last !== undefined && last.cumulative > 0) {
    // Paid back in the first month of the last positive run (a later investment can dip it again).
    let i = months.length - 1;
    while (i > 0 && (months[i - 1]?.cumulative ?? 0) > 0) i--;
    status = 'reached';
    paybackMonth = months[i]?.month ?? null;
  } else {
    const ahead = forecastAhead(
      forecast,
      costs,
      currentMonth,
      { net: last === undefined ? 0 : net(last.figures), fixed: last?.fixedCosts ?? 0 },
      cumulative,
    );
    forecastMonths = ahead.forecastMonths;
    paybackMonth = ahead.paybackMonth;
    status = paybackMonth === null ? 'not_forecast' : 'forecast';
  }
  // All time starts with the first fixed cost too, when that comes before the first event.
  const firstCost = firstFixedCostMonth(costs);
  const reportFrom = Date.parse(inPeriod.meta.range.from);
  const from =
    period === 'all' && firstCost !== null ? Math.min(reportFrom, monthStartMs(firstCost)) : reportFrom;
  return {
    now,
    fteHoursMicros: settings.fteHoursPerMonthMicros,
    period: {
      period,
      from,
      to: now,
      figures: inPeriod.rows.map(figuresOf).reduce(
        (a, b) => ({
          events: a.events + b.events,
          hours: a.hours + b.hours,
          cost: a.cost + b.cost,
          agentCost: a.agentCost + b.agentCost,
        }),
        ZERO,
      ),
      fixedCosts: fixedCostsIn(costs, from, now),
    },
    months,
    status,
    paybackMonth,
    forecastMonths,
    forecast,
  };
}

const plainMoney = (micros: number, currency: string) => `${(micros / 1e6).toFixed(2)} ${currency}`;

/**
 * The payback in a sentence: plain amounts (`889.97 EUR`) for the API answer; the pages pass their
 * own money format (`€889.97`).
 */
export function paybackSentence(
  p: Payback,
  currency: string,
  money: (micros: number, currency: string) => string = plainMoney,
): string {
  const last = p.months[p.months.length - 1];
  if (p.status === 'reached') {
    return `Paid back: cumulative net saved after fixed costs turned positive in ${p.paybackMonth ?? ''} and stands at ${money(last?.cumulative ?? 0, currency)}.`;
  }
  const now = money(last?.cumulative ?? 0, currency);
  if (p.status === 'forecast') {
    return `Not yet (${now} so far): at the rate of this month's forecast, cumulative net saved after fixed costs turns positive in ${p.paybackMonth ?? ''}.`;
  }
  return `Not yet (${now} so far), and not within ${PAYBACK_HORIZON_MONTHS / 12} years at the rate of this month's forecast.`;
}

/** The answer of GET /v1/reports/payback. */
export function paybackView(p: Payback, currency: string) {
  const f = p.period.figures;
  const fixed = p.period.fixedCosts;
  return {
    currency,
    as_of: new Date(p.now).toISOString(),
    fte_hours_per_month: fromMicros(p.fteHoursMicros),
    period: {
      period: p.period.period,
      range: { from: new Date(p.period.from).toISOString(), to: new Date(p.period.to).toISOString() },
      events: f.events,
      hours_saved: fromMicros(f.hours),
      cost_saved: fromMicros(f.cost),
      agent_cost: fromMicros(f.agentCost),
      net_saved: fromMicros(net(f)),
      fixed_costs: fromMicros(fixed),
      net_after_fixed_costs: fromMicros(net(f) - fixed),
      roi_multiple: roiMultiple(f),
      roi_percent: roiPercent(f, fixed),
    },
    months: p.months.map((m) => ({
      month: m.month,
      complete: m.complete,
      events: m.figures.events,
      hours_saved: fromMicros(m.figures.hours),
      cost_saved: fromMicros(m.figures.cost),
      agent_cost: fromMicros(m.figures.agentCost),
      net_saved: fromMicros(net(m.figures)),
      fixed_costs: fromMicros(m.fixedCosts),
      net_after_fixed_costs: fromMicros(net(m.figures) - m.fixedCosts),
      cumulative_net_after_fixed_costs: fromMicros(m.cumulative),
      fte_freed: fteFreed(m.figures.hours, p.fteHoursMicros),
    })),
    payback: {
      status: p.status,
      month: p.paybackMonth,
      description: paybackSentence(p, currency),
      forecast_months: p.forecastMonths.map((m) => ({
        month: m.month,
        net_saved: fromMicros(m.net),
        fixed_costs: fromMicros(m.fixedCosts),
        net_after_fixed_costs: fromMicros(m.net - m.fixedCosts),
        cumulative_net_after_fixed_costs: fromMicros(m.cumulative),
      })),
    },
    this_month: {
      month: new Date(p.forecast.monthStart * DAY_MS).toISOString().slice(0, 7),
      hours_saved_forecast: fromMicros(p.forecast.forecast.hours),
      fte_freed_forecast: fteFreed(p.forecast.forecast.hours, p.fteHoursMicros),
    },
  };
}
