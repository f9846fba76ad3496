import type { OrgCtx } from '../context.js';
import { fromMicros, toMicros } from '../money.js';
import type { Dimension, ReportInput } from '../reports/params.js';
import { buildReport, type ReportRow } from '../reports/report.js';
import type { MonthRange } from './months.js';

/** The report metrics of a set of events (DESIGN §7), in the organisation currency. */
export interface Figures {
  events: number;
  hours_saved: number;
  cost_saved: number;
  agent_cost: number;
  net_saved: number;
  /** The measured review time of reviewed events, and its cost (docs/figures.md). */
  review_hours: number;
  review_cost: number;
}

export const FIGURE_KEYS = [
  'events',
  'hours_saved',
  'cost_saved',
  'agent_cost',
  'net_saved',
  'review_hours',
  'review_cost',
] as const;

/** The dimensions of a statement: the name of its list and the key of each row. */
export const BREAKDOWNS = [
  { list: 'by_agent', key: 'agent_id', dimension: 'agent' },
  { list: 'by_task_type', key: 'task_type', dimension: 'task_type' },
  { list: 'by_client', key: 'client_id', dimension: 'client' },
] as const;

export type BreakdownList = (typeof BREAKDOWNS)[number]['list'];
export type BreakdownRow = Figures & { key: string | null };

/** A month's totals overall and by agent, task type and client, as the reports give them. */
export interface MonthFigures {
  totals: Figures;
  by_agent: Array<Figures & { agent_id: string | null }>;
  by_task_type: Array<Figures & { task_type: string | null }>;
  by_client: Array<Figures & { client_id: string | null }>;
}

export const ZERO: Figures = {
  events: 0,
  hours_saved: 0,
  cost_saved: 0,
  agent_cost: 0,
  net_saved: 0,
  review_hours: 0,
  review_cost: 0,
};

export function figuresOf(row: ReportRow | Figures): Figures {
  return {
    events: row.events,
    hours_saved: row.hours_saved,
    cost_saved: row.cost_saved,
    agent_cost: row.agent_cost,
    net_saved: row.net_saved,
    // Statements frozen before reviews existed hold none.
    review_hours: row.review_hours ?? 0,
    review_cost: row.review_cost ?? 0,
  };
}

/** a + sign × b, exact in micro-units; net saved follows from cost saved and agent cost. */
export function combine(a: Figures, b: Figures, sign: 1 | -1 = 1): Figures {
  const cost = toMicros(a.cost_saved) + sign * toMicros(b.cost_saved);
  const agent = toMicros(a.agent_cost) + sign * toMicros(b.agent_cost);
  return {
    events: a.events + sign * b.events,
    hours_saved: fromMicros(toMicros(a.hours_saved) + sign * toMicros(b.hours_saved)),
    cost_saved: fromMicros(cost),
    agent_cost: fromMicros(agent),
    net_saved: fromMicros(cost - agent),
    review_hours: fromMicros(toMicros(a.review_hours) + sign * toMicros(b.review_hours)),
    review_cost: fromMicros(toMicros(a.review_cost) + sign * toMicros(b.review_cost)),
  };
}

export function isZero(f: Figures): boolean {
  return FIGURE_KEYS.every((k) => f[k] === 0);
}

function reportInput(groupBy: Dimension[]): ReportInput {
  return { period: 'all', groupBy, sort: 'hours_saved', top: null, filters: { metadata: [] } };
}

/**
 * The month's figures through the report verb (src/reports/), so that they equal the reports'
 * for the same window. Call it inside one snapshot (storage/snapshot.ts inSnapshot) so that its
 * four reports agree with each other.
 */
export async function monthFigures(ctx: OrgCtx, range: MonthRange): Promise<MonthFigures> {
  const options = { range: { from: range.from, to: range.to } };
  const report = (groupBy: Dimension[]) => buildReport({ ctx, input: reportInput(groupBy), options });
  const rowsBy = async (dimension: Dimension, key: string) =>
    (await report([dimension])).rows.map((row) => ({ [key]: row.group[key] ?? null, ...figuresOf(row) }));
  const byAgent = (await rowsBy('agent', 'agent_id')) as MonthFigures['by_agent'];
  return {
    // Every event has one agent: the totals are the sum of the agents' rows, exact in micro-units.
    totals: byAgent.reduce<Figures>((sum, row) => combine(sum, row), { ...ZERO }),
    by_agent: byAgent,
    by_task_type: (await rowsBy('task_type', 'task_type')) as MonthFigures['by_task_type'],
    by_client: (await rowsBy('client', 'client_id')) as MonthFigures['by_client'],
  };
}

/** The rows of one breakdown with their key under one name. */
export function breakdownRows(figures: MonthFigures, list: BreakdownList): BreakdownRow[] {
  const spec = BREAKDOWNS.find((b) => b.list === list);
  if (!spec) return [];
  return (figures[list] as unknown as Array<Figures & Record<string, unknown>>).map((row) => ({
    key: (row[spec.key] as string | null | undefined) ?? null,
    ...figuresOf(row as Figures),
  }));
}

/** live − statement per key of one breakdown, rows whose figures differ only, in live order. */
export function breakdownDifference(live: BreakdownRow[], frozen: BreakdownRow[]): BreakdownRow[] {
  const before = new Map(frozen.map((row) => [row.key, row]));
  const after = new Map(live.map((row) => [row.key, row]));
  const out: BreakdownRow[] = [];
  const seen = new Set<string | null>();
  for (const row of [...live, ...frozen]) {
    if (seen.has(row.key)) continue;
    seen.add(row.key);
    const now = after.get(row.key) ?? { ...ZERO, key: row.key };
    const then = before.get(row.key) ?? { ...ZERO, key: row.key };
    const diff = combine(now, then, -1);
    if (!isZero(diff)) out.push({ key: row.key, ...diff });
  }
  return out;
}
