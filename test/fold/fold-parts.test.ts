import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OrgCtx } from '../../src/context.js';
import { FOLD_PART_IDS, FOLD_PARTS, GRAINS, foldPartOf, type Grain } from '../../src/reports/rollups.js';
import { migrateToLatest } from '../../src/storage/db.js';
import { readFoldState } from '../../src/storage/snapshot.js';
import { foldOnce } from '../../src/fold/pass.js';
import { foldLockClass } from '../../src/fold/plan.js';
import { FoldStage } from '../../src/fold/stage.js';
import { tailState } from '../../src/fold/tail.js';
import { seed } from '../reports/seed.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { unlimited } from '../reports/unlimited.js';
import { PAUSED, derived, expectExact, foldAll, orgWithWebhook, randomEvents } from './derived.js';

const NOW = Date.parse('2026-11-20T12:00:00.000Z');
const DAY = 86_400_000;

/** The events of an organisation in a grain's day rows. */
async function grainEvents(ctx: OrgCtx, grain: Grain): Promise<number> {
  const { rows } = await sql<{ n: unknown }>`
    SELECT COALESCE(SUM(events), 0) AS n FROM report_rollups WHERE org_id = ${ctx.org.id} AND grain = ${grain}`.execute(
    ctx.db,
  );
  return Number(rows[0]?.n ?? 0);
}

async function watermarks(h: Harness): Promise<string[]> {
  const states = await Promise.all(FOLD_PART_IDS.map((part) => readFoldState(h.ctx.db, part)));
  return states.map((s) => String(s.watermark));
}

/** Polls `check` until it holds (the stage's loops run on their own). */
async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`timed out waiting until ${what}`);
}

describe('the fold parts', () => {
  it('cover every grain once', () => {
    const grains = FOLD_PARTS.flatMap((p) => [...p.grains]);
    expect([...grains].sort()).toEqual(Object.keys(GRAINS).sort());
    expect(FOLD_PART_IDS).toEqual([1, 2]);
    expect(foldPartOf('all')).toBe(1);
  });
});

/**
 * Each fold part (rollups.ts FOLD_PARTS) has its own watermark: a report reads the rollups of
 * its grain's part up to that part's watermark and the tail after it, usage reads part 1's, and
 * /metrics counts the tail from the lowest.
 */
