import { SqliteAdapter, sql, type Kysely } from 'kysely';

/**
 * Daily report aggregates by occurred_at day (UTC, epoch-day number). One table holds several
 * grains so that tracking updates all of them in one statement: `all` (key ''), `agent`,
 * `task_type` and `client` (key = 'c' + client_id, or '' when the event has no client). Each
 * event counts in the row of its outcome and in the all-outcomes row (outcome '*').
 * `shard`: concurrent tracking transactions of one process add to different rows of the same
 * key, so they do not wait on each other's row locks; reports sum the shards.
 */
export async function up(db: Kysely<any>): Promise<void> {
  // Reports read rollups by primary-key range; on SQLite a WITHOUT ROWID table keeps each row in
  // the key's b-tree, so a range read is one sequential walk instead of a lookup per row.
  const clustered = db.getExecutor().adapter instanceof SqliteAdapter;
  await db.schema
    .createTable('report_rollups')
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('grain', 'text', (c) => c.notNull())
    .addColumn('day', 'bigint', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('shard', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('events', 'bigint', (c) => c.notNull())
    .addColumn('hours_saved_micros', 'bigint', (c) => c.notNull())
    .addColumn('cost_saved_micros', 'bigint', (c) => c.notNull())
    .addColumn('agent_cost_micros', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('report_rollups_pk', ['org_id', 'grain', 'day', 'key', 'outcome', 'shard'])
    .$call((table) => (clustered ? table.modifyEnd(sql`without rowid`) : table))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('report_rollups').execute();
}
