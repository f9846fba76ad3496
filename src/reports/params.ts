import { validationError } from '../errors.js';
import type { Outcome } from '../orgs/organizations.js';

export const PERIODS = ['24h', '7d', '30d', '90d', 'ytd', 'all'] as const;
export type Period = (typeof PERIODS)[number];

export const DIMENSIONS = ['agent', 'task_type', 'client', 'day', 'week', 'month'] as const;
export type Dimension = (typeof DIMENSIONS)[number];

/** A number as a query value may write it (the `metadata.KEY=VALUE` filters compare numbers by value). */
export const NUMBER_TEXT = /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/;

export const METRICS = ['events', 'hours_saved', 'cost_saved', 'agent_cost', 'net_saved'] as const;
export type Metric = (typeof METRICS)[number];

/** The key each dimension has in a row's `group` (DESIGN §7). */
export const GROUP_KEY: Record<Dimension, string> = {
  agent: 'agent_id',
  task_type: 'task_type',
  client: 'client_id',
  day: 'day',
  week: 'week',
  month: 'month',
};

export interface ReportFilters {
  agentId?: string;
  taskType?: string;
  clientId?: string;
  outcome?: Outcome;
  /** `metadata.KEY=VALUE` filters, all of which must match. */
  metadata: Array<[key: string, value: string]>;
}

export interface ReportInput {
  period: Period;
  groupBy: Dimension[];
  sort: Metric;
  /** Rows kept after sorting; null = all. */
  top: number | null;
  filters: ReportFilters;
}

/** `group_by=agent,day` → ['agent', 'day']; unknown, empty or repeated dimensions are 422. */
export function parseGroupBy(raw: string): Dimension[] {
  const path = '/querystring/group_by';
  const parts = raw.split(',').map((p) => p.trim());
  const seen = new Set<Dimension>();
  for (const part of parts) {
    if (!(DIMENSIONS as readonly string[]).includes(part)) {
      throw validationError(
        path,
        `"${part}" is not a dimension; use a comma-separated list of ${DIMENSIONS.join(', ')}`,
      );
    }
    const dim = part as Dimension;
    if (seen.has(dim)) throw validationError(path, `"${dim}" is repeated`);
    seen.add(dim);
  }
  return [...seen];
}

const HOUR_MS = 3_600_000;
const PERIOD_MS: Partial<Record<Period, number>> = {
  '24h': 24 * HOUR_MS,
  '7d': 7 * 24 * HOUR_MS,
  '30d': 30 * 24 * HOUR_MS,
  '90d': 90 * 24 * HOUR_MS,
};

/**
 * The window of a period in epoch ms: `from` inclusive, `to` = now. An event stamped in this
 * very millisecond has already happened, so queries read occurred_at < to + 1 (`endExclusive`):
 * an event shows in the next report after its 201 even when the clock has not moved.
 */
export function periodRange(period: Period, now: number, earliest: number | null) {
  let from: number;
  if (period === 'ytd') from = Date.UTC(new Date(now).getUTCFullYear(), 0, 1);
  else if (period === 'all') from = Math.min(earliest ?? now, now);
  else from = now - (PERIOD_MS[period] ?? 0);
  return { from, to: now, endExclusive: now + 1 };
}

export type ReportRange = ReturnType<typeof periodRange>;
