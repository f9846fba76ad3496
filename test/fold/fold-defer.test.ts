import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OrgCtx } from '../../src/context.js';
import { FOLD_PART_IDS, coarseThroughAt, monthsThroughAt } from '../../src/reports/rollups.js';
import { readFoldState, type FoldState } from '../../src/storage/snapshot.js';
import { foldOnce, type FoldOptions } from '../../src/fold/pass.js';
import { tailState } from '../../src/fold/tail.js';
import { TailMeter } from '../../src/fold/tail-meter.js';
import { seed } from '../reports/seed.js';
import { unlimited } from '../reports/unlimited.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import {
  PAUSED,
  derived,
  expectExact,
  foldAll,
  orgWithWebhook,
  randomEvents,
  rowsAndDeltas,
} from './derived.js';

const NOW = Date.parse('2026-11-20T12:00:00.000Z');

async function states(h: Harness): Promise<FoldState[]> {
  return Promise.all(FOLD_PART_IDS.map((part) => readFoldState(h.ctx.db, part)));
}

/**
 * The first pass that folds events. On PostgreSQL a pass folds only below the oldest running
 * transaction of the server, which another test's may hold back for a moment.
 */
async function passWithEvents(h: Harness, options: FoldOptions) {
  for (let i = 0; i < 500; i++) {
    const result = await foldOnce(h.ctx, options);
    if (result.folded > 0) return result;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('no pass folded an event');
}

/** An organisation's week and month rows. */
async function coarseRows(ctx: OrgCtx): Promise<number> {
  const { rows } = await sql<{ n: unknown }>`
    SELECT COUNT(*) AS n FROM report_rollups
    WHERE org_id = ${ctx.org.id} AND (grain LIKE '%/week' OR grain LIKE '%/month')`.execute(ctx.db);
  return Number(rows[0]?.n ?? 0);
}

/**
 * A pass of a backlog whose events reach into closed weeks and days leaves their week and month
 * rows to their day rows (fold/plan.ts planPart, DEFER_FROM), and the passes after the backlog build
 * them from the day rows, a step at a time (CLOSE_DAYS). Reports stay exact at every pass.
 */
describe.each(ENGINES)('a back-dated backlog folds into day rows first (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, {
      now: new Date(NOW).toISOString(),
      rateLimiter: unlimited,
      ...PAUSED,
    });
    await foldAll(h.ctx);
  });
  afterAll(async () => h.close());

  it('writes day rows only, then closes its weeks and months in steps into the rows a fold as they come writes', async () => {
    const closed = await states(h);
    for (const state of closed) {
      expect(state).toMatchObject({
        coarseThrough: coarseThroughAt(NOW),
        monthsThrough: monthsThroughAt(NOW),
      });
    }
    const ctx = await orgWithWebhook(h);
    // A few events folded as they come first: the backlog reopens their weeks and months too.
    const early = randomEvents(10, 5, NOW);
    await seed(ctx, early);
    await foldAll(h.ctx);
    expect(await coarseRows(ctx)).toBeGreaterThan(0);
    const backlog = randomEvents(11, 60, NOW);
    await seed(ctx, backlog);
    const events = [...early, ...backlog];
    // Passes of 20 events that defer (as a pass of DEFER_FROM events or more would, where the
    // rebuild reads few rows of other days: tested below); in SQL, as a backlog folds.
    const pass: FoldOptions = { limit: 20, defer: true, sqlFrom: 1 };

    const meter = new TailMeter(h.ctx.db, h.ctx.engine, () => h.clock.now().getTime());
    expect((await meter.read()).closingDays).toBe(0);
    const first = await passWithEvents(h, pass);
    // (On PostgreSQL a pass may stop short of 20 while another test's transaction runs.)
    expect(first.more).toBe(true);
    expect(first.folded).toBeGreaterThan(0);
    const deferred = await states(h);
    // Every part's points moved back (the parts were closed up to now).
    for (const state of deferred) {
      expect(state.coarseThrough).toBeLessThan(coarseThroughAt(NOW));
      expect(state.monthsThrough).toBeLessThan(monthsThroughAt(NOW));
    }
    // Its events are in day rows only: they are all of days whose weeks and months are open now.
    const { coarseRowsBefore } = await sql<{ n: unknown }>`
      SELECT COUNT(*) AS n FROM report_rollups WHERE org_id = ${ctx.org.id} AND grain LIKE '%/month'
        AND day >= ${Math.min(...deferred.map((s) => s.monthsThrough))}`
      .execute(ctx.db)
      .then(({ rows }) => ({ coarseRowsBefore: Number(rows[0]?.n ?? 0) }));
    expect(coarseRowsBefore).toBe(0);
    // /metrics (tally_fold_closing_days): the days left to their day rows, from the earliest.
    expect((await meter.read()).closingDays).toBe(
      monthsThroughAt(NOW) - Math.min(...deferred.map((s) => s.monthsThrough)),
    );
    expect((await derived(h.ctx.db, ctx.org.id)).rolledUp).toBe(5 + first.folded);
    await expectExact(ctx);

    // The rest of the backlog, then the closing steps, each exact.
    let passes = 0;
    let closingPasses = 0;
    for (;;) {
      const result = await foldOnce(h.ctx, pass);
      passes += 1;
      if (result.folded === 0 && result.more) closingPasses += 1;
      await expectExact(ctx);
      if (!result.more && (await tailState(h.ctx.db, h.ctx.engine)).events === 0) break;
      if (!result.more) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(passes).toBeLessThan(500);
    }
    // About 80 days of closed weeks and days, a step per pass.
    expect(closingPasses).toBeGreaterThan(3);
    expect((await meter.read()).closingDays).toBe(0);
    for (const state of await states(h)) {
      expect(state).toMatchObject({
        coarseThrough: coarseThroughAt(NOW),
        monthsThrough: monthsThroughAt(NOW),
      });
    }
    const { stored, built } = await rowsAndDeltas(ctx, coarseThroughAt(NOW), monthsThroughAt(NOW));
    expect(stored).toEqual(built);
    expect(await coarseRows(ctx)).toBeGreaterThan(0);
    expect(await derived(h.ctx.db, ctx.org.id)).toEqual({
      rolledUp: 65,
      rolledUpMonths: 65,
      usage: 65,
      created: 65,
      createdEvents: 65,
      firsts: new Set(events.map((e) => e.agent)).size,
    });
  });

  it('a small backfill into days of many folded events folds into their weeks and months as it comes', async () => {
    const ctx = await orgWithWebhook(h);
    await seed(ctx, randomEvents(12, 80, NOW));
    await foldAll(h.ctx);
    const closed = await states(h);
    // 12 back-dated events, each pass of them a backlog by its size (from 1 on): the day rows a
    // rebuild would read again (those of the earlier organisation and these 80 events, two
    // grains of two or three keys in each part) are more than the 24 they could add.
    await seed(ctx, randomEvents(13, 12, NOW));
    const result = await passWithEvents(h, { deferFrom: 1, sqlFrom: 1 });
    expect(result.more).toBe(false);
    const points = (all: FoldState[]) =>
      all.map(({ coarseThrough, monthsThrough }) => ({ coarseThrough, monthsThrough }));
    expect(points(await states(h))).toEqual(points(closed));
    await foldAll(h.ctx);
    expect(points(await states(h))).toEqual(points(closed));
    const { stored, built } = await rowsAndDeltas(ctx, coarseThroughAt(NOW), monthsThroughAt(NOW));
    expect(stored).toEqual(built);
    await expectExact(ctx);
    // 12 more with `defer: true` (no guard) are deferred: the guard, not their number, kept the
    // first 12 in their weeks and months.
    await seed(ctx, randomEvents(14, 12, NOW));
    expect(await passWithEvents(h, { defer: true, sqlFrom: 1 })).toMatchObject({ more: true });
    for (const state of await states(h)) expect(state.monthsThrough).toBeLessThan(monthsThroughAt(NOW));
    await foldAll(h.ctx);
    const after = await rowsAndDeltas(ctx, coarseThroughAt(NOW), monthsThroughAt(NOW));
    expect(after.stored).toEqual(after.built);
    await expectExact(ctx);
  });
});
