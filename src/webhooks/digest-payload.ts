import { SqliteAdapter, sql } from 'kysely';
import type { DbOrTrx } from '../storage/db.js';
import { fromMicros } from '../money.js';
import { microSum } from '../reports/aggregate-sql.js';

const TOP = 5;

interface SumsRow {
  events: number;
  hours: number;
  cost: number;
  agent_cost: number;
}

function metrics(row: SumsRow) {
  const cost = Number(row.cost);
  const agentCost = Number(row.agent_cost);
  return {
    events: Number(row.events),
    hours_saved: fromMicros(Number(row.hours)),
    cost_saved: fromMicros(cost),
    agent_cost: fromMicros(agentCost),
    net_saved: fromMicros(cost - agentCost),
  };
}

/**
 * The `weekly.digest` payload (DESIGN §8) for [from, to) by occurred_at, summed from the
 * events' integer micro-units (exact). Top lists rank by hours saved, ties by key.
 */
export async function digestPayload(input: {
  db: DbOrTrx;
  orgId: string;
  currency: string;
  from: Date;
  to: Date;
}) {
  const base = input.db
    .selectFrom('events')
    .where('org_id', '=', input.orgId)
    .where('occurred_at', '>=', input.from.getTime())
    .where('occurred_at', '<', input.to.getTime());
  // Sums of micro-units can pass 2^63 (README "Limits"): microSum never overflows.
  const engine = input.db.getExecutor().adapter instanceof SqliteAdapter ? 'sqlite' : 'postgres';
  const sum = (column: 'hours_saved_micros' | 'cost_saved_micros' | 'agent_cost_micros') =>
    sql<number>`coalesce(${microSum(engine, sql.ref(column))}, 0)`;
  const sums = [
    sql<number>`count(*)`.as('events'),
    sum('hours_saved_micros').as('hours'),
    sum('cost_saved_micros').as('cost'),
    sum('agent_cost_micros').as('agent_cost'),
  ] as const;
  const totals = await base.select(sums).executeTakeFirstOrThrow();
  const agents = await base
    .select(['agent_id', ...sums])
    .groupBy('agent_id')
    .orderBy('hours', 'desc')
    .orderBy('agent_id', 'asc')
    .limit(TOP)
    .execute();
  const taskTypes = await base
    .select(['task_type', ...sums])
    .groupBy('task_type')
    .orderBy('hours', 'desc')
    .orderBy('task_type', 'asc')
    .limit(TOP)
    .execute();
  return {
    period: { from: input.from.toISOString(), to: input.to.toISOString() },
    currency: input.currency,
    totals: metrics(totals),
    top_agents: agents.map((r) => ({ agent_id: r.agent_id, ...metrics(r) })),
    top_task_types: taskTypes.map((r) => ({ task_type: r.task_type, ...metrics(r) })),
  };
}
