import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createTestStorage } from '../support/engines.js';

const POSTGRES_URL = process.env.TALLY_TEST_POSTGRES_URL;

describe.skipIf(!POSTGRES_URL)('migrations on a shared PostgreSQL database', () => {
  it('migrates each schema on its own while other schemas come and go', async () => {
    // Someone else keeps creating and dropping schemas with tables in the same database.
    const churn = new pg.Client({ connectionString: POSTGRES_URL });
    await churn.connect();
    let stop = false;
    const churning = (async () => {
      while (!stop) {
        const schema = `churn_${randomBytes(6).toString('hex')}`;
        await churn.query(`CREATE SCHEMA ${schema}; CREATE TABLE ${schema}.t (id serial primary key)`);
        await churn.query(`DROP SCHEMA ${schema} CASCADE`);
        await sleep(10);
      }
    })();

    // Migrating one schema must neither see another schema's migration table as its own nor
    // fail when another schema is dropped meanwhile (Kysely's Migrator did both).
    const cycle = async () => {
      const storage = await createTestStorage('postgres');
      try {
        const tables = await sql<{ name: string }>`
          select table_name as name from information_schema.tables where table_schema = ${storage.schema}`.execute(
          storage.db,
        );
        expect(tables.rows.map((t) => t.name)).toEqual(
          expect.arrayContaining(['tally_migrations', 'api_keys', 'events']),
        );
      } finally {
        await storage.destroy();
      }
    };
    try {
      for (let round = 0; round < 4; round++) await Promise.all(Array.from({ length: 4 }, cycle));
    } finally {
      stop = true;
      await churning;
      await churn.end();
    }
  });
});
