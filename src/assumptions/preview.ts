import { requireRole } from '../accounts/authorize.js';
import type { OrgCtx } from '../context.js';
import { fromMicros, toMicros } from '../money.js';
import { buildReport, type ReportRow } from '../reports/report.js';
import type { Dimension } from '../reports/params.js';
import { readDb } from '../storage/db.js';
import { currentOf, eventLedgers } from '../ledger/restatement.js';
import type { EventLedger } from '../ledger/adjustments.js';
import type { EventRow, ReviewRow } from '../storage/schema.js';
import { builtinKeysOf } from './kinds.js';
import type { AssumptionChange } from './record.js';
import { ledgerRepricerOf, loadAssumptions, type Assumptions } from './reprice.js';

const PAGE = 1000;
export const PREVIEW_EVENTS = 50;

interface Delta {
  events: number;
  hours: number;
  cost: number;
}

interface MonthDeltas {
  total: Delta;
  agent: Map<string, Delta>;
  task_type: Map<string, Delta>;
  client: Map<string | null, Delta>;
}

export interface Totals {
  events: number;
  hours_saved: number;
  cost_saved: number;
  agent_cost: number;
  net_saved: number;
}

interface Figures {
  resolved_baseline_minutes: number;
  resolved_hourly_rate: number;
  hours_saved: number;
  cost_saved: number;
  net_saved: number;
}

const add = (map: Map<string | null, Delta>, key: string | null, hours: number, cost: number) => {
  const d = map.get(key) ?? { events: 0, hours: 0, cost: 0 };
  d.events += 1;
  d.hours += hours;
  d.cost += cost;
  map.set(key, d);
};

/** The date range a change covers: from its effective date until the next version of its slot. */
function rangeOf(a: Assumptions, change: AssumptionChange): { from: number; to: number | null } {
  const next = a.history
    .of(change.kind, change.key)
    .find((v) => v.effectiveFrom > change.effectiveFrom && v.id !== 'proposed');
  return { from: change.effectiveFrom, to: next ? next.effectiveFrom : null };
}

/** The task types a change of a category's rate reaches (built-in and custom ones). */
function categoryKeys(a: Assumptions, category: string): string[] {
  return [
    ...builtinKeysOf(category),
    ...[...a.customs].filter(([, c]) => c.category === category).map(([k]) => k),
  ];
}

/**
 * Which of the organisation's events a change can move: those dated from its effective date until
 * the next version of the same assumption, narrowed by what the assumption applies to.
 */
function candidates(ctx: OrgCtx, a: Assumptions, change: AssumptionChange) {
  const { from, to } = rangeOf(a, change);
  let query = readDb(ctx)
    .selectFrom('events')
    .selectAll()
    .where('org_id', '=', ctx.org.id)
    .where('occurred_at', '>=', from);
  if (to !== null) query = query.where('occurred_at', '<', to);
  switch (change.kind) {
    case 'baseline_override':
    case 'custom_baseline':
    case 'custom_hourly_rate':
      return query.where('task_type', '=', change.key);
    case 'category_hourly_rate':
      return query.where('task_type', 'in', categoryKeys(a, change.key));
    case 'outcome_credit':
      return query.where('outcome', '=', change.key);
    case 'fallback_baseline':
      return query.where('resolved_baseline_source', '=', 'fallback');
    case 'default_hourly_rate':
      return query;
  }
}

/** The same narrowing as `candidates`, for one event (the application walks every event). */
export function inScope(a: Assumptions, change: AssumptionChange): (event: EventRow) => boolean {
  const { from, to } = rangeOf(a, change);
  const keys = change.kind === 'category_hourly_rate' ? new Set(categoryKeys(a, change.key)) : null;
  return (event) => {
    const at = Number(event.occurred_at);
    if (at < from || (to !== null && at >= to)) return false;
    switch (change.kind) {
      case 'baseline_override':
      case 'custom_baseline':
      case 'custom_hourly_rate':
        return event.task_type === change.key;
      case 'category_hourly_rate':
        return keys?.has(event.task_type) ?? false;
      case 'outcome_credit':
        return event.outcome === change.key;
      case 'fallback_baseline':
        return event.resolved_baseline_source === 'fallback';
      case 'default_hourly_rate':
        return true;
    }
  };
}

const figuresOf = (
  minutes: number,
  rate: number,
  hours: number,
  cost: number,
  agentCost: number,
): Figures => ({
  resolved_baseline_minutes: minutes,
  resolved_hourly_rate: fromMicros(rate),
  hours_saved: fromMicros(hours),
  cost_saved: fromMicros(cost),
  net_saved: fromMicros(cost - agentCost),
});

const monthOf = (ms: number) => new Date(ms).toISOString().slice(0, 7);

/**
 * The dry run of a change (a restatement when its date is past): the events whose figures it
 * moves (their number and the first PREVIEW_EVENTS, oldest first, with old and new figures), and
 * each month's totals before and after, overall and by agent, task type and client (the groups
 * it moves). "Before" is what the reports show now; "after" adds the change. Writes nothing.
 */
