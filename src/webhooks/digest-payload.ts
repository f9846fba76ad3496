import { SqliteAdapter, sql, type RawBuilder } from 'kysely';
import type { DbOrTrx, Engine } from '../storage/db.js';
import { inSnapshot } from '../storage/snapshot.js';
import { fromMicros } from '../money.js';
import { microSum } from '../reports/aggregate-sql.js';

const TOP = 5;

interface SumsRow {
  events: unknown;
  hours: unknown;
  cost: unknown;
  agent_cost: unknown;
  review_hours: unknown;
  review_cost: unknown;
}

function metrics(row: SumsRow | undefined) {
  const n = (value: unknown) => Number(value ?? 0);
  const cost = n(row?.cost);
  const agentCost = n(row?.agent_cost);
  return {
    events: n(row?.events),
    hours_saved: fromMicros(n(row?.hours)),
    cost_saved: fromMicros(cost),
    agent_cost: fromMicros(agentCost),
    net_saved: fromMicros(cost - agentCost),
    review_hours: fromMicros(n(row?.review_hours)),
    review_cost: fromMicros(n(row?.review_cost)),
  };
}

/**
 * The window's figures row by row: each event (counted once, its original figures) and each
 * adjustment of an event of the window (src/ledger/: counted as no event, a signed delta with the
 * review time), as the report verb's raw pieces read them (reports/aggregate-sql.ts). An
 * adjustment carries its event's occurred_at and dimensions, so the window and the groups select
 * the same events on both sides. SQLite reads both by organisation and time, as reports do.
 */
function windowRows(engine: Engine, orgId: string, from: number, to: number): RawBuilder<unknown> {
  const where = sql`org_id = ${orgId} AND occurred_at >= ${from} AND occurred_at < ${to}`;
  const events = engine === 'sqlite' ? sql`events INDEXED BY events_org_occurred` : sql`events`;
  const adjustments =
    engine === 'sqlite' ? sql`adjustments INDEXED BY adjustments_org_occurred` : sql`adjustments`;
  return sql`
    SELECT agent_id, task_type, 1 AS n, hours_saved_micros AS h, cost_saved_micros AS c,
      COALESCE(agent_cost_micros, 0) AS a, 0 AS rh, 0 AS rc
    FROM ${events} WHERE ${where}
    UNION ALL
    SELECT agent_id, task_type, 0 AS n, hours_saved_micros AS h, cost_saved_micros AS c,
      agent_cost_micros AS a, review_hours_micros AS rh, review_cost_micros AS rc
    FROM ${adjustments} WHERE ${where}`;
}

/**
 * The `weekly.digest` payload (DESIGN §8, docs/webhooks.md) for [from, to) by occurred_at: the
 * events' figures with their adjustments (reviews, restatements), so that it equals the report
 * verb's for the same window; events count events only. Summed in SQL from integer micro-units
 * (exact), in one snapshot, so the totals and the top lists agree. Top lists rank by hours saved,
 * ties by key in byte order (as reports sort them).
 */
export async function digestPayload(input: {
  db: DbOrTrx;
  orgId: string;
  currency: string;
  from: Date;
  to: Date;
}) {
  const engine: Engine = input.db.getExecutor().adapter instanceof SqliteAdapter ? 'sqlite' : 'postgres';
  const rows = windowRows(engine, input.orgId, input.from.getTime(), input.to.getTime());
  // Sums of micro-units can pass 2^63 (README "Limits"): microSum never overflows.
  const sum = (column: string) => microSum(engine, sql.ref(`w.${column}`));
  const sums = sql`SUM(w.n) AS events, ${sum('h')} AS hours, ${sum('c')} AS cost,
    ${sum('a')} AS agent_cost, ${sum('rh')} AS review_hours, ${sum('rc')} AS review_cost`;
  const top = (db: DbOrTrx, key: 'agent_id' | 'task_type') => {
    const column = sql.ref(`w.${key}`);
    const byKey = engine === 'postgres' ? sql`${column} COLLATE "C"` : column;
    return sql<SumsRow & { key: string }>`
      SELECT ${column} AS key, ${sums} FROM (${rows}) AS w
      GROUP BY ${column} ORDER BY hours DESC, ${byKey} ASC LIMIT ${TOP}`.execute(db);
  };
  const { totals, agents, taskTypes } = await inSnapshot(input.db, engine, async (db) => ({
    totals: (await sql<SumsRow>`SELECT ${sums} FROM (${rows}) AS w`.execute(db)).rows[0],
    agents: (await top(db, 'agent_id')).rows,
    taskTypes: (await top(db, 'task_type')).rows,
  }));
  return {
    period: { from: input.from.toISOString(), to: input.to.toISOString() },
    currency: input.currency,
    totals: metrics(totals),
    top_agents: agents.map((r) => ({ agent_id: r.key, ...metrics(r) })),
    top_task_types: taskTypes.map((r) => ({ task_type: r.key, ...metrics(r) })),
  };
}
