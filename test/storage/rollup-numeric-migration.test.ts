import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUM_COLUMNS as ALL_SUM_COLUMNS } from '../../src/reports/rollups.js';

/** The sums the rollups had before migration 0060 added the review sums. */
const SUM_COLUMNS = ALL_SUM_COLUMNS.filter((column) => !/review_(hours|cost)_micros$/.test(column));
import { migrateToLatest, type Db, type Engine, type Storage } from '../../src/storage/db.js';
import { openBeforeMigration } from '../support/before-migration.js';
import { ENGINES } from '../support/engines.js';

const FIRST_NEW = '2026_11_24_0011_rollup_sums_numeric';
const BIGINT_MAX = 2n ** 63n - 1n;

function openAtPreviousMigration(engine: Engine): Promise<Storage> {
  return openBeforeMigration(engine, FIRST_NEW);
}

/** Rollup rows as sums up to 2^63 − 1 left them, every column a different value. */
function oldRows(): Array<Record<string, bigint | string>> {
  return Array.from({ length: 20 }, (_, i) => ({
    org_id: 'org_before_0011',
    grain: 'all',
    day: BigInt(20_000 + i),
    agent_id: '',
    task_type: '',
    client_key: '',
    shard: 0n,
    ...Object.fromEntries(
      SUM_COLUMNS.map((column, j) => [
        column,
        column.endsWith('events') ? BigInt(i * 100 + j) : BIGINT_MAX - BigInt(i * 1_000_003 + j * 7),
      ]),
    ),
  }));
}

/** Every rollup row, every value as the database writes it in text (exact on both engines). */
async function rowsAsText(db: Db): Promise<string[][]> {
  const columns = ['day', ...SUM_COLUMNS].map((c) => `CAST(${c} AS text)`).join(', ');
  const { rows } = await sql<Record<string, string>>`
    SELECT ${sql.raw(columns)} FROM report_rollups ORDER BY day`.execute(db);
  return rows.map((row) => Object.values(row).map(String));
}

describe.each(ENGINES)('migration 0011 on rollups with sums near 2^63 (%s)', (engine) => {
  let storage: Storage;
  beforeAll(async () => {
    storage = await openAtPreviousMigration(engine);
  });
  afterAll(async () => storage.close());

  it('keeps every value exactly, and sums may then pass 2^63', async () => {
    const rows = oldRows();
    const names = Object.keys(rows[0] as object);
    for (const row of rows) {
      // Bound as text on PostgreSQL (pg has no int8 parameters beyond 2^53), as BigInt on SQLite.
      const values = names.map((name) => {
        const value = row[name] as bigint | string;
        return engine === 'postgres' && typeof value === 'bigint'
          ? sql`${String(value)}::bigint`
          : sql`${value}`;
      });
      await sql`INSERT INTO report_rollups (${sql.raw(names.join(', '))}) VALUES (${sql.join(values)})`.execute(
        storage.db,
      );
    }
    const before = await rowsAsText(storage.db);
    // Day, events, hours, then money saved (the fourth sum column, j = 2).
    expect(before[0]?.[3]).toBe(String(BIGINT_MAX - 14n));

    expect(await migrateToLatest(storage.db)).toContain(FIRST_NEW);
    expect(await rowsAsText(storage.db)).toEqual(before);

    // What the folding stage's upsert does: add one event at the maxima to a row near 2^63.
    await sql`
      UPDATE report_rollups SET cost_saved_micros = cost_saved_micros + 8760000000000000
      WHERE day = 20000`.execute(storage.db);
    const { rows: after } = await sql<{ c: unknown }>`
      SELECT CAST(cost_saved_micros AS text) AS c FROM report_rollups WHERE day = 20000`.execute(storage.db);
    const exact = BIGINT_MAX - 14n + 8_760_000_000_000_000n;
    const stored = String(after[0]?.c);
    // PostgreSQL: exact (numeric). SQLite: the overflowing integer becomes a REAL (README "Limits").
    if (engine === 'postgres') expect(stored).toBe(String(exact));
    else expect(Math.abs(Number(stored) - Number(exact))).toBeLessThanOrEqual(Number(exact) * 1e-15);
  });
});
