import { SqliteAdapter, sql, type Kysely } from 'kysely';

/**
 * Report rollups that cost the folding stage less per event (ingest does not pay per grain, but
 * the stage does, and it must keep up with ingest).
 *
 * - Half weeks go: the `…/half` rows of the two- and three-key grains. They were a quarter of
 *   the stage's rollup writes (4 of 20 rows per event) and saved reports only a few rows at a
 *   window's edges, which days and weeks now cover (plan.ts). Deleting them leaves every other
 *   row, and so every report, exactly as it was.
 * - PostgreSQL: the primary key no longer INCLUDEs the 16 sums, and the table leaves 30 % of
 *   each page free. With the sums in the index, every fold upsert wrote a new index entry as big
 *   as the row; without them, an update touches no indexed column and fits its page, so it is a
 *   HOT update that writes no index entry at all, and the index is a third of its size. A report
 *   now reads the rows from the table instead of from the index alone. The free space applies to pages written from
 *   now on; existing pages fill it as their rows move.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`DELETE FROM report_rollups WHERE grain LIKE '%/half'`.execute(db);
  if (db.getExecutor().adapter instanceof SqliteAdapter) return;
  await sql`
    ALTER TABLE report_rollups
      DROP CONSTRAINT report_rollups_pk,
      ADD CONSTRAINT report_rollups_pk
        PRIMARY KEY (org_id, grain, day, agent_id, task_type, client_key, shard),
      SET (fillfactor = 70)`.execute(db);
  await sql`ANALYZE report_rollups`.execute(db);
}
