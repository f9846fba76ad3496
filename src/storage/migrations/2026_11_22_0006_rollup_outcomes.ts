import { SqliteAdapter, sql, type Kysely, type RawBuilder } from 'kysely';

/**
 * Report rollups, third shape: one row per grain, bucket and keys, with its sums over every
 * outcome and over each outcome's events in columns of their own, instead of a row per outcome
 * and one for all outcomes. Tracking writes fewer rows per event (up to 20 instead of 28), and
 * `outcome` filters read the week and month rows too.
 *
 * Buckets of the two- and three-key grains: calendar months; ISO weeks cut at month ends (a week
 * over two months has a row in each, `day` = its first day in that month), so a month is exactly
 * its weeks; and the Monday–Wednesday and Thursday–Sunday halves of those weeks, cut the same
 * way. Other grains keep day rows only.
 *
 * The table is rebuilt from the events: rollups are derived data, and the rebuild is exact.
 */

interface Keys {
  agent: string;
  taskType: string;
  client: string;
}

const CLIENT = `COALESCE('c' || client_id, '')`;

const GRAINS: Record<string, Keys> = {
  all: { agent: `''`, taskType: `''`, client: `''` },
  agent: { agent: 'agent_id', taskType: `''`, client: `''` },
  task_type: { agent: `''`, taskType: 'task_type', client: `''` },
  client: { agent: `''`, taskType: `''`, client: CLIENT },
  'agent+task_type': { agent: 'agent_id', taskType: 'task_type', client: `''` },
  'agent+client': { agent: 'agent_id', taskType: `''`, client: CLIENT },
  'task_type+client': { agent: `''`, taskType: 'task_type', client: CLIENT },
  'agent+task_type+client': { agent: 'agent_id', taskType: 'task_type', client: CLIENT },
};

const OUTCOMES = ['success', 'needs_review', 'failure'];
const KEY_COLUMNS = ['org_id', 'grain', 'day', 'agent_id', 'task_type', 'client_key', 'shard'];
const SUMS: Array<[column: string, value: string]> = [
  ['events', '1'],
  ['hours_saved_micros', 'hours_saved_micros'],
  ['cost_saved_micros', 'cost_saved_micros'],
  ['agent_cost_micros', 'COALESCE(agent_cost_micros, 0)'],
];
const SUM_COLUMNS = ['', ...OUTCOMES.map((o) => `${o}_`)].flatMap((prefix) =>
  SUMS.map(([column]) => `${prefix}${column}`),
);

export async function up(db: Kysely<any>): Promise<void> {
  const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
  await db.schema.dropTable('report_rollups').execute();
  const key = sql.raw(KEY_COLUMNS.join(', '));
  const sums = sql.raw(SUM_COLUMNS.join(', '));
  const sumTypes = sql.raw(SUM_COLUMNS.map((c) => `${c} bigint NOT NULL`).join(', '));
  await sql`
    CREATE TABLE report_rollups (
      org_id text NOT NULL,
      grain text NOT NULL,
      day bigint NOT NULL,
      agent_id text NOT NULL,
      task_type text NOT NULL,
      client_key text NOT NULL,
      shard bigint NOT NULL DEFAULT 0,
      ${sumTypes},
      CONSTRAINT report_rollups_pk PRIMARY KEY (${key})${sqlite ? sql`` : sql` INCLUDE (${sums})`}
    )${sqlite ? sql` WITHOUT ROWID` : sql``}`.execute(db);

  const day = sql`(occurred_at / 86400000)`;
  const month = sqlite
    ? sql`CAST(julianday(date(occurred_at / 1000, 'unixepoch', 'start of month')) - 2440587.5 AS INTEGER)`
    : sql`CAST((date_trunc('month', to_timestamp(occurred_at / 1000) AT TIME ZONE 'UTC')::date - DATE '1970-01-01') AS bigint)`;
  // Epoch day 0 was a Thursday: day − (day + 3) mod 7 is the Monday of its ISO week.
  const monday = sql`(${day} - ((${day} + 3) % 7))`;
  const thursday = sql`CASE WHEN (${day} + 3) % 7 >= 3 THEN 3 ELSE 0 END`;
  const greatest = (a: RawBuilder<unknown>, b: RawBuilder<unknown>) =>
    sqlite ? sql`max(${a}, ${b})` : sql`GREATEST(${a}, ${b})`;
  const coarse: Record<string, RawBuilder<unknown>> = {
    month,
    week: greatest(monday, month),
    half: greatest(sql`${monday} + ${thursday}`, month),
  };

  const sumValues = sql.raw(
    [
      ...SUMS.map(([, value]) => `SUM(${value})`),
      ...OUTCOMES.flatMap((o) =>
        SUMS.map(([, value]) => `SUM(CASE WHEN outcome = '${o}' THEN ${value} ELSE 0 END)`),
      ),
    ].join(', '),
  );
  for (const [grain, keys] of Object.entries(GRAINS)) {
    const buckets: Array<[string, RawBuilder<unknown>]> = [[grain, day]];
    // Grains of two or three keys also keep the coarse buckets.
    if (grain.includes('+')) {
      for (const [bucket, start] of Object.entries(coarse)) buckets.push([`${grain}/${bucket}`, start]);
    }
    for (const [name, start] of buckets) {
      await sql`
        INSERT INTO report_rollups (${key}, ${sums})
        SELECT org_id, ${name}, ${start}, ${sql.raw(keys.agent)}, ${sql.raw(keys.taskType)},
               ${sql.raw(keys.client)}, 0, ${sumValues}
        FROM events
        GROUP BY org_id, 3, 4, 5, 6`.execute(db);
    }
  }
}
