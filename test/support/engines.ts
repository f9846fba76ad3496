import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { migrateToLatest, openStorage, type Engine, type Storage } from '../../src/storage/db.js';

const POSTGRES_URL = process.env.TALLY_TEST_POSTGRES_URL;

/** Every storage test runs once per engine; PostgreSQL when TALLY_TEST_POSTGRES_URL is set. */
export const ENGINES: Engine[] = POSTGRES_URL ? ['sqlite', 'postgres'] : ['sqlite'];

export interface TestStorage extends Storage {
  /** The URL (and, for PostgreSQL, the schema) another process can open the same data with. */
  url: string;
  schema: string | undefined;
  destroy(): Promise<void>;
}

/** A fresh, migrated database: in-memory SQLite, or a throw-away schema on PostgreSQL. */
export async function createTestStorage(
  engine: Engine,
  options: { file?: string } = {},
): Promise<TestStorage> {
  if (engine === 'sqlite') {
    const url = `sqlite:${options.file ?? ':memory:'}`;
    const storage = openStorage(url);
    await migrateToLatest(storage.db);
    return { ...storage, url, schema: undefined, destroy: () => storage.close() };
  }
  if (!POSTGRES_URL) throw new Error('TALLY_TEST_POSTGRES_URL is not set');
  // Dropped by the global teardown, not here: see global-setup.ts.
  const schema = `${inject('pgRunPrefix')}${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.end();
  const storage = openStorage(POSTGRES_URL, { schema, poolSize: 5 });
  await migrateToLatest(storage.db);
  return {
    ...storage,
    url: POSTGRES_URL,
    schema,
    destroy: () => storage.close(),
  };
}
