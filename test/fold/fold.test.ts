import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import type { OrgCtx, ServiceCtx } from '../../src/context.js';
import { createOrganization, getOrganization } from '../../src/orgs/organizations.js';
import { coarseThroughAt, monthsThroughAt } from '../../src/reports/rollups.js';
import { readFoldState } from '../../src/storage/snapshot.js';
import { openStorage } from '../../src/storage/db.js';
import { PARALLEL_FROM } from '../../src/fold/backlog.js';
import { foldOnce } from '../../src/fold/pass.js';
import { FoldStage } from '../../src/fold/stage.js';
import { tailState } from '../../src/fold/tail.js';
import { TailMeter } from '../../src/fold/tail-meter.js';
import { applyRestatement } from '../../src/ledger/restatement.js';
import { recordReview } from '../../src/ledger/review.js';
import { trackEvent } from '../../src/tracking/track.js';
import { createWebhook } from '../../src/webhooks/subscriptions.js';
import { baselineRepricer } from '../ledger/repricer.js';
import { seed, type SeedEvent } from '../reports/seed.js';
import { unlimited } from '../reports/unlimited.js';
import { createTestStorage, ENGINES, type TestStorage } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { tempFile } from '../support/temp.js';
import {
  PAUSED,
  derived,
  expectExact,
  foldAll,
  orgWithWebhook,
  randomEvents,
  rowsAndDeltas,
} from './derived.js';
import { TEST_SECRET_KEY } from '../support/secret-key.js';

const NOW = Date.parse('2026-11-20T12:00:00.000Z');
const DAY = 86_400_000;

/**
 * PostgreSQL folds only below the oldest transaction running on the server, another test file's
 * included: waits until every event stored so far is below it, so that the next pass folds them.
 */
