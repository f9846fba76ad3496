import { budgetFields, type Budget } from '../budgets/budgets.js';
import { percentUsed, statusView, type BudgetStatus } from '../budgets/status.js';
import { fromMicros } from '../money.js';
import type { Organization } from '../orgs/organizations.js';
import type { Alert } from './raise.js';

const amount = (micros: number, currency: string) => `${(micros / 1e6).toFixed(2)} ${currency}`;

function budgetPart(budget: Budget, currency: string) {
  const { created_at: _c, updated_at: _u, currency: _cur, ...fields } = budgetFields(budget, currency);
  return fields;
}

function scopeText(budget: Budget): string {
  return budget.scope === 'org'
    ? 'the whole organisation'
    : `${budget.scope.replace('_', ' ')} ${budget.scopeValue ?? ''}`;
}

function forecastPart(status: BudgetStatus | null, budget: Budget) {
  if (status === null) return null;
  const view = statusView(budget, status);
  return {
    agent_cost: view.forecast,
    low: view.forecast_low,
    high: view.forecast_high,
    run_out_date: view.run_out_date,
    method: view.method,
  };
}

/**
 * `budget.threshold_crossed`: the month's agent spend in the budget's scope reached `threshold`
 * % of its amount. `status` is this month's (with the forecast), or null for a month that is
 * over (caught up after downtime): then `spendMicros` is that month's whole spend.
 */
export function thresholdAlert(input: {
  org: Organization;
  budget: Budget;
  month: string;
  threshold: number;
  spendMicros: number;
  status: BudgetStatus | null;
  at: Date;
  dashboardUrl: string;
}): Alert {
  const { org, budget, month, threshold } = input;
  const currency = org.currency;
  const thresholdMicros = Math.round((budget.amountMicros * threshold) / 100);
  const forecast = forecastPart(input.status, budget);
  const lines = [
    `The budget "${budget.name}" (${scopeText(budget)}) reached ${threshold}% of its ${amount(budget.amountMicros, currency)} for ${month}.`,
    '',
    `Agent spend in ${month}: ${amount(input.spendMicros, currency)} (${percentUsed(input.spendMicros, budget.amountMicros)}% of the budget).`,
    ...(forecast
      ? [
          `Forecast for the month's end: ${forecast.agent_cost.toFixed(2)} ${currency} (between ${forecast.low.toFixed(2)} and ${forecast.high.toFixed(2)}).`,
          forecast.run_out_date
            ? `Runs out: ${forecast.run_out_date}.`
            : 'The forecast stays within the budget.',
          `Method: ${forecast.method.description}`,
        ]
      : []),
    '',
    `Budgets: ${input.dashboardUrl}`,
  ];
  return {
    org,
    subject: budget.id,
    month,
    kind: 'threshold',
    threshold,
    type: 'budget.threshold_crossed',
    payload: {
      budget: budgetPart(budget, currency),
      currency,
      month,
      threshold,
      threshold_amount: fromMicros(thresholdMicros),
      spend: fromMicros(input.spendMicros),
      percent_used: percentUsed(input.spendMicros, budget.amountMicros),
      forecast,
      crossed_at: input.at.toISOString(),
    },
    email: {
      subject: `[Tally] Budget "${budget.name}" reached ${threshold}% for ${month}`,
      body: lines.join('\n'),
    },
  };
}

/** `budget.forecast_exceeded`: this month's forecast reaches the budget's amount. */
export function forecastAlert(input: {
  org: Organization;
  budget: Budget;
  status: BudgetStatus;
  at: Date;
  dashboardUrl: string;
}): Alert {
  const { org, budget, status } = input;
  const currency = org.currency;
  const forecast = forecastPart(status, budget);
  const view = statusView(budget, status);
  return {
    org,
    subject: budget.id,
    month: status.month,
    kind: 'forecast',
    threshold: 0,
    type: 'budget.forecast_exceeded',
    payload: {
      budget: budgetPart(budget, currency),
      currency,
      month: status.month,
      spend: view.spend,
      percent_used: view.percent_used,
      forecast,
      forecast_at: input.at.toISOString(),
    },
    email: {
      subject: `[Tally] Budget "${budget.name}" is forecast to run out in ${status.month}`,
      body: [
        `The budget "${budget.name}" (${scopeText(budget)}, ${amount(budget.amountMicros, currency)} a month) is forecast to be used up this month.`,
        '',
        `Agent spend so far in ${status.month}: ${view.spend.toFixed(2)} ${currency} (${view.percent_used}%).`,
        `Forecast for the month's end: ${view.forecast.toFixed(2)} ${currency} (between ${view.forecast_low.toFixed(2)} and ${view.forecast_high.toFixed(2)}).`,
        `Runs out: ${view.run_out_date ?? 'not this month'}.`,
        `Method: ${view.method.description}`,
        '',
        `Budgets: ${input.dashboardUrl}`,
      ].join('\n'),
    },
  };
}

/** `usage.threshold_crossed`: the month's events (counted by receipt) reached `threshold` % of the plan's. */
export function usageAlert(input: {
  org: Organization;
  month: string;
  threshold: number;
  events: number;
  included: number;
  at: Date;
  dashboardUrl: string;
}): Alert {
  const { org, month, threshold, events, included } = input;
  const percent = Math.floor((events * 1000) / included) / 10;
  return {
    org,
    subject: 'usage',
    month,
    kind: 'threshold',
    threshold,
    type: 'usage.threshold_crossed',
    payload: {
      month,
      plan: org.plan,
      threshold,
      events_in_month: events,
      events_included_in_plan: included,
      percent_used: percent,
      counted_by: 'received_at',
      crossed_at: input.at.toISOString(),
    },
    email: {
      subject: `[Tally] ${threshold}% of the included events used in ${month}`,
      body: [
        `Your organisation "${org.name}" has used ${events} of the ${included} events included in its ${org.plan} plan in ${month} (${percent}%).`,
        'Events count in the month they are received (UTC).',
        '',
        `Usage: ${input.dashboardUrl}`,
      ].join('\n'),
    },
  };
}
