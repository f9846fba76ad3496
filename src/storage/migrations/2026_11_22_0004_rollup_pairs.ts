import { SqliteAdapter, sql, type Kysely } from 'kysely';

/**
 * Report rollups, second shape. Each row is one grain, outcome, day (UTC epoch-day number) and
 * the grain's keys, which now have a column each — `agent_id`, `task_type`, `client_key`
 * ('' when the grain does not keep that dimension; for clients 'c' + client_id, or '' for
 * events without one) — so that a grain can keep two dimensions together: `agent+task_type`
 * joins `all`, `agent`, `task_type` and `client`.
 *
 * The key starts with grain and outcome, then the day: a report reads one contiguous range (the
 * first shape put the day before the outcome and read every outcome's rows). SQLite keeps the
 * rows in that order (WITHOUT ROWID); PostgreSQL carries the sums in the key's index, so a
 * report is an index-only scan wherever the visibility map allows.
 *
 * The rows are rebuilt from the events: rollups are derived data, and the rebuild is exact.
 */

const KEY_COLUMNS = ['org_id', 'grain', 'outcome', 'day', 'agent_id', 'task_type', 'client_key', 'shard'];
const SUM_COLUMNS = ['events', 'hours_saved_micros', 'cost_saved_micros', 'agent_cost_micros'];

/** Each grain's key columns as expressions over `events`. */
const GRAIN_KEYS: Record<string, { agent: string; taskType: string; client: string }> = {
  all: { agent: `''`, taskType: `''`, client: `''` },
  agent: { agent: 'agent_id', taskType: `''`, client: `''` },
  task_type: { agent: `''`, taskType: 'task_type', client: `''` },
  client: { agent: `''`, taskType: `''`, client: `COALESCE('c' || client_id, '')` },
  'agent+task_type': { agent: 'agent_id', taskType: 'task_type', client: `''` },
};

export async function up(db: Kysely<any>): Promise<void> {
  const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
  await db.schema.dropTable('report_rollups').execute();
  const key = sql.raw(KEY_COLUMNS.join(', '));
  const sums = sql.raw(SUM_COLUMNS.join(', '));
  await sql`
    CREATE TABLE report_rollups (
      org_id text NOT NULL,
      grain text NOT NULL,
      outcome text NOT NULL,
      day bigint NOT NULL,
      agent_id text NOT NULL,
      task_type text NOT NULL,
      client_key text NOT NULL,
      shard bigint NOT NULL DEFAULT 0,
      events bigint NOT NULL,
      hours_saved_micros bigint NOT NULL,
      cost_saved_micros bigint NOT NULL,
      agent_cost_micros bigint NOT NULL,
      CONSTRAINT report_rollups_pk PRIMARY KEY (${key})${sqlite ? sql`` : sql` INCLUDE (${sums})`}
    )${sqlite ? sql` WITHOUT ROWID` : sql``}`.execute(db);

  const day = sql.raw(`occurred_at / 86400000`);
  for (const [grain, keys] of Object.entries(GRAIN_KEYS)) {
    const agent = sql.raw(keys.agent);
    const taskType = sql.raw(keys.taskType);
    const client = sql.raw(keys.client);
    // One row per outcome and one for all outcomes together ('*'), as tracking writes them.
    for (const outcome of [sql`outcome`, sql`'*'`]) {
      await sql`
        INSERT INTO report_rollups (${key}, ${sums})
        SELECT org_id, ${grain}, ${outcome}, ${day}, ${agent}, ${taskType}, ${client}, 0,
               COUNT(*), SUM(hours_saved_micros), SUM(cost_saved_micros), SUM(COALESCE(agent_cost_micros, 0))
        FROM events
        GROUP BY 1, 3, 4, 5, 6, 7`.execute(db);
    }
  }
}
