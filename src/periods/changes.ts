import type { OrgCtx } from '../context.js';
import { fromMicros } from '../money.js';
import { readDb } from '../storage/db.js';
import { inSnapshot } from '../storage/snapshot.js';
import { adjustmentsSince, type AdjustmentEntry } from './adjustments.js';
import {
  BREAKDOWNS,
  breakdownDifference,
  breakdownRows,
  combine,
  monthFigures,
  type BreakdownRow,
  type Figures,
  type MonthFigures,
} from './figures.js';
import { monthRange } from './months.js';
import { getPeriod } from './periods.js';

/** Late events listed in one answer; their sums always cover them all. */
export const MAX_LISTED_ENTRIES = 1000;

/** An event of the month received after its closing. */
export interface LateEventEntry extends Figures {
  kind: 'late_event';
  id: string;
  event_id: string;
  /** When it was received (ISO 8601). */
  at: string;
  occurred_at: string;
  agent_id: string;
  task_type: string;
  client_id: string | null;
  outcome: string;
}

export type ChangeEntry = LateEventEntry | AdjustmentEntry;

const num = (value: unknown) => Number(value ?? 0);

/** The month's events received after `closedAt`: listed (up to a limit) and summed (all). */
async function lateEvents(ctx: OrgCtx, from: number, to: number, closedAt: number) {
  const base = ctx.db
    .selectFrom('events')
    .where('org_id', '=', ctx.org.id)
    .where('occurred_at', '>=', from)
    .where('occurred_at', '<', to)
    .where('received_at', '>', closedAt);
  const sums = await base
    .select((eb) => [
      eb.fn.countAll<number>().as('n'),
      eb.fn.sum<number>('hours_saved_micros').as('hours'),
      eb.fn.sum<number>('cost_saved_micros').as('cost'),
      eb.fn.sum<number>(eb.fn.coalesce('agent_cost_micros', eb.lit(0))).as('agent'),
    ])
    .executeTakeFirst();
  const rows = await base
    .select([
      'id',
      'agent_id',
      'task_type',
      'client_id',
      'outcome',
      'occurred_at',
      'received_at',
      'hours_saved_micros',
      'cost_saved_micros',
      'agent_cost_micros',
    ])
    .orderBy('received_at')
    .orderBy('id')
    .limit(MAX_LISTED_ENTRIES + 1)
    .execute();
  const cost = num(sums?.cost);
  const agent = num(sums?.agent);
  const total: Figures = {
    events: num(sums?.n),
    hours_saved: fromMicros(num(sums?.hours)),
    cost_saved: fromMicros(cost),
    agent_cost: fromMicros(agent),
    net_saved: fromMicros(cost - agent),
    review_hours: 0,
    review_cost: 0,
  };
  const entries = rows.slice(0, MAX_LISTED_ENTRIES).map((r): LateEventEntry => {
    const c = num(r.cost_saved_micros);
    const a = num(r.agent_cost_micros);
    return {
      kind: 'late_event',
      id: r.id,
      event_id: r.id,
      at: new Date(Number(r.received_at)).toISOString(),
      occurred_at: new Date(Number(r.occurred_at)).toISOString(),
      agent_id: r.agent_id,
      task_type: r.task_type,
      client_id: r.client_id,
      outcome: r.outcome,
      events: 1,
      hours_saved: fromMicros(num(r.hours_saved_micros)),
      cost_saved: fromMicros(c),
      agent_cost: fromMicros(a),
      net_saved: fromMicros(c - a),
      review_hours: 0,
      review_cost: 0,
    };
  });
  return { total, entries, truncated: rows.length > MAX_LISTED_ENTRIES };
}

function differenceOf(live: MonthFigures, frozen: MonthFigures) {
  const out: Record<string, BreakdownRow[]> = {};
  for (const b of BREAKDOWNS) {
    out[b.list] = breakdownDifference(breakdownRows(live, b.list), breakdownRows(frozen, b.list)).map(
      ({ key, ...figures }) => ({ [b.key]: key, ...figures }) as unknown as BreakdownRow,
    );
  }
  return out as unknown as Omit<MonthFigures, 'totals'>;
}

/**
 * What changed a month since its latest statement: the live figures, their difference from the
 * statement, and the entries that make it up (events received after the closing, adjustments
 * recorded after it). statement + entries = live; `unexplained` is what the entries do not
 * account for, zero unless an event was in flight at the very instant of closing.
 */
export async function periodChanges({ ctx, month }: { ctx: OrgCtx; month: string }) {
  const statement = await getPeriod({ ctx, month });
  const range = monthRange(month);
  const closedAt = Date.parse(statement.closed_at);
  const { live, late, adjustments } = await inSnapshot(
    readDb(ctx),
    ctx.engine,
    async (db) => {
      const inner = { ...ctx, db };
      return {
        live: await monthFigures(inner, range),
        late: await lateEvents(inner, range.from, range.to, closedAt),
        adjustments: await adjustmentsSince(inner, ctx.org.id, month, closedAt, MAX_LISTED_ENTRIES),
      };
    },
    { serial: true },
  );
  const entriesTotal = combine(late.total, adjustments.total);
  const difference = combine(live.totals, statement.totals, -1);
  return {
    month,
    status: statement.status,
    statement_id: statement.id,
    closed_at: statement.closed_at,
    currency: ctx.org.currency,
    statement: statement.totals,
    live,
    difference: { totals: difference, ...differenceOf(live, statement) },
    entries: [...late.entries, ...adjustments.entries] as ChangeEntry[],
    entries_total: entriesTotal,
    entries_truncated: late.truncated || adjustments.truncated,
    unexplained: combine(difference, entriesTotal, -1),
  };
}

export type PeriodChanges = Awaited<ReturnType<typeof periodChanges>>;
