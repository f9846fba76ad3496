import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import { inject } from 'vitest';
import { openStorage, type Engine, type Storage } from '../../src/storage/db.js';
import { migrations } from '../../src/storage/migrations/index.js';

/**
 * A database migrated up to the migration before `firstNew` (SQLite in memory, or a fresh
 * PostgreSQL schema of this run), for tests of what a migration does to existing data.
 */
export async function openBeforeMigration(engine: Engine, firstNew: string): Promise<Storage> {
  let storage: Storage;
  if (engine === 'sqlite') {
    storage = openStorage('sqlite::memory:');
  } else {
    const url = process.env.TALLY_TEST_POSTGRES_URL as string;
    const schema = `${inject('pgRunPrefix')}${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
    await admin.end();
    storage = openStorage(url, { schema, poolSize: 3 });
  }
  await sql`create table tally_migrations (name text primary key, applied_at bigint not null)`.execute(
    storage.db,
  );
  await storage.db.transaction().execute(async (trx) => {
    for (const name of Object.keys(migrations).sort()) {
      if (name >= firstNew) break;
      await migrations[name]?.up(trx);
      await sql`insert into tally_migrations (name, applied_at) values (${name}, 0)`.execute(trx);
    }
  });
  return storage;
}
