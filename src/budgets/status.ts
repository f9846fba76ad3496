import type { OrgCtx } from '../context.js';
import { divRound } from '../forecast/figures.js';
import { buildForecast, dayText, methodSentence } from '../forecast/forecast.js';
import { runOutDay, type MonthForecast } from '../forecast/method.js';
import { fromMicros } from '../money.js';
import { budgetFields, budgetFilters, type Budget } from './budgets.js';

/**
 * `on_track`: the forecast stays below the amount; `at_risk`: the forecast for the month's end
 * reaches it; `exhausted`: the month's spend has reached it.
 */
export type BudgetState = 'on_track' | 'at_risk' | 'exhausted';

export interface BudgetStatus {
  month: string;
  spendMicros: number;
  forecast: MonthForecast;
  state: BudgetState;
  /** The thresholds the month's spend has reached, ascending. */
  crossed: number[];
  runOut: { day: number; reached: boolean } | null;
}

/** Whether `spendMicros` has reached `percent` % of `amountMicros` (integers: exact). */
export function reached(spendMicros: number, percent: number, amountMicros: number): boolean {
  return BigInt(spendMicros) * 100n >= BigInt(percent) * BigInt(amountMicros);
}

/** A budget's status from the forecast of its scope (agent cost is the spend). */
export function statusOf(budget: Budget, forecast: MonthForecast): BudgetStatus {
  const spend = forecast.monthToDate.agentCost;
  const state: BudgetState =
    spend >= budget.amountMicros
      ? 'exhausted'
      : forecast.forecast.agentCost >= budget.amountMicros
        ? 'at_risk'
        : 'on_track';
  return {
    month: dayText(forecast.monthStart).slice(0, 7),
    spendMicros: spend,
    forecast,
    state,
    crossed: budget.thresholds.filter((t) => reached(spend, t, budget.amountMicros)),
    runOut: runOutDay(forecast, budget.amountMicros),
  };
}

/** Percent of the amount used, to one decimal. */
export function percentUsed(spendMicros: number, amountMicros: number): number {
  return Number(divRound(BigInt(spendMicros) * 1000n, BigInt(amountMicros))) / 10;
}

export function statusView(budget: Budget, status: BudgetStatus) {
  const f = status.forecast;
  return {
    month: status.month,
    state: status.state,
    spend: fromMicros(status.spendMicros),
    percent_used: percentUsed(status.spendMicros, budget.amountMicros),
    thresholds_crossed: status.crossed,
    forecast: fromMicros(f.forecast.agentCost),
    forecast_low: fromMicros(f.low.agentCost),
    forecast_high: fromMicros(f.high.agentCost),
    run_out_date: status.runOut === null ? null : dayText(status.runOut.day),
    method: { name: f.method, description: methodSentence(f) },
  };
}

export function budgetView(budget: Budget, status: BudgetStatus, currency: string) {
  return { ...budgetFields(budget, currency), status: statusView(budget, status) };
}
export type BudgetView = ReturnType<typeof budgetView>;

/**
 * The status of each budget, one forecast per distinct scope (budgets of one scope share it).
 * Every figure is read through the report verb at the same clock.
 */
export async function budgetStatuses({
  ctx,
  budgets,
}: {
  ctx: OrgCtx;
  budgets: readonly Budget[];
}): Promise<BudgetStatus[]> {
  const forecasts = new Map<string, Promise<MonthForecast>>();
  const forecastOf = (budget: Budget) => {
    const key = `${budget.scope} ${budget.scopeValue ?? ''}`;
    let forecast = forecasts.get(key);
    if (!forecast) {
      forecast = buildForecast({ ctx, filters: budgetFilters(budget) });
      forecasts.set(key, forecast);
    }
    return forecast;
  };
  const statuses: BudgetStatus[] = [];
  for (const budget of budgets) statuses.push(statusOf(budget, await forecastOf(budget)));
  return statuses;
}

export async function budgetViews({ ctx, budgets }: { ctx: OrgCtx; budgets: readonly Budget[] }) {
  const statuses = await budgetStatuses({ ctx, budgets });
  return budgets.map((b, i) => {
    const status = statuses[i];
    if (!status) throw new Error('a budget without its status');
    return budgetView(b, status, ctx.org.currency);
  });
}
