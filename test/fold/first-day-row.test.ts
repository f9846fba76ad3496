import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { firstDayRow } from '../../src/fold/rollups.js';
import { SUM_COLUMNS } from '../../src/reports/rollups.js';
import type { DbOrTrx } from '../../src/storage/db.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, pausedStageOptions, type Harness } from '../support/harness.js';

const NOW = Date.parse('2026-11-20T12:00:00.000Z');
const TODAY = Math.floor(NOW / 86_400_000);
const FIRST = TODAY - 89;
/** Day rows of one grain over 90 days, as a backfill leaves them. */
const ROWS = 20_000;
const GRAIN = 'agent+task_type';

/** PostgreSQL: the index entries scans of the rollups' primary key have read so far. */
async function keyEntriesRead(db: DbOrTrx): Promise<number> {
  const { rows } = await sql<{ n: string }>`
    SELECT idx_tup_read::text AS n FROM pg_stat_user_indexes
    WHERE schemaname = current_schema() AND indexrelname = 'report_rollups_pk'`.execute(db);
  return Number(rows[0]?.n);
}

/**
 * The passes that close a backlog's weeks and days start at the first day with day rows
 * (fold/plan.ts planPart, fold/rollups.ts firstDayRow). PostgreSQL planned MIN(day) as an aggregate
 * over every row after `from` when the rollups' statistics were older than the backfill: each
 * such pass read 100,000 and more of bench:ingest's rollup rows per grain.
 */
describe.each(ENGINES)('the first day with rows to close (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, pausedStageOptions(NOW));
    const db = h.ctx.db;
    const sums = sql.raw(SUM_COLUMNS.join(', '));
    const ones = sql.raw(SUM_COLUMNS.map(() => '1').join(', '));
    const insert = (from: number, to: number) => sql`
      WITH RECURSIVE n(i) AS (SELECT ${sql.lit(from)} UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ${sql.lit(to)})
      INSERT INTO report_rollups (org_id, grain, day, agent_id, task_type, client_key, shard, ${sums})
      SELECT ${h.org.id}, ${GRAIN}, ${sql.lit(FIRST)} + i % 90, 'agent-' || i, 'task', '', 0, ${ones} FROM n`;
    await insert(0, 1).execute(db);
    if (engine === 'postgres') {
      // The statistics of a small table, as when a backfill begins, kept through the test.
      await sql`ALTER TABLE report_rollups SET (autovacuum_enabled = false)`.execute(db);
      await sql`ANALYZE report_rollups`.execute(db);
    }
    await insert(1, ROWS).execute(db);
  });
  afterAll(async () => h.close());

  it('is the earliest day from `from` on with day rows of the grains, or Infinity', async () => {
    const db = h.ctx.db;
    expect(await firstDayRow(db, FIRST - 30, [GRAIN])).toBe(FIRST);
    expect(await firstDayRow(db, FIRST + 40, [GRAIN])).toBe(FIRST + 40);
    expect(await firstDayRow(db, TODAY, [GRAIN])).toBe(TODAY);
    expect(await firstDayRow(db, TODAY + 1, [GRAIN])).toBe(Infinity);
    // Grains without rows, and grains without week or month rows, have nothing to close.
    expect(await firstDayRow(db, FIRST, ['agent+client', 'task_type+client'])).toBe(Infinity);
    expect(await firstDayRow(db, FIRST, ['agent', 'all'])).toBe(Infinity);
  });

  // Only PostgreSQL counts the index entries its scans read (pg_stat_user_indexes).
  if (engine === 'postgres')
    it('reads the first index entry, not every row after it', async () => {
      const db = h.ctx.db;
      const before = await keyEntriesRead(db);
      await db.transaction().execute(async (trx) => {
        expect(await firstDayRow(trx, FIRST + 1, [GRAIN])).toBe(FIRST + 1);
        // This backend's counts go to the shared statistics when the transaction ends.
        await sql`SELECT pg_stat_force_next_flush()`.execute(trx);
      });
      const read = (await keyEntriesRead(db)) - before;
      // MIN(day) read every entry from the day on: about ROWS × 89 / 90 of them.
      expect(read).toBeGreaterThan(0);
      expect(read).toBeLessThan(100);
    });
});
