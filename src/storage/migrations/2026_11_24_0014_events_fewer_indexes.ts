import { SqliteAdapter, sql, type Kysely } from 'kysely';
import { schemaOfTable } from '../events-file.js';

/**
 * Drops the events' indexes by agent and by task type (DESIGN §11, README "Ingest"). Reports no
 * longer read them: they read rollups, the tail by `ingest_seq` and the window's edges by
 * `occurred_at`. What they cost was ingest: every event lands at a random place in each of them
 * (one of an organisation's agents, one of its task types), so a batch of tracked events
 * dirtied about one page of each per event, and every commit wrote those pages
 * (docs/benchmarks.md, History).
 *
 * The event list filtered by agent or task type now walks the organisation's events newest
 * first (`events_org_id`), as the filters by client and outcome always did.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`DROP INDEX IF EXISTS events_org_agent`.execute(db);
  await sql`DROP INDEX IF EXISTS events_org_task_type`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  // SQLite names the schema on the index, in the file that holds the events now
  // (storage/events-file.ts); Kysely's builder would put it on the table.
  const schema =
    db.getExecutor().adapter instanceof SqliteAdapter ? `${await schemaOfTable(db, 'events')}.` : '';
  await sql.raw(`CREATE INDEX ${schema}events_org_agent ON events (org_id, agent_id, id)`).execute(db);
  await sql.raw(`CREATE INDEX ${schema}events_org_task_type ON events (org_id, task_type, id)`).execute(db);
}
