import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createTestStorage } from '../support/engines.js';

const POSTGRES_URL = process.env.TALLY_TEST_POSTGRES_URL;

describe.skipIf(!POSTGRES_URL)('prepared statements on PostgreSQL', () => {
  it('prepares a statement with parameters once per connection, but never one selecting `*`', async () => {
    const storage = await createTestStorage('postgres');
    try {
      const statements = await storage.db.connection().execute(async (db) => {
        for (let i = 0; i < 3; i++) {
          await db.selectFrom('organizations').select('id').where('id', '=', `org_${i}`).execute();
          await db.selectFrom('organizations').selectAll().where('id', '=', `org_${i}`).execute();
        }
        const named = await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(
          db,
        );
        return named.rows.map((r) => r.statement);
      });
      expect(statements).toContain('select "id" from "organizations" where "id" = $1');
      expect(statements.filter((s) => s.includes('*'))).toEqual([]);
    } finally {
      await storage.destroy();
    }
  });
});