export async function previewChange({ ctx, change }: { ctx: OrgCtx; change: AssumptionChange }) {
  // The first step of a change: an admin's, as the change is.
  requireRole(ctx, 'admin');
  const proposed = await loadAssumptions(ctx, ctx.org.id, change);
  const reprice = ledgerRepricerOf(proposed);
  const events: Array<{
    event_id: string;
    occurred_at: string;
    agent_id: string;
    task_type: string;
    client_id: string | null;
    before: Figures;
    after: Figures;
  }> = [];
  const months = new Map<string, MonthDeltas>();
  let affected = 0;
  const sum: Delta = { events: 0, hours: 0, cost: 0 };
  let after: { occurred_at: number; id: string } | null = null;
  for (;;) {
    let query = candidates(ctx, proposed, change);
    if (after) {
      const { occurred_at: t, id } = after;
      query = query.where((eb) =>
        eb.or([eb('occurred_at', '>', t), eb.and([eb('occurred_at', '=', t), eb('id', '>', id)])]),
      );
    }
    const rows: EventRow[] = await query.orderBy('occurred_at').orderBy('id').limit(PAGE).execute();
    const found = await eventLedgers(readDb(ctx), ctx.org.id, rows);
    for (const row of rows) {
      // From the event's figures now (original and adjustments), a review kept.
      const { ledger, review } = found.get(row.id) as { ledger: EventLedger; review: ReviewRow | null };
      const current = currentOf(ledger, review);
      const next = reprice(row, current) ?? {};
      const hours =
        (next.hoursSavedMicros ?? current.figures.hoursSavedMicros) - current.figures.hoursSavedMicros;
      const cost =
        (next.costSavedMicros ?? current.figures.costSavedMicros) - current.figures.costSavedMicros;
      if (hours === 0 && cost === 0) continue;
      affected += 1;
      sum.hours += hours;
      sum.cost += cost;
      const month = monthOf(Number(row.occurred_at));
      const m = months.get(month) ?? {
        total: { events: 0, hours: 0, cost: 0 },
        agent: new Map(),
        task_type: new Map(),
        client: new Map(),
      };
      months.set(month, m);
      m.total.events += 1;
      m.total.hours += hours;
      m.total.cost += cost;
      add(m.agent as Map<string | null, Delta>, row.agent_id, hours, cost);
      add(m.task_type as Map<string | null, Delta>, row.task_type, hours, cost);
      add(m.client, row.client_id, hours, cost);
      if (events.length < PREVIEW_EVENTS) {
        const agentCost = current.figures.agentCostMicros;
        events.push({
          event_id: row.id,
          occurred_at: new Date(Number(row.occurred_at)).toISOString(),
          agent_id: row.agent_id,
          task_type: row.task_type,
          client_id: row.client_id,
          before: figuresOf(
            current.baselineMinutes,
            current.hourlyRateMicros,
            current.figures.hoursSavedMicros,
            current.figures.costSavedMicros,
            agentCost,
          ),
          after: figuresOf(
            next.baselineMinutes ?? current.baselineMinutes,
            next.hourlyRateMicros ?? current.hourlyRateMicros,
            current.figures.hoursSavedMicros + hours,
            current.figures.costSavedMicros + cost,
            agentCost,
          ),
        });
      }
    }
    const last = rows[rows.length - 1];
    if (!last || rows.length < PAGE) break;
    after = { occurred_at: Number(last.occurred_at), id: last.id };
  }
  return {
    affected_events: affected,
    delta: {
      hours_saved: fromMicros(sum.hours),
      cost_saved: fromMicros(sum.cost),
      net_saved: fromMicros(sum.cost),
    },
    events,
    months: await monthTotals(ctx, months),
  };
}

const report = (ctx: OrgCtx, groupBy: Dimension[]) =>
  buildReport({
    ctx,
    input: { period: 'all', groupBy, sort: 'events', top: null, filters: { metadata: [] } },
  });

function shifted(row: ReportRow | undefined, d: Delta | undefined): { before: Totals; after: Totals } {
  const before: Totals = {
    events: row?.events ?? 0,
    hours_saved: row?.hours_saved ?? 0,
    cost_saved: row?.cost_saved ?? 0,
    agent_cost: row?.agent_cost ?? 0,
    net_saved: row?.net_saved ?? 0,
  };
  const hours = d?.hours ?? 0;
  const cost = d?.cost ?? 0;
  return {
    before,
    after: {
      events: before.events,
      hours_saved: fromMicros(toMicros(before.hours_saved) + hours),
      cost_saved: fromMicros(toMicros(before.cost_saved) + cost),
      agent_cost: before.agent_cost,
      net_saved: fromMicros(toMicros(before.net_saved) + cost),
    },
  };
}

/** Each affected month's totals before (the reports' figures) and after, overall and by group. */
async function monthTotals(ctx: OrgCtx, months: Map<string, MonthDeltas>) {
  if (months.size === 0) return [];
  const [total, byAgent, byType, byClient] = await Promise.all([
    report(ctx, ['month']),
    report(ctx, ['month', 'agent']),
    report(ctx, ['month', 'task_type']),
    report(ctx, ['month', 'client']),
  ]);
  const find = (rows: ReportRow[], month: string, key?: [string, string | null]) =>
    rows.find((r) => r.group.month === month && (key === undefined || r.group[key[0]] === key[1]));
  return [...months.keys()].sort().map((month) => {
    const m = months.get(month) as MonthDeltas;
    const groups = <K extends string | null>(map: Map<K, Delta>, rows: ReportRow[], name: string) =>
      [...map.entries()]
        .sort(([a], [b]) => String(a).localeCompare(String(b)))
        .map(([key, d]) => ({
          [name]: key,
          events_affected: d.events,
          ...shifted(find(rows, month, [name, key]), d),
        }));
    return {
      month,
      events_affected: m.total.events,
      ...shifted(find(total.rows, month), m.total),
      by_agent: groups(m.agent, byAgent.rows, 'agent_id'),
      by_task_type: groups(m.task_type, byType.rows, 'task_type'),
      by_client: groups(m.client, byClient.rows, 'client_id'),
    };
  });
}
