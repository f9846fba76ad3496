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

const DAY_MS = 86_400_000;

/**
 * Whether a day, week or month bucket reaches outside the report's range: the first and last
 * buckets of a rolling period hold only part of their day or week, so a chart's line dips there
 * without anything having dropped. Pages mark them rather than let them read as a trend.
 */
export function isPartialBucket(
  key: string,
  dimension: 'day' | 'week' | 'month',
  range: { from: string; to: string },
): boolean {
  const start = Date.parse(dimension === 'month' ? `${key}-01T00:00:00.000Z` : `${key}T00:00:00.000Z`);
  if (Number.isNaN(start)) return false;
  const date = new Date(start);
  const end =
    dimension === 'day'
      ? start + DAY_MS
      : dimension === 'week'
        ? start + 7 * DAY_MS
        : Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
  return start < Date.parse(range.from) || end > Date.parse(range.to);
}

/** A line chart's partial ends for buckets `keys` (in order) and the words under it. */
export function partialEnds(
  keys: readonly string[],
  dimension: 'day' | 'week' | 'month',
  range: { from: string; to: string },
): { first: boolean; last: boolean; note: string } {
  const first = keys.length > 1 && isPartialBucket(keys[0] ?? '', dimension, range);
  const last = keys.length > 1 && isPartialBucket(keys[keys.length - 1] ?? '', dimension, range);
  const unit = dimension;
  const which =
    first && last
      ? `the first and last ${unit}s are`
      : first
        ? `the first ${unit} is`
        : `the last ${unit} is`;
  return { first, last, note: `Dotted line: ${which} only partly in the period.` };
}
