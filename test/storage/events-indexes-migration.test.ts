import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest, type Db, type Engine, type Storage } from '../../src/storage/db.js';
import { migrations } from '../../src/storage/migrations/index.js';
import { openBeforeMigration } from '../support/before-migration.js';
import { ENGINES } from '../support/engines.js';

const MIGRATION = '2026_11_24_0014_events_fewer_indexes';

/**
 * The names of the events table's indexes, sorted (primary key included on PostgreSQL); on SQLite
 * in either file (storage/events-file.ts).
 */
async function eventIndexes(db: Db, engine: Engine): Promise<string[]> {
  const { rows } =
    engine === 'sqlite'
      ? await sql<{ name: string }>`
          SELECT name FROM main.sqlite_master WHERE type = 'index' AND tbl_name = 'events'
          UNION ALL
          SELECT name FROM ingest.sqlite_master WHERE type = 'index' AND tbl_name = 'events'`.execute(db)
      : await sql<{ name: string }>`
          SELECT indexname AS name FROM pg_indexes
          WHERE schemaname = current_schema() AND tablename = 'events'`.execute(db);
  return rows.map((r) => r.name).sort();
}

describe.each(ENGINES)('migration 0014 (%s)', (engine) => {
  let storage: Storage;
  beforeAll(async () => {
    storage = await openBeforeMigration(engine, MIGRATION);
  });
  afterAll(async () => storage.close());

  it('drops the events indexes by agent and task type, and puts them back on the way down', async () => {
    const before = await eventIndexes(storage.db, engine);
    expect(before).toEqual(expect.arrayContaining(['events_org_agent', 'events_org_task_type']));
    expect(await migrateToLatest(storage.db)).toContain(MIGRATION);
    const after = await eventIndexes(storage.db, engine);
    expect(after).toEqual(
      before.filter((name) => name !== 'events_org_agent' && name !== 'events_org_task_type'),
    );
    expect(after).toEqual(
      expect.arrayContaining(['events_org_id', 'events_org_occurred', 'events_ingest_seq']),
    );
    await migrations[MIGRATION]?.down?.(storage.db);
    expect(await eventIndexes(storage.db, engine)).toEqual(before);
  });
});
