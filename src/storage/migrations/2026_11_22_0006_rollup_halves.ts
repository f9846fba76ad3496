import { SqliteAdapter, sql, type Kysely, type RawBuilder } from 'kysely';

/**
 * Week rows cut at month ends, and half-week rows.
 *
 * The coarse grains (two or three keys) kept ISO-week rows; now a week running over two months
 * has one row per month (`day` = the week's first day in that month), so months are exactly
 * their weeks, and week rows also serve reports by month. New `grain/half` rows hold the
 * Monday-to-Wednesday and Thursday-to-Sunday halves of those weeks (`day` = the half's first day
 * in its month): a window that starts late in a week reads a half instead of up to four days.
 *
 * Both are rebuilt from the grain's all-outcome day rows, which hold the same sums as their
 * events (derived data; exact). Shards are added up.
 */

const COARSE_GRAINS = ['agent+task_type', 'agent+client', 'task_type+client', 'agent+task_type+client'];

const KEY = sql.raw('org_id, grain, outcome, day, agent_id, task_type, client_key, shard');

export async function up(db: Kysely<any>): Promise<void> {
  const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
  const day = sql`day`;
  const month = sqlite
    ? sql`CAST(julianday(date(${day} * 86400, 'unixepoch', 'start of month')) - 2440587.5 AS INTEGER)`
    : sql`CAST((date_trunc('month', to_timestamp(${day} * 86400) AT TIME ZONE 'UTC')::date - DATE '1970-01-01') AS bigint)`;
  // Epoch day 0 was a Thursday: day − (day + 3) mod 7 is the Monday of its ISO week.
  const monday = sql`(${day} - ((${day} + 3) % 7))`;
  const thursday = sql`CASE WHEN (${day} + 3) % 7 >= 3 THEN 3 ELSE 0 END`;
  const greatest = (a: RawBuilder<unknown>, b: RawBuilder<unknown>) =>
    sqlite ? sql`max(${a}, ${b})` : sql`GREATEST(${a}, ${b})`;
  const buckets: Record<string, RawBuilder<unknown>> = {
    week: greatest(monday, month),
    half: greatest(sql`${monday} + ${thursday}`, month),
  };

  for (const grain of COARSE_GRAINS) {
    await sql`DELETE FROM report_rollups WHERE grain = ${`${grain}/week`}`.execute(db);
    for (const [bucket, start] of Object.entries(buckets)) {
      await sql`
        INSERT INTO report_rollups (${KEY}, events, hours_saved_micros, cost_saved_micros, agent_cost_micros)
        SELECT org_id, ${`${grain}/${bucket}`}, '*', ${start}, agent_id, task_type, client_key, 0,
               SUM(events), SUM(hours_saved_micros), SUM(cost_saved_micros), SUM(agent_cost_micros)
        FROM report_rollups
        WHERE grain = ${grain} AND outcome = '*'
        GROUP BY org_id, 4, agent_id, task_type, client_key`.execute(db);
    }
  }
}
