import { SqliteAdapter, sql, type Kysely, type RawBuilder } from 'kysely';

/**
 * Rollups for every combination of agent, task type and client, and coarse buckets for the
 * grains that keep two or three of them.
 *
 * New grains `agent+client`, `task_type+client` and `agent+task_type+client` get day rows for
 * every outcome and for all outcomes together ('*'), as the other grains have. The grains of two
 * or three keys also get ISO-week rows (`grain/week`, day = the Monday) and calendar-month rows
 * (`grain/month`, day = the first of the month), for all outcomes together: agent × client has
 * thousands of rows a day, and a 30-day report reads a few weeks and months instead of 29 days.
 *
 * The new rows are built from the events (derived data; exact). Rows of the earlier grains are
 * unchanged.
 */

interface Keys {
  agent: string;
  taskType: string;
  client: string;
}

const CLIENT = `COALESCE('c' || client_id, '')`;

const NEW_GRAINS: Record<string, Keys> = {
  'agent+client': { agent: 'agent_id', taskType: `''`, client: CLIENT },
  'task_type+client': { agent: `''`, taskType: 'task_type', client: CLIENT },
  'agent+task_type+client': { agent: 'agent_id', taskType: 'task_type', client: CLIENT },
};

const COARSE_GRAINS: Record<string, Keys> = {
  'agent+task_type': { agent: 'agent_id', taskType: 'task_type', client: `''` },
  ...NEW_GRAINS,
};

const KEY = sql.raw('org_id, grain, outcome, day, agent_id, task_type, client_key, shard');
const SUMS = sql.raw('events, hours_saved_micros, cost_saved_micros, agent_cost_micros');

async function insertGrain(
  db: Kysely<any>,
  grain: string,
  keys: Keys,
  outcome: RawBuilder<unknown>,
  bucket: RawBuilder<unknown>,
): Promise<void> {
  await sql`
    INSERT INTO report_rollups (${KEY}, ${SUMS})
    SELECT org_id, ${grain}, ${outcome}, ${bucket}, ${sql.raw(keys.agent)}, ${sql.raw(keys.taskType)},
           ${sql.raw(keys.client)}, 0,
           COUNT(*), SUM(hours_saved_micros), SUM(cost_saved_micros), SUM(COALESCE(agent_cost_micros, 0))
    FROM events
    GROUP BY 1, 3, 4, 5, 6, 7`.execute(db);
}

export async function up(db: Kysely<any>): Promise<void> {
  const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
  const day = sql`(occurred_at / 86400000)`;
  // Epoch day 0 was a Thursday: day − (day + 3) mod 7 is the Monday of its ISO week.
  const week = sql`(${day} - ((${day} + 3) % 7))`;
  const month = sqlite
    ? sql`CAST(julianday(date(occurred_at / 1000, 'unixepoch', 'start of month')) - 2440587.5 AS INTEGER)`
    : sql`CAST((date_trunc('month', to_timestamp(occurred_at / 1000) AT TIME ZONE 'UTC')::date - DATE '1970-01-01') AS bigint)`;

  for (const [grain, keys] of Object.entries(NEW_GRAINS)) {
    for (const outcome of [sql`outcome`, sql`'*'`]) await insertGrain(db, grain, keys, outcome, day);
  }
  for (const [grain, keys] of Object.entries(COARSE_GRAINS)) {
    await insertGrain(db, `${grain}/week`, keys, sql`'*'`, week);
    await insertGrain(db, `${grain}/month`, keys, sql`'*'`, month);
  }
}
