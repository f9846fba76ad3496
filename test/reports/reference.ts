import type { StoredEvent } from '../../src/tracking/events.js';

/** Test-side reference: groups and sums events independently of the service's SQL. */
/** The instant report property tests ask at, and the periods they draw from. */
export const NOW = Date.parse('2026-11-20T12:00:00.000Z');
export const DAY = 86_400_000;
export const PERIODS = ['24h', '7d', '30d', '90d', 'ytd'] as const;
export type Period = (typeof PERIODS)[number];

/** The window's first instant for a report asked at `at`. */
export function windowFrom(period: Period, at: number): number {
  if (period === 'ytd') return Date.UTC(new Date(at).getUTCFullYear(), 0, 1);
  return at - { '24h': 1, '7d': 7, '30d': 30, '90d': 90 }[period] * DAY;
}

export type Dim = 'agent' | 'task_type' | 'client' | 'day' | 'week' | 'month';
export type SortMetric = 'events' | 'hours_saved' | 'cost_saved' | 'agent_cost' | 'net_saved';

const KEY: Record<Dim, string> = {
  agent: 'agent_id',
  task_type: 'task_type',
  client: 'client_id',
  day: 'day',
  week: 'week',
  month: 'month',
};

const micros = (v: number | null) => Math.round((v ?? 0) * 1_000_000);

function valueOf(dim: Dim, e: StoredEvent): string | null {
  const at = new Date(e.occurred_at);
  switch (dim) {
    case 'agent':
      return e.agent_id;
    case 'task_type':
      return e.task_type;
    case 'client': {
      const c = e.metadata?.client_id;
      return typeof c === 'string' ? c : typeof c === 'number' ? String(c) : null;
    }
    case 'day':
      return e.occurred_at.slice(0, 10);
    case 'week': {
      const monday = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()));
      monday.setUTCDate(monday.getUTCDate() - ((monday.getUTCDay() + 6) % 7));
      return monday.toISOString().slice(0, 10);
    }
    case 'month':
      return e.occurred_at.slice(0, 7);
  }
}

export interface RefRow {
  group: Record<string, string | null>;
  events: number;
  hours_saved: number;
  cost_saved: number;
  agent_cost: number;
  net_saved: number;
  review_hours: number;
  review_cost: number;
}

/** An event with, after reviews or restatements, its current figures and review time. */
export type RefEvent = StoredEvent & { review_hours?: number; review_cost?: number };

function compareGroups(a: (string | null)[], b: (string | null)[]): number {
  for (let i = 0; i < a.length; i++) {
    const x = a[i] ?? null;
    const y = b[i] ?? null;
    if (x === y) continue;
    if (x === null) return 1;
    if (y === null) return -1;
    return x < y ? -1 : 1;
  }
  return 0;
}

/** Expected rows: events with from ≤ occurred_at ≤ to, grouped, sorted like DESIGN §7. */
export function expectedRows(
  events: readonly RefEvent[],
  options: { groupBy: Dim[]; from: number; to: number; sort: SortMetric; top?: number },
): { rows: RefRow[]; totalGroups: number } {
  const groups = new Map<
    string,
    { values: (string | null)[]; n: number; h: number; c: number; a: number; rh: number; rc: number }
  >();
  for (const e of events) {
    const t = Date.parse(e.occurred_at);
    if (t < options.from || t > options.to) continue;
    const values = options.groupBy.map((d) => valueOf(d, e));
    const id = JSON.stringify(values);
    const g = groups.get(id) ?? { values, n: 0, h: 0, c: 0, a: 0, rh: 0, rc: 0 };
    g.n += 1;
    g.h += micros(e.hours_saved);
    g.c += micros(e.cost_saved);
    g.a += micros(e.agent_cost);
    g.rh += micros(e.review_hours ?? 0);
    g.rc += micros(e.review_cost ?? 0);
    groups.set(id, g);
  }
  const metric = (g: { n: number; h: number; c: number; a: number }) =>
    ({ events: g.n, hours_saved: g.h, cost_saved: g.c, agent_cost: g.a, net_saved: g.c - g.a })[options.sort];
  const sorted = [...groups.values()].sort(
    (x, y) => metric(y) - metric(x) || compareGroups(x.values, y.values),
  );
  const rows = sorted.slice(0, options.top ?? sorted.length).map((g) => ({
    group: Object.fromEntries(options.groupBy.map((d, i) => [KEY[d], g.values[i] ?? null])),
    events: g.n,
    hours_saved: g.h / 1e6,
    cost_saved: g.c / 1e6,
    agent_cost: g.a / 1e6,
    net_saved: (g.c - g.a) / 1e6,
    review_hours: g.rh / 1e6,
    review_cost: g.rc / 1e6,
  }));
  return { rows, totalGroups: groups.size };
}
