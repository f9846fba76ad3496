import { fromMicros, toMicros } from '../money.js';
import type { ReportRow } from '../reports/report.js';

/**
 * A report row's figures in integer micro-units (events as a count): what forecasts add up and
 * project, exactly. Net saved is not kept: it is always cost saved − agent cost.
 */
export interface Figures {
  events: number;
  hours: number;
  cost: number;
  agentCost: number;
}

export const ZERO: Figures = { events: 0, hours: 0, cost: 0, agentCost: 0 };

export const FIGURE_KEYS = ['events', 'hours', 'cost', 'agentCost'] as const;
export type FigureKey = (typeof FIGURE_KEYS)[number];

/** A report row's figures back in micro-units (report rows are exact micro-unit sums). */
export function figuresOf(row: ReportRow): Figures {
  return {
    events: row.events,
    hours: toMicros(row.hours_saved),
    cost: toMicros(row.cost_saved),
    agentCost: toMicros(row.agent_cost),
  };
}

export function addFigures(a: Figures, b: Figures): Figures {
  return {
    events: a.events + b.events,
    hours: a.hours + b.hours,
    cost: a.cost + b.cost,
    agentCost: a.agentCost + b.agentCost,
  };
}

export function sumFigures(list: readonly Figures[]): Figures {
  return list.reduce(addFigures, ZERO);
}

/** As the API shows figures: the report row's metrics, net saved = cost saved − agent cost. */
export function figuresView(f: Figures) {
  return {
    events: f.events,
    hours_saved: fromMicros(f.hours),
    cost_saved: fromMicros(f.cost),
    agent_cost: fromMicros(f.agentCost),
    net_saved: fromMicros(f.cost - f.agentCost),
  };
}
export type FiguresView = ReturnType<typeof figuresView>;

/** round(n / d) for a positive d, halves away from zero, exact for any size of n. */
export function divRound(n: bigint, d: bigint): bigint {
  const q = n / d;
  const r = n % d;
  if (2n * (r < 0n ? -r : r) >= d) return n < 0n ? q - 1n : q + 1n;
  return q;
}
