import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as rollupPairs from '../../src/storage/migrations/2026_11_22_0004_rollup_pairs.js';
import * as rollupBuckets from '../../src/storage/migrations/2026_11_22_0005_rollup_buckets.js';
import * as rollupOutcomes from '../../src/storage/migrations/2026_11_22_0006_rollup_outcomes.js';
import * as rollupSumsNumeric from '../../src/storage/migrations/2026_11_24_0011_rollup_sums_numeric.js';
import * as rollupFewerRows from '../../src/storage/migrations/2026_11_24_0012_rollup_fewer_rows.js';
import { SUM_COLUMNS as ALL_SUM_COLUMNS } from '../../src/reports/rollups.js';

/** The sums the rollups had before migration 0060 added the review sums. */
const SUM_COLUMNS = ALL_SUM_COLUMNS.filter((column) => !/review_(hours|cost)_micros$/.test(column));
import type { Db } from '../../src/storage/db.js';
import { readFoldState } from '../../src/storage/snapshot.js';
import { foldOnce } from '../../src/fold/pass.js';
import { lcg, seed, type SeedEvent } from '../reports/seed.js';
import { unlimited } from '../reports/unlimited.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';

const NOW = Date.parse('2026-11-20T12:00:00.000Z');
const DAY = 86_400_000;

/** Every rollup row with its shards added up, in a fixed order. */
async function rollups(db: Db): Promise<unknown[]> {
  const result = await sql<Record<string, unknown>>`
    SELECT org_id, grain, day, agent_id, task_type, client_key,
           ${sql.join(SUM_COLUMNS.map((column) => sql`SUM(${sql.ref(column)}) AS ${sql.ref(column)}`))}
    FROM report_rollups
    GROUP BY org_id, grain, day, agent_id, task_type, client_key
    ORDER BY org_id, grain, day, agent_id, task_type, client_key`.execute(db);
  return result.rows.map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, String(v)])));
}

describe.each(ENGINES)('the rollup migrations (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, { now: new Date(NOW).toISOString(), rateLimiter: unlimited });
  });
  afterAll(async () => h.close());

  it('rebuilds from the events exactly the rows tracking keeps', async () => {
    const rand = lcg(11);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)] as T;
    for (let o = 0; o < 2; o++) {
      const org = await h.createOrg({ plan: 'pro' });
      const events: SeedEvent[] = Array.from({ length: 60 }, () => ({
        agent: pick(['a', 'b', 'a\u0001b']),
        taskType: pick(['support_ticket_reply', 'dev_bug_fix', 'custom_thing']),
        outcome: pick(['success', 'failure', 'needs_review'] as const),
        client: pick(['k1', 'k2', '', null]),
        occurredAt: NOW - Math.floor(rand() * 70 * DAY),
        agentCost: rand() < 0.5 ? null : Math.round(rand() * 1e6) / 1e6,
        baselineMinutes: 1 + Math.floor(rand() * 300),
      }));
      await seed(await h.orgCtx(org), events);
    }
    // Once the weeks of the events have ended, the folding stage has closed them: their week
    // rows are kept too (rollups.ts coarseThroughAt), as the migrations build them for every week.
    h.clock.set(new Date(Date.parse('2026-12-05T12:00:00.000Z')));
    while ((await foldOnce(h.ctx)).more);
    expect((await readFoldState(h.ctx.db)).coarseThrough).toBe(Date.parse('2026-12-01') / DAY);
    const kept = await rollups(h.ctx.db);
    expect(kept.length).toBeGreaterThan(100);

    // 0004 rebuilds the table with the grains of its day; 0005 adds the later grains and the
    // week and month buckets; 0006 rebuilds it with sums by outcome in columns, weeks cut at
    // month ends and half weeks; 0011 widens the sums; 0012 drops the half weeks.
    let halves = 0;
    await h.ctx.db.transaction().execute(async (trx) => {
      await rollupPairs.up(trx);
      await rollupBuckets.up(trx);
      await rollupOutcomes.up(trx);
      halves = (await rollups(trx)).filter((row) =>
        (row as { grain: string }).grain.endsWith('/half'),
      ).length;
      await rollupSumsNumeric.up(trx);
      await rollupFewerRows.up(trx);
    });
    expect(halves).toBeGreaterThan(0);
    expect(await rollups(h.ctx.db)).toEqual(kept);
    const grains = new Set(kept.map((row) => (row as { grain: string }).grain));
    expect(grains).toContain('agent+task_type+client/month');
    expect(grains).toContain('task_type+client/week');
    expect([...grains].filter((grain) => grain.endsWith('/half'))).toEqual([]);
    if (engine === 'postgres') {
      // The primary key keeps no sums (fold updates can be HOT), and pages keep room for them.
      const { rows } = await sql<{ keys: number; columns: number; options: string[] | null }>`
        SELECT i.indnkeyatts AS keys, i.indnatts AS columns, c.reloptions AS options
        FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
        WHERE i.indexrelid = 'report_rollups_pk'::regclass`.execute(h.ctx.db);
      expect(rows).toEqual([{ keys: 7, columns: 7, options: ['fillfactor=70'] }]);
    }
    // Weeks cut at month ends: some week row starts on a day other than a Monday.
    const weekDays = kept
      .filter((row) => (row as { grain: string }).grain.endsWith('/week'))
      .map((row) => new Date(Number((row as { day: string }).day) * DAY).getUTCDay());
    expect(weekDays).toContain(1);
    expect(weekDays.some((d) => d !== 1)).toBe(true);
  });
});