describe.each(ENGINES)('fold parts with their own watermarks (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, {
      now: new Date(NOW).toISOString(),
      rateLimiter: unlimited,
      ...PAUSED,
    });
  });
  afterAll(async () => h.close());

  it('one part folded: its grains, usage and messages once; the other part read from the tail, exact', async () => {
    await foldAll(h.ctx);
    const ctx = await orgWithWebhook(h);
    await seed(ctx, randomEvents(3, 30, NOW));
    for (const sqlFrom of [1, 1000]) {
      // Part 1 only, in SQL and then in the service.
      await seed(ctx, randomEvents(4 + sqlFrom, 10, NOW));
      const before = await watermarks(h);
      await foldAllOf(h, [1], sqlFrom);
      const after = await watermarks(h);
      expect(after[0]).not.toBe(before[0]);
      expect(after[1]).toBe(before[1]);
      const n = sqlFrom === 1 ? 40 : 50;
      expect(await grainEvents(ctx, 'all')).toBe(n);
      expect(await grainEvents(ctx, 'agent+client')).toBe(n);
      expect(await derived(h.ctx.db, ctx.org.id)).toMatchObject({ usage: n, created: n });
      // Nothing of part 2 yet: its reports come from the tail.
      expect(await grainEvents(ctx, 'agent+task_type+client')).toBe(sqlFrom === 1 ? 0 : 40);
      expect(await grainEvents(ctx, 'task_type+client')).toBe(sqlFrom === 1 ? 0 : 40);
      // Not folded into every part: still the tail /metrics shows.
      expect((await tailState(h.ctx.db, h.ctx.engine)).events).toBe(sqlFrom === 1 ? 40 : 10);
      await expectExact(ctx);

      // Part 2 catches up: its grains once, and no second usage count or message.
      await foldAllOf(h, [2], sqlFrom);
      expect(await grainEvents(ctx, 'agent+task_type+client')).toBe(n);
      expect(await grainEvents(ctx, 'task_type+client')).toBe(n);
      expect(await derived(h.ctx.db, ctx.org.id)).toMatchObject({
        rolledUp: n,
        rolledUpMonths: n,
        usage: n,
        created: n,
        createdEvents: n,
      });
      expect((await tailState(h.ctx.db, h.ctx.engine)).events).toBe(0);
      await expectExact(ctx);
    }
  });

  it('a day that ends closes its weeks and months in each part on its own', async () => {
    await foldAll(h.ctx);
    const ctx = await orgWithWebhook(h);
    await seed(ctx, randomEvents(9, 25, NOW));
    await foldAll(h.ctx);
    // Eight days on: part 1 passes the ends of a week and of days, part 2 not yet.
    h.clock.set(new Date(NOW + 8 * DAY));
    try {
      await foldOnce(h.ctx, { parts: [1] });
      const [one, two] = await Promise.all([readFoldState(h.ctx.db, 1), readFoldState(h.ctx.db, 2)]);
      expect(one.monthsThrough).toBeGreaterThan(two.monthsThrough);
      expect(one.coarseThrough).toBeGreaterThan(two.coarseThrough);
      await expectExact(ctx);
      await foldOnce(h.ctx, { parts: [2] });
      // (On PostgreSQL each watermark, the adjustments' too, is the snapshot's xmin at its part's pass.)
      const { watermark: _1, adjustWatermark: _a1, ...closedOne } = await readFoldState(h.ctx.db, 1);
      const { watermark: _2, adjustWatermark: _a2, ...closedTwo } = await readFoldState(h.ctx.db, 2);
      expect(closedTwo).toEqual(closedOne);
      await expectExact(ctx);
    } finally {
      h.clock.set(new Date(NOW));
    }
  });

  it('the stage folds every part; on PostgreSQL a backlog part by part at once, so one part waits alone', async () => {
    await foldAll(h.ctx);
    const ctx = await orgWithWebhook(h);
    // On PostgreSQL another process holds part 2's lock: the stage's part 1 goes on folding.
    const holder = engine === 'postgres' ? await h.ctx.db.startTransaction().execute() : null;
    if (holder)
      await sql`SELECT pg_advisory_xact_lock(${foldLockClass(2)}, hashtext(current_schema()))`.execute(
        holder,
      );
    // A tail of one event is a backlog here (PARALLEL_FROM is 10,000).
    const stage = new FoldStage(h.ctx, { idlePollMs: 5, parallelFrom: 1 });
    stage.start();
    try {
      await seed(ctx, randomEvents(21, 20, NOW));
      await until(async () => (await derived(h.ctx.db, ctx.org.id)).usage === 20, 'part 1 folded');
      expect(await grainEvents(ctx, 'agent')).toBe(20);
      if (holder) {
        expect(await grainEvents(ctx, 'agent+task_type+client')).toBe(0);
        expect((await tailState(h.ctx.db, h.ctx.engine)).events).toBe(20);
        await expectExact(ctx);
        await holder.rollback().execute();
      }
      await until(async () => (await tailState(h.ctx.db, h.ctx.engine)).events === 0, 'every part folded');
      expect(await grainEvents(ctx, 'agent+task_type+client')).toBe(20);
      expect(await derived(h.ctx.db, ctx.org.id)).toMatchObject({ rolledUp: 20, usage: 20, created: 20 });
      await expectExact(ctx);
    } finally {
      if (holder && !holder.isCommitted && !holder.isRolledBack) await holder.rollback().execute();
      await stage.stop();
    }
  });

  it('migration 0016 starts part 2 where part 1 is: reports unchanged, then folded once', async () => {
    await foldAll(h.ctx);
    const ctx = await orgWithWebhook(h);
    await seed(ctx, randomEvents(31, 30, NOW));
    await foldAll(h.ctx);
    await seed(ctx, randomEvents(32, 10, NOW));
    // The database before 0016: one row of fold_state, ten events in its tail.
    await sql`DELETE FROM fold_state WHERE id = 2`.execute(h.ctx.db);
    await sql`DELETE FROM tally_migrations WHERE name = '2026_11_25_0016_fold_parts'`.execute(h.ctx.db);
    expect(await migrateToLatest(h.ctx.db)).toEqual(['2026_11_25_0016_fold_parts']);
    // Migration 0016, run again after 0060, leaves part 2 the adjustments' first watermark (the
    // test has no adjustments).
    const { adjustWatermark: _a2, ...two } = await readFoldState(h.ctx.db, 2);
    const { adjustWatermark: _a1, ...one } = await readFoldState(h.ctx.db, 1);
    expect(two).toEqual(one);
    expect((await tailState(h.ctx.db, h.ctx.engine)).events).toBe(10);
    await expectExact(ctx);
    await foldAll(h.ctx);
    expect(await derived(h.ctx.db, ctx.org.id)).toMatchObject({
      rolledUp: 40,
      rolledUpMonths: 40,
      usage: 40,
      created: 40,
    });
    await expectExact(ctx);
  });
});

/** Passes of `parts` until their tail is folded (PostgreSQL may hold it back a moment). */
async function foldAllOf(h: Harness, parts: readonly (typeof FOLD_PART_IDS)[number][], sqlFrom: number) {
  for (let i = 0; i < 500; i++) {
    const result = await foldOnce(h.ctx, { parts, sqlFrom });
    if (result.more) continue;
    const { rows } = await sql<{ n: unknown }>`
      SELECT COUNT(*) AS n FROM events
      WHERE ingest_seq >= (SELECT watermark FROM fold_state WHERE id = ${parts[0]})`.execute(h.ctx.db);
    if (Number(rows[0]?.n ?? 0) === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('the part did not catch up');
}