async function untilFoldable(ctx: ServiceCtx) {
  if (ctx.engine !== 'postgres') return;
  for (let i = 0; i < 500; i++) {
    const { rows } = await sql<{ foldable: boolean }>`
      SELECT pg_snapshot_xmin(pg_current_snapshot()) > (SELECT MAX(ingest_seq) FROM events) AS foldable`.execute(
      ctx.db,
    );
    if (rows[0]?.foldable) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('the events did not become foldable');
}

describe('TALLY_FOLD_BATCH', () => {
  it('leaves the engine default unset, and takes a whole number of events from 1', () => {
    expect(loadConfig({}).foldBatch).toBeNull();
    expect(loadConfig({ TALLY_FOLD_BATCH: '' }).foldBatch).toBeNull();
    expect(loadConfig({ TALLY_FOLD_BATCH: '50000' }).foldBatch).toBe(50_000);
    for (const bad of ['0', '-5', '2.5', 'many', '99999999999']) {
      expect(() => loadConfig({ TALLY_FOLD_BATCH: bad })).toThrow(/^TALLY_FOLD_BATCH must be a whole number/);
    }
  });
});

describe.each(ENGINES)('the folding stage (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, {
      now: new Date(NOW).toISOString(),
      rateLimiter: unlimited,
      ...PAUSED,
    });
  });
  afterAll(async () => h.close());

  it('paused: reports, usage and tail answer from the raw tail; one pass folds it all, once', async () => {
    await foldAll(h.ctx);
    const ctx = await orgWithWebhook(h);
    const seeded = randomEvents(1, 40, NOW);
    await seed(ctx, seeded);
    expect((await tailState(h.ctx.db, h.ctx.engine)).events).toBe(40);
    expect(await derived(h.ctx.db, ctx.org.id)).toEqual({
      rolledUp: 0,
      rolledUpMonths: 0,
      usage: 0,
      created: 0,
      createdEvents: 0,
      firsts: 0,
    });
    await expectExact(ctx);

    // In SQL (a statement per grain and bucket), as a large pass folds.
    await foldAll(h.ctx, 1);
    expect((await tailState(h.ctx.db, h.ctx.engine)).events).toBe(0);
    expect(await derived(h.ctx.db, ctx.org.id)).toEqual({
      rolledUp: 40,
      rolledUpMonths: 40,
      usage: 40,
      created: 40,
      createdEvents: 40,
      firsts: new Set(seeded.map((e) => e.agent)).size,
    });
    await expectExact(ctx);
    // The rows folded in SQL are the rows the service builds (rollupDeltas) for the same events.
    // (Week and month rows of the weeks and days closed at the pass: rollups.ts coarseThroughAt,
    // monthsThroughAt.)
    const { coarseThrough, monthsThrough } = await readFoldState(h.ctx.db);
    expect(coarseThrough).toBe(coarseThroughAt(NOW));
    expect(monthsThrough).toBe(monthsThroughAt(NOW));
    const { stored, built } = await rowsAndDeltas(ctx, coarseThrough, monthsThrough);
    expect(stored).toEqual(built);
    // Another pass finds nothing.
    expect((await foldOnce(h.ctx)).folded).toBe(0);
    expect((await derived(h.ctx.db, ctx.org.id)).created).toBe(40);
  });

  it('mid-batch: folds a few events at a time, every report exact after each pass', async () => {
    await foldAll(h.ctx);
    const ctx = await orgWithWebhook(h);
    // One transaction per event (seed tracks them one by one), so passes can stop between any two.
    await seed(ctx, randomEvents(2, 24, NOW));
    let passes = 0;
    for (;;) {
      const result = await foldOnce(h.ctx, { limit: 5 });
      expect(result.folded).toBeLessThanOrEqual(5);
      if (result.folded > 0) passes += 1;
      await expectExact(ctx);
      if ((await tailState(h.ctx.db, h.ctx.engine)).events === 0) break;
      if (!result.more) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(passes).toBeGreaterThanOrEqual(5);
    expect(await derived(h.ctx.db, ctx.org.id)).toMatchObject({ rolledUp: 24, usage: 24, created: 24 });
  });

  it('killed mid-pass: nothing of the pass stays, and the next pass folds its events exactly once', async () => {
    await foldAll(h.ctx);
    const ctx = await orgWithWebhook(h);
    await seed(ctx, randomEvents(3, 12, NOW));
    await untilFoldable(h.ctx);
    const before = await sql<{ watermark: unknown }>`SELECT watermark FROM fold_state`.execute(h.ctx.db);
    await expect(
      foldOnce(h.ctx, {
        sqlFrom: 1,
        beforeCommit: () => {
          throw new Error('killed');
        },
      }),
    ).rejects.toThrow('killed');
    const after = await sql<{ watermark: unknown }>`SELECT watermark FROM fold_state`.execute(h.ctx.db);
    expect(after.rows).toEqual(before.rows);
    expect(await derived(h.ctx.db, ctx.org.id)).toMatchObject({ rolledUp: 0, usage: 0, created: 0 });
    await expectExact(ctx);
    await foldAll(h.ctx);
    expect(await derived(h.ctx.db, ctx.org.id)).toMatchObject({
      rolledUp: 12,
      usage: 12,
      created: 12,
      createdEvents: 12,
    });
    await expectExact(ctx);
  });

  // PostgreSQL only: SQLite has no statement timeout. Defined for PostgreSQL only rather than
  // skipped.
  (engine === 'postgres' ? it : () => undefined)(
    'after a pass that outlasts the statement timeout, the stage takes half as many events, then all again once caught up',
    async () => {
      await foldAll(h.ctx);
      const ctx = await orgWithWebhook(h);
      await seed(ctx, randomEvents(9, 6, NOW));
      await untilFoldable(h.ctx);
      const limits: number[] = [];
      const stage = new FoldStage(h.ctx, {
        batch: 8,
        // A pass asked for more than 2 events runs into a real statement timeout (57014).
        runPass: (pass) => {
          limits.push(pass.limit);
          return foldOnce(h.ctx, {
            ...pass,
            sqlFrom: 1,
            beforeCommit: async (trx) => {
              if (pass.limit <= 2) return;
              await sql`SET LOCAL statement_timeout = 50`.execute(trx);
              await sql`SELECT pg_sleep(1)`.execute(trx);
            },
          });
        },
      });
      const codes: unknown[] = [];
      let passes = 0;
      for (; passes < 20; passes++) {
        const result = await stage.foldNow().catch((error: { code?: unknown }) => {
          codes.push(error.code);
          return null;
        });
        if (result !== null && !result.more) break;
      }
      expect(codes).toEqual(['57014', '57014']);
      expect(limits).toEqual([8, 4, 2, 2, 2]);
      expect(await derived(h.ctx.db, ctx.org.id)).toMatchObject({ rolledUp: 6, usage: 6, created: 6 });
      await expectExact(ctx);
      // Caught up: the next pass may take the whole batch again.
      await stage.foldNow();
      expect(limits.at(-1)).toBe(8);
    },
  );

  it('takes at most TALLY_FOLD_BATCH events a pass when it is set', async () => {
    await foldAll(h.ctx);
    const ctx = await orgWithWebhook(h);
    await seed(ctx, randomEvents(13, 5, NOW));
    await untilFoldable(h.ctx);
    const { foldBatch } = loadConfig({ TALLY_FOLD_BATCH: '2' });
    const stage = new FoldStage({ ...h.ctx, config: { ...h.ctx.config, foldBatch } });
    const passes = [];
    for (let i = 0; i < 3; i++) passes.push(await stage.foldNow());
    expect(passes.map((p) => [p.folded, p.more])).toEqual([
      [2, true],
      [2, true],
      [1, false],
    ]);
    expect(await derived(h.ctx.db, ctx.org.id)).toMatchObject({ rolledUp: 5, usage: 5, created: 5 });
    await expectExact(ctx);
  });

  it('a large pass writes the webhook messages of its events a chunk at a time, each once', async () => {
    await foldAll(h.ctx);
    const ctx = await orgWithWebhook(h);
    const stored = await seed(ctx, randomEvents(10, 7, NOW));
    await untilFoldable(h.ctx);
    const result = await foldOnce(h.ctx, { sqlFrom: 1, messageChunk: 2 });
    expect(result).toMatchObject({ folded: 7, more: false });
    const agents = new Set(stored.map((e) => e.agent_id));
    expect(await derived(h.ctx.db, ctx.org.id)).toEqual({
      rolledUp: 7,
      rolledUpMonths: 7,
      usage: 7,
      created: 7,
      createdEvents: 7,
      firsts: agents.size,
    });
    const { rows } = await sql<{ payload: string }>`
      SELECT payload FROM webhook_messages WHERE org_id = ${ctx.org.id} AND type = 'event.created'`.execute(
      h.ctx.db,
    );
    const ids = rows.map((r) => (JSON.parse(r.payload) as { event_id: string }).event_id).sort();
    expect(ids).toEqual(stored.map((e) => e.event_id).sort());
  });

  it('/metrics shows the tail length and the fold lag', async () => {
    await foldAll(h.ctx);
    const ctx = await orgWithWebhook(h);
    const metric = async (name: string) => {
      const res = await h.request({ method: 'GET', url: '/metrics', apiKey: null });
      const line = res.body.split('\n').find((l) => l.startsWith(`${name} `));
      return Number(line?.split(' ')[1]);
    };
    expect(await metric('tally_fold_tail_events')).toBe(0);
    expect(await metric('tally_fold_lag_seconds')).toBe(0);
    await seed(ctx, randomEvents(5, 3, NOW));
    h.clock.set(new Date(NOW + 2500));
    expect(await metric('tally_fold_tail_events')).toBe(3);
    expect(await metric('tally_fold_lag_seconds')).toBe(2.5);
    await foldAll(h.ctx);
    expect(await metric('tally_fold_tail_events')).toBe(0);
    expect(await metric('tally_fold_lag_seconds')).toBe(0);
    expect(await metric('tally_fold_closing_days')).toBe(0);
    h.clock.set(new Date(NOW));
  });

  it('/metrics shows the adjustments not folded yet, and the lag from the older head of both tails', async () => {
    await foldAll(h.ctx);
    const ctx = await orgWithWebhook(h);
    const metric = async (name: string) => {
      const res = await h.request({ method: 'GET', url: '/metrics', apiKey: null });
      const line = res.body.split('\n').find((l) => l.startsWith(`${name} `));
      return Number(line?.split(' ')[1]);
    };
    const gauges = async () => ({
      events: await metric('tally_fold_tail_events'),
      adjustments: await metric('tally_fold_tail_adjustments'),
      lag: await metric('tally_fold_lag_seconds'),
    });
    h.clock.set(new Date(NOW));
    const track = async (taskType: string, outcome: 'success' | 'needs_review') =>
      (
        await trackEvent({
          ctx,
          idempotencyKey: null,
          input: { agent_id: 'meter', task_type: taskType, outcome, human_baseline_minutes: 60 },
        })
      ).event;
    const reviewed = await track('support_ticket_reply', 'needs_review');
    await track('dev_bug_fix', 'success');
    await track('dev_bug_fix', 'needs_review');
    await foldAll(h.ctx);
    expect(await gauges()).toEqual({ events: 0, adjustments: 0, lag: 0 });

    // A review at +1 s: one adjustment waits, and the lag is its age.
    h.clock.set(new Date(NOW + 1_000));
    await recordReview({
      ctx,
      eventId: reviewed.event_id,
      input: { review_minutes: 10, verdict: 'accepted' },
      idempotencyKey: null,
    });
    h.clock.set(new Date(NOW + 4_000));
    expect(await gauges()).toEqual({ events: 0, adjustments: 1, lag: 3 });
    // A restatement of the two dev_bug_fix events at +5 s adds an entry for each.
    h.clock.set(new Date(NOW + 5_000));
    await applyRestatement(ctx, {
      restatementId: `rst_meter_${engine}`,
      orgId: ctx.org.id,
      reason: 'bug fixes take 30 minutes by hand',
      reprice: baselineRepricer('dev_bug_fix', 30),
    });
    // An event received at +6 s is younger than the review's entry: the lag stays the entry's.
    h.clock.set(new Date(NOW + 6_000));
    await track('data_sql_query', 'success');
    h.clock.set(new Date(NOW + 8_000));
    expect(await gauges()).toEqual({ events: 1, adjustments: 3, lag: 7 });
    expect(await tailState(h.ctx.db, h.ctx.engine)).toEqual({ events: 1, adjustments: 3 });

    await foldAll(h.ctx);
    expect(await gauges()).toEqual({ events: 0, adjustments: 0, lag: 0 });
    h.clock.set(new Date(NOW));
  });

  it('/metrics recounts a long tail only every few seconds, and reads the lag from its head', async () => {
    await foldAll(h.ctx);
    const ctx = await orgWithWebhook(h);
    const meter = new TailMeter(h.ctx.db, h.ctx.engine, () => h.clock.now().getTime(), {
      countAlways: 2,
      recountMs: 5_000,
    });
    expect(await meter.read()).toEqual({ events: 0, adjustments: 0, lagSeconds: 0, closingDays: 0 });
    await seed(ctx, randomEvents(5, 3, NOW));
    h.clock.set(new Date(NOW + 1_000));
    expect(await meter.read()).toEqual({ events: 3, adjustments: 0, lagSeconds: 1, closingDays: 0 });
    // Longer than countAlways: the count of a second ago stands; the lag is read each time.
    h.clock.set(new Date(NOW + 2_000));
    await seed(ctx, randomEvents(6, 2, NOW));
    h.clock.set(new Date(NOW + 4_000));
    expect(await meter.read()).toEqual({ events: 3, adjustments: 0, lagSeconds: 4, closingDays: 0 });
    h.clock.set(new Date(NOW + 6_000));
    expect(await meter.read()).toEqual({ events: 5, adjustments: 0, lagSeconds: 6, closingDays: 0 });
    // An empty tail shows at once, and the next tail is counted at once.
    await foldAll(h.ctx);
    expect(await meter.read()).toEqual({ events: 0, adjustments: 0, lagSeconds: 0, closingDays: 0 });
    await seed(ctx, randomEvents(7, 1, NOW));
    expect(await meter.read()).toEqual({ events: 1, adjustments: 0, lagSeconds: 0, closingDays: 0 });
    h.clock.set(new Date(NOW));
  });

  // PostgreSQL only: there transaction ids, not commit order, number the events (SQLite's one
  // writer commits in the order it numbers). Defined for PostgreSQL only rather than skipped.
  (engine === 'postgres' ? it : () => undefined)(
    'an event whose transaction began first but commits last is folded, once',
    async () => {
      await foldAll(h.ctx);
      const ctx = await orgWithWebhook(h);
      const input = { task_type: 'dev_bug_fix', outcome: 'success' as const };
      let commit = () => undefined as void;
      const committed = new Promise<void>((resolve) => (commit = resolve));
      let inserted = () => undefined as void;
      const first = new Promise<void>((resolve) => (inserted = resolve));
      // The first event takes the smaller transaction id, and commits after the second one.
      const slow = h.ctx.db.transaction().execute(async (trx) => {
        await trackEvent({
          ctx: { ...ctx, db: trx },
          idempotencyKey: null,
          input: { ...input, agent_id: 'slow' },
        });
        inserted();
        await committed;
      });
      try {
        await first;
        await trackEvent({ ctx, idempotencyKey: null, input: { ...input, agent_id: 'fast' } });
        // A pass now must not move the watermark past the open transaction's id.
        await foldOnce(h.ctx);
      } finally {
        commit();
        await slow;
      }
      await foldAll(h.ctx);
      expect(await derived(h.ctx.db, ctx.org.id)).toEqual({
        rolledUp: 2,
        rolledUpMonths: 2,
        usage: 2,
        created: 2,
        createdEvents: 2,
        firsts: 2,
      });
      await expectExact(ctx);
    },
  );

  it('a back-dated event waits in the tail, then folds into its own day', async () => {
    await foldAll(h.ctx);
    const ctx = await orgWithWebhook(h);
    await seed(ctx, randomEvents(4, 10, NOW));
    await foldAll(h.ctx);
    await seed(ctx, [
      {
        agent: 'late',
        taskType: 'dev_bug_fix',
        outcome: 'success',
        client: 'k1',
        occurredAt: NOW - 60 * DAY,
        agentCost: null,
      },
    ]);
    await expectExact(ctx);
    await foldAll(h.ctx);
    const day = Math.floor((NOW - 60 * DAY) / DAY);
    const rows = await h.ctx.db
      .selectFrom('report_rollups')
      .select(['day', 'events'])
      .where('org_id', '=', ctx.org.id)
      .where('grain', '=', 'agent')
      .where('agent_id', '=', 'late')
      .execute();
    expect(rows.map((r) => [Number(r.day), Number(r.events)])).toEqual([[day, 1]]);
    await expectExact(ctx);
  });
  it('keeps week rows of ended weeks and month rows of ended days only, and builds them as they end', async () => {
    await foldAll(h.ctx);
    const ctx = await orgWithWebhook(h);
    // Friday 20 November 2026: the week of Monday 16 November is open, and so is the day: its
    // event has a day row, and no month row yet.
    const at = (iso: string) => Date.parse(`${iso}T10:00:00.000Z`);
    const event = (agent: string, occurredAt: number): SeedEvent => ({
      agent,
      taskType: 'dev_bug_fix',
      outcome: 'success',
      client: 'k1',
      occurredAt,
      agentCost: null,
    });
    await seed(ctx, [
      event('now', at('2026-11-19')),
      event('now', at('2026-11-20')),
      event('early', at('2026-11-03')),
      event('old', at('2026-10-14')),
    ]);
    await foldAll(h.ctx, 1);
    const keys = async (grain: string) =>
      (
        await h.ctx.db
          .selectFrom('report_rollups')
          .select(['day', 'agent_id', 'events'])
          .where('org_id', '=', ctx.org.id)
          .where('grain', '=', grain)
          .orderBy('day')
          .execute()
      ).map(
        (r) =>
          `${new Date(Number(r.day) * DAY).toISOString().slice(0, 10)} ${r.agent_id} ${Number(r.events)}`,
      );
    const day = Date.parse('2026-11-16') / DAY;
    expect(await readFoldState(h.ctx.db)).toMatchObject({
      coarseThrough: day,
      monthsThrough: Date.parse('2026-11-20') / DAY,
    });
    expect(await keys('agent+task_type+client/week')).toEqual(['2026-10-12 old 1', '2026-11-02 early 1']);
    expect(await keys('agent+task_type+client/month')).toEqual([
      '2026-10-01 old 1',
      '2026-11-01 early 1',
      '2026-11-01 now 1',
    ]);
    expect(await keys('agent+task_type+client')).toContain('2026-11-20 now 1');
    await expectExact(ctx);

    // Wednesday 2 December: the weeks to 1 December and the days to 1 December have ended;
    // passes with no events close them from their days' rows, a step each (fold/plan.ts CLOSE_DAYS):
    // a week, and a week of days from the first with rows; reports are exact in between.
    h.clock.set(new Date(at('2026-12-02')));
    expect(await tailState(h.ctx.db, h.ctx.engine)).toMatchObject({ events: 0 });
    expect(await foldOnce(h.ctx)).toMatchObject({ folded: 0, more: true });
    expect(await readFoldState(h.ctx.db)).toMatchObject({
      coarseThrough: Date.parse('2026-11-23') / DAY,
      monthsThrough: Date.parse('2026-11-27') / DAY,
    });
    await expectExact(ctx);
    await foldAll(h.ctx);
    expect(await readFoldState(h.ctx.db)).toMatchObject({
      coarseThrough: Date.parse('2026-12-01') / DAY,
      monthsThrough: Date.parse('2026-12-02') / DAY,
    });
    expect(await keys('agent+task_type+client/week')).toEqual([
      '2026-10-12 old 1',
      '2026-11-02 early 1',
      '2026-11-16 now 2',
    ]);
    const months = ['2026-10-01 old 1', '2026-11-01 early 1', '2026-11-01 now 2'];
    expect(await keys('agent+task_type+client/month')).toEqual(months);
    await expectExact(ctx);
    // Another pass the same day closes nothing more.
    await foldOnce(h.ctx);
    expect(await keys('agent+task_type+client/month')).toEqual(months);

    // A back-dated event folds into its closed week and month; one of this week before today
    // into its day and month; one of today into its day only, until the day ends.
    await seed(ctx, [
      event('now', at('2026-11-18')),
      event('now', at('2026-12-01')),
      event('today', at('2026-12-02')),
    ]);
    await foldAll(h.ctx);
    expect(await keys('agent+task_type+client/week')).toContain('2026-11-16 now 3');
    expect(await keys('agent+task_type+client/month')).toContain('2026-11-01 now 3');
    expect(await keys('agent+task_type+client/week')).not.toContain('2026-12-01 now 1');
    expect(await keys('agent+task_type+client/month')).toContain('2026-12-01 now 1');
    expect(await keys('agent+task_type+client/month')).not.toContain('2026-12-01 today 1');
    await expectExact(ctx);
    h.clock.set(new Date(at('2026-12-03')));
    await foldOnce(h.ctx);
    expect(await keys('agent+task_type+client/month')).toContain('2026-12-01 today 1');
    await expectExact(ctx);
    h.clock.set(new Date(NOW));
  });
});

