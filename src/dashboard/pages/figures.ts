import type { OrgCtx } from '../../context.js';
import { PERIODS, type Dimension, type Metric, type Period, type ReportInput } from '../../reports/params.js';
import { buildReport, type Report, type ReportRow } from '../../reports/report.js';

export interface Totals {
  events: number;
  hours_saved: number;
  cost_saved: number;
  agent_cost: number;
  net_saved: number;
}

const MICRO = 1_000_000;
const micros = (n: number) => Math.round(n * MICRO);

/** The sum of report rows, added in micro-units so it stays exact (DESIGN §2). */
export function totalsOf(rows: readonly ReportRow[]): Totals {
  let events = 0;
  let hoursSaved = 0;
  let costSaved = 0;
  let agentCost = 0;
  for (const row of rows) {
    events += row.events;
    hoursSaved += micros(row.hours_saved);
    costSaved += micros(row.cost_saved);
    agentCost += micros(row.agent_cost);
  }
  return {
    events,
    hours_saved: hoursSaved / MICRO,
    cost_saved: costSaved / MICRO,
    agent_cost: agentCost / MICRO,
    net_saved: (costSaved - agentCost) / MICRO,
  };
}

export function reportInputOf(
  period: Period,
  groupBy: Dimension[],
  sort: Metric,
  top: number | null = null,
): ReportInput {
  return { period, groupBy, sort, top, filters: { metadata: [] } };
}

export function periodOf(value: string | null, fallback: Period = '30d'): Period {
  return (PERIODS as readonly string[]).includes(value ?? '') ? (value as Period) : fallback;
}

export const PERIOD_LABELS: Record<Period, string> = {
  '24h': 'Last 24 hours',
  '7d': 'Last 7 days',
  '30d': 'Last 30 days',
  '90d': 'Last 90 days',
  ytd: 'Year to date',
  all: 'All time',
};

const PERIOD_MS: Partial<Record<Period, number>> = {
  '24h': 86_400_000,
  '7d': 7 * 86_400_000,
  '30d': 30 * 86_400_000,
  '90d': 90 * 86_400_000,
};

/**
 * The same report for the period of the same length just before: the report verb run with the
 * clock set back by one period, so both windows come from the very same code.
 */
export async function previousPeriodReport(ctx: OrgCtx, input: ReportInput): Promise<Report | null> {
  const length = PERIOD_MS[input.period];
  if (length === undefined) return null;
  const at = ctx.clock.now().getTime() - length;
  return buildReport({ ctx: { ...ctx, clock: { now: () => new Date(at) } }, input });
}
