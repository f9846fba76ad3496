import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeMonthDays } from '../../src/fold/rollups.js';
import { migrateToLatest } from '../../src/storage/db.js';
import { readFoldState } from '../../src/storage/snapshot.js';
import type { OrgCtx } from '../../src/context.js';
import { lcg, seed, type SeedEvent } from '../reports/seed.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, pausedStageOptions, type Harness } from '../support/harness.js';
import { expectExact, foldAll } from '../fold/derived.js';

const NOW = Date.parse('2026-11-20T12:00:00.000Z');
const DAY = 86_400_000;
const TODAY = Math.floor(NOW / DAY);

/** The events of the month rows of the three-key grain, by month. */
async function monthEvents(ctx: OrgCtx): Promise<Record<string, number>> {
  const { rows } = await sql<{ day: unknown; n: unknown }>`
    SELECT day, SUM(events) AS n FROM report_rollups
    WHERE org_id = ${ctx.org.id} AND grain = 'agent+task_type+client/month' GROUP BY day ORDER BY day`.execute(
    ctx.db,
  );
  return Object.fromEntries(
    rows.map((r) => [new Date(Number(r.day) * DAY).toISOString().slice(0, 7), Number(r.n)]),
  );
}

/**
 * Migration 0015 (month rows of ended days only) on a database whose month rows hold every
 * folded event, today's and tomorrow's included, as the code before it kept them.
 */
describe.each(ENGINES)('migration 0015 on a database with rollups (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, pausedStageOptions(NOW));
  });
  afterAll(async () => h.close());

  it('starts after the last folded day: reports unchanged, and later days closed once', async () => {
    const ctx = await h.orgCtx(await h.createOrg({ plan: 'pro' }));
    const rand = lcg(5);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)] as T;
    const events: SeedEvent[] = Array.from({ length: 60 }, (_, i) => ({
      agent: pick(['a', 'b']),
      taskType: pick(['support_ticket_reply', 'dev_bug_fix']),
      outcome: pick(['success', 'failure'] as const),
      client: pick(['k1', null]),
      // Back-dated up to 40 days; every tenth of today or tomorrow.
      occurredAt:
        i % 10 === 0 ? NOW + (i % 20 === 0 ? 0.6 * DAY : -DAY / 3) : NOW - Math.floor(rand() * 40 * DAY),
      agentCost: null,
    }));
    await seed(ctx, events);
    await foldAll(h.ctx);
    // The code before 0015: month rows of every day, and no months_through.
    await h.ctx.db.transaction().execute(async (trx) => {
      const { monthsThrough } = await readFoldState(trx);
      await closeMonthDays(trx, engine, monthsThrough, TODAY + 2);
      await sql`ALTER TABLE fold_state DROP COLUMN months_through`.execute(trx);
      await sql`DELETE FROM tally_migrations WHERE name = '2026_11_24_0015_months_through'`.execute(trx);
    });
    const before = await monthEvents(ctx);
    expect(Object.values(before).reduce((a, b) => a + b, 0)).toBe(events.length);

    expect(await migrateToLatest(h.ctx.db)).toEqual(['2026_11_24_0015_months_through']);
    // After tomorrow, the last day with a folded event.
    expect((await readFoldState(h.ctx.db)).monthsThrough).toBe(TODAY + 2);
    expect(await monthEvents(ctx)).toEqual(before);
    await expectExact(ctx);
    // A pass the same day closes nothing; new events of today and tomorrow fold into their month.
    await seed(ctx, [{ ...(events[0] as SeedEvent), occurredAt: NOW }]);
    await foldAll(h.ctx);
    expect((await readFoldState(h.ctx.db)).monthsThrough).toBe(TODAY + 2);
    const after = await monthEvents(ctx);
    expect(Object.values(after).reduce((a, b) => a + b, 0)).toBe(events.length + 1);
    await expectExact(ctx);

    // Four days on, the stage closes the days after tomorrow only: still every event once.
    h.clock.set(new Date(NOW + 4 * DAY));
    await seed(ctx, [{ ...(events[0] as SeedEvent), occurredAt: NOW + 3 * DAY }]);
    await foldAll(h.ctx);
    expect((await readFoldState(h.ctx.db)).monthsThrough).toBe(TODAY + 4);
    expect(Object.values(await monthEvents(ctx)).reduce((a, b) => a + b, 0)).toBe(events.length + 2);
    await expectExact(ctx);
    h.clock.set(new Date(NOW));
  });
});