describe.each(ENGINES)('two folding stages racing, while tracking goes on (%s)', (engine) => {
  let a: TestStorage;
  let b: { db: TestStorage['db']; close(): Promise<void> };
  beforeAll(async () => {
    a = await createTestStorage(
      engine,
      engine === 'sqlite' ? { file: tempFile('tally-fold-', 'db.sqlite') } : {},
    );
    b = openStorage(a.url, a.schema ? { schema: a.schema } : {});
  });
  afterAll(async () => {
    await b.close();
    await a.destroy();
  });

  // On PostgreSQL also with every tail a backlog, so that the stages fold the parts at once
  // (foldBacklog), each part under its own lock. Then with back-dated events and every pass a
  // backlog that leaves its week and month rows to the day rows, which the stages close again as
  // they race (fold/plan.ts planPart).
  const racing = [
    { parallelFrom: PARALLEL_FROM, deferFrom: undefined },
    ...(engine === 'postgres' ? [{ parallelFrom: 1, deferFrom: undefined }] : []),
    { parallelFrom: engine === 'postgres' ? 1 : PARALLEL_FROM, deferFrom: 1 },
  ];
  it.each(racing)(
    'folds every event exactly once and writes every webhook message once (parts at once from a tail of $parallelFrom, deferred from $deferFrom)',
    async ({ parallelFrom, deferFrom }) => {
      const config = loadConfig({
        TALLY_LOG_LEVEL: 'silent',
        TALLY_WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        TALLY_SECRET_KEY: TEST_SECRET_KEY,
      });
      const clock = new ManualClock('2026-11-20T12:00:00.000Z');
      const ctxA: ServiceCtx = { db: a.db, engine, clock, config, storage: a };
      const ctxB: ServiceCtx = { db: b.db, engine, clock, config };
      const created = await createOrganization({ ctx: ctxA, input: { name: 'Race', plan: 'enterprise' } });
      const org: OrgCtx = {
        ...ctxA,
        org: await getOrganization({ ctx: ctxA, id: created.org.id }),
        actorKeyId: null,
      };
      await createWebhook({
        ctx: org,
        input: { url: 'http://127.0.0.1:9/hook', event_types: ['event.created', 'agent.first_event'] },
      });
      const errors: unknown[] = [];
      const onError = (e: unknown) => errors.push(e);
      // The stages' first pass closes the weeks before today (rollups.ts
      // coarseThroughAt); done here, so that the two do not start at the same instant. On SQLite
      // both connections are in this one process, and one waiting for the other's write lock
      // (SQLite's busy wait is synchronous) would hold up the event loop the other needs to finish.
      await foldOnce(ctxA);
      const stages = [
        new FoldStage(ctxA, { idlePollMs: 1, batch: 37, onError, parallelFrom, deferFrom }),
        new FoldStage(ctxB, { idlePollMs: 1, batch: 53, onError, parallelFrom, deferFrom }),
      ];
      for (const stage of stages) stage.start();
      const total = 400;
      for (let burst = 0; burst < total / 40; burst++) {
        await Promise.all(
          Array.from({ length: 40 }, (_, i) =>
            trackEvent({
              ctx: org,
              idempotencyKey: null,
              input: {
                agent_id: `agent-${(burst * 40 + i) % 23}`,
                task_type: 'support_ticket_reply',
                outcome: 'success',
                metadata: { client_id: `c${i % 3}` },
                // Back-dated up to 60 days when the passes defer.
                ...(deferFrom === undefined
                  ? {}
                  : {
                      occurred_at: new Date(
                        clock.now().getTime() - ((burst * 40 + i) % 60) * 86_400_000,
                      ).toISOString(),
                    }),
              },
            }),
          ),
        );
      }
      await Promise.all(stages.map((s) => s.stop()));
      await foldAll(ctxA);
      expect(errors).toEqual([]);
      expect(await derived(a.db, org.org.id)).toEqual({
        rolledUp: total,
        rolledUpMonths: total,
        usage: total,
        created: total,
        createdEvents: total,
        firsts: 23,
      });
      // Every week and day closed again, into the rows a fold as the events come writes.
      const { coarseThrough, monthsThrough } = await readFoldState(a.db, 2);
      expect({ coarseThrough, monthsThrough }).toEqual({
        coarseThrough: coarseThroughAt(clock.now().getTime()),
        monthsThrough: monthsThroughAt(clock.now().getTime()),
      });
      const { stored, built } = await rowsAndDeltas(org, coarseThrough, monthsThrough);
      expect(stored).toEqual(built);
    },
  );
});
