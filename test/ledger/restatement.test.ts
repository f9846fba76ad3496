import { spawn } from 'node:child_process';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import type { OrgCtx } from '../../src/context.js';
import { foldOnce } from '../../src/fold/pass.js';
import { finishRestatements } from '../../src/assumptions/restatements.js';
import { abandonRestatement, applyRestatement } from '../../src/ledger/restatement.js';
import { recordReview } from '../../src/ledger/review.js';
import { getOrganization } from '../../src/orgs/organization-record.js';
import { createOrganization } from '../../src/orgs/organizations.js';
import { buildReport } from '../../src/reports/report.js';
import { migrateToLatest, type Storage } from '../../src/storage/db.js';
import { trackEvent } from '../../src/tracking/track.js';
import { childEnv, CLI, createChildDatabase, type ChildDatabase } from '../support/child-process.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, pausedStageOptions, type Harness } from '../support/harness.js';
import { TEST_SECRET_KEY } from '../support/secret-key.js';
import { baselineRepricer } from './repricer.js';

const NOW = Date.parse('2026-11-20T12:00:00.000Z');
const HOUR = 3_600_000;
const RATE = 50; // the organisations' hourly rate

/** An event as the test expects its current figures (micro-units). */
interface Expected {
  id: string;
  taskType: string;
  hours: number;
  cost: number;
  reviewHours: number;
}

/**
 * The figures a plain recomputation gives: dev_bug_fix at a baseline of `bugFix` minutes, credited
 * 1 (success), 0.5 (needs_review) or 0 (failure), or a review's measured time; the other type at
 * its tracked baseline of 60.
 */
function recompute(
  taskType: string,
  outcome: string,
  bugFix: number,
  review: { minutes: number; verdict: string } | null = null,
): Omit<Expected, 'id' | 'taskType'> {
  const baseline = taskType === 'dev_bug_fix' ? bugFix : 60;
  const credit = { success: 1, needs_review: 0.5, failure: 0 }[outcome] ?? 0;
  const minutes =
    review === null ? baseline * credit : (review.verdict === 'rejected' ? 0 : baseline) - review.minutes;
  const hours = Math.round((minutes / 60) * 1e6);
  return {
    hours,
    cost: Math.round((hours * RATE * 1e6) / 1e6),
    reviewHours: review === null ? 0 : Math.round((review.minutes / 60) * 1e6),
  };
}

const OUTCOMES = ['success', 'needs_review', 'failure'] as const;

async function seedEvents(
  ctx: OrgCtx,
  n: number,
  offset = 0,
): Promise<Array<{ id: string; taskType: string; outcome: string }>> {
  const out = [];
  for (let i = 0; i < n; i++) {
    const taskType = (i + offset) % 3 === 0 ? 'support_ticket_reply' : 'dev_bug_fix';
    const outcome = OUTCOMES[(i + offset + Math.floor((i + offset) / 3)) % 3] as string;
    const { event } = await trackEvent({
      ctx,
      idempotencyKey: null,
      input: {
        agent_id: `bot-${i % 2}`,
        task_type: taskType,
        outcome: outcome as 'success',
        human_baseline_minutes: 60,
        occurred_at: new Date(NOW - (i % 5) * 24 * HOUR).toISOString(),
      },
    });
    out.push({ id: event.event_id, taskType, outcome });
  }
  return out;
}

/** Report rows by task type: events, hours and cost saved, review hours (micro-units). */
async function byTaskType(ctx: OrgCtx) {
  const report = await buildReport({
    ctx,
    input: { period: '30d', groupBy: ['task_type'], sort: 'events', top: null, filters: { metadata: [] } },
  });
  return Object.fromEntries(
    report.rows.map((r) => [
      r.group.task_type,
      [
        r.events,
        Math.round(r.hours_saved * 1e6),
        Math.round(r.cost_saved * 1e6),
        Math.round(r.review_hours * 1e6),
      ],
    ]),
  );
}

function expectedByTaskType(events: readonly Expected[]) {
  const out: Record<string, number[]> = {};
  for (const e of events) {
    const row = out[e.taskType] ?? [0, 0, 0, 0];
    out[e.taskType] = [
      (row[0] ?? 0) + 1,
      (row[1] ?? 0) + e.hours,
      (row[2] ?? 0) + e.cost,
      (row[3] ?? 0) + e.reviewHours,
    ];
  }
  return out;
}

describe.each(ENGINES)('restatements (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, pausedStageOptions(NOW));
  });
  afterAll(async () => h.close());

  it('stage in batches unseen by reports, then publish at once; a review after it uses the new baseline', async () => {
    const org = await h.createOrg({ plan: 'pro', hourlyRate: RATE });
    const ctx = await h.orgCtx(org);
    const hook = await h.request({
      method: 'POST',
      url: '/v1/webhooks',
      apiKey: org.apiKey,
      payload: { url: 'https://example.com/hook', event_types: ['figures.restated'] },
    });
    expect(hook.statusCode, hook.body).toBe(201);
    const seeded = await seedEvents(ctx, 12);
    const reviewed = seeded.find((e) => e.taskType === 'dev_bug_fix' && e.outcome === 'needs_review');
    if (reviewed === undefined) throw new Error('no event to review');
    await recordReview({
      ctx,
      eventId: reviewed.id,
      input: { review_minutes: 10, verdict: 'accepted' },
      idempotencyKey: null,
    });
    await foldOnce(h.ctx, { sqlFrom: 1 });
    const expect60 = seeded.map((e) => ({
      id: e.id,
      taskType: e.taskType,
      ...recompute(
        e.taskType,
        e.outcome,
        60,
        e.id === reviewed.id ? { minutes: 10, verdict: 'accepted' } : null,
      ),
    }));
    expect(await byTaskType(ctx)).toEqual(expectedByTaskType(expect60));

    const batches: number[] = [];
    const view = await applyRestatement(ctx, {
      restatementId: 'rst_one',
      orgId: org.id,
      reason: 'bug fixes take 30 minutes by hand',
      reprice: baselineRepricer('dev_bug_fix', 30),
      batch: 5,
      afterBatch: async (seen) => {
        batches.push(seen);
        // Staged entries are nobody's figures yet.
        expect(await byTaskType(ctx)).toEqual(expectedByTaskType(expect60));
      },
    });
    expect(batches).toEqual([5, 10, 12]);
    // 8 dev_bug_fix events; the failures' figures stay 0 but their baseline changes.
    expect(view).toMatchObject({ status: 'applied', events_seen: 12, events_adjusted: 8 });
    const expect30 = seeded.map((e) => ({
      id: e.id,
      taskType: e.taskType,
      ...recompute(
        e.taskType,
        e.outcome,
        30,
        e.id === reviewed.id ? { minutes: 10, verdict: 'accepted' } : null,
      ),
    }));
    expect(await byTaskType(ctx)).toEqual(expectedByTaskType(expect30));
    await foldOnce(h.ctx, { sqlFrom: 1 });
    expect(await byTaskType(ctx)).toEqual(expectedByTaskType(expect30));

    // Applying again changes nothing.
    expect(
      await applyRestatement(ctx, {
        restatementId: 'rst_one',
        orgId: org.id,
        reason: 'again',
        reprice: baselineRepricer('dev_bug_fix', 30),
      }),
    ).toMatchObject({ status: 'applied', events_adjusted: 8 });
    expect(await byTaskType(ctx)).toEqual(expectedByTaskType(expect30));

    const ledger = await h.request({
      method: 'GET',
      url: `/v1/events/${reviewed.id}/adjustments`,
      apiKey: org.apiKey,
    });
    expect(
      ledger
        .json()
        .data.map((a: { cause: string; baseline_minutes: number | null }) => [a.cause, a.baseline_minutes]),
    ).toEqual([
      ['review', null],
      ['restatement', 30],
    ]);
    // (30 − 10) / 60 hours.
    expect(ledger.json().current.hours_saved).toBe(Math.round((20 / 60) * 1e6) / 1e6);
    // A review after the restatement is priced with the restated baseline.
    const bugFix = seeded.find(
      (e) => e.taskType === 'dev_bug_fix' && e.outcome === 'success' && e.id !== reviewed.id,
    );
    if (bugFix === undefined) throw new Error('no event');
    const after = await recordReview({
      ctx,
      eventId: bugFix.id,
      input: { review_minutes: 6, verdict: 'corrected' },
      idempotencyKey: null,
    });
    expect(after.event.current.hours_saved).toBe(0.4);

    const audit = await h.ctx.db
      .selectFrom('audit_log')
      .select(['action', 'reason'])
      .where('org_id', '=', org.id)
      .where('action', '=', 'figures.restated')
      .execute();
    expect(audit).toEqual([{ action: 'figures.restated', reason: 'bug fixes take 30 minutes by hand' }]);
    const messages = await h.ctx.db
      .selectFrom('webhook_messages')
      .select('payload')
      .where('org_id', '=', org.id)
      .where('type', '=', 'figures.restated')
      .execute();
    expect(messages).toHaveLength(1);
    expect(JSON.parse(messages[0]?.payload ?? '{}').restatement).toMatchObject({
      id: 'rst_one',
      events_adjusted: 8,
    });
  });

  it('races with tracking and reviews: every event restated once, from its figures at publication', async () => {
    const org = await h.createOrg({ plan: 'pro', hourlyRate: RATE });
    const ctx = await h.orgCtx(org);
    const seeded = await seedEvents(ctx, 9);
    const target = seeded.find((e) => e.taskType === 'dev_bug_fix' && e.outcome === 'success');
    if (target === undefined) throw new Error('no event');
    const late: Array<{ id: string; taskType: string; outcome: string }> = [];
    let reviewedDuring = false;
    const apply = applyRestatement(ctx, {
      restatementId: 'rst_race',
      orgId: org.id,
      reason: 'race',
      reprice: baselineRepricer('dev_bug_fix', 30),
      batch: 2,
      afterBatch: async (seen) => {
        // An event already staged is reviewed while the walk goes on.
        if (seen >= 8 && !reviewedDuring) {
          reviewedDuring = true;
          await recordReview({
            ctx,
            eventId: target.id,
            input: { review_minutes: 5, verdict: 'rejected' },
            idempotencyKey: null,
          });
        }
      },
    });
    // Tracking goes on meanwhile (later ids: the walk reaches them).
    h.clock.advance(1000);
    const tracking = (async () => {
      for (let i = 0; i < 4; i++) late.push(...(await seedEvents(ctx, 1, i)));
    })();
    await Promise.all([apply, tracking]);
    h.clock.set(new Date(NOW));
    expect(reviewedDuring).toBe(true);
    // Every event there before it started is restated; one tracked meanwhile is restated when
    // the walk reached it (a later id), else it keeps the figures it was tracked with.
    const restated = new Set(
      (
        await h.ctx.db
          .selectFrom('adjustments')
          .select('event_id')
          .where('cause_id', '=', 'rst_race')
          .execute()
      ).map((r) => r.event_id),
    );
    for (const e of seeded) if (e.taskType === 'dev_bug_fix') expect(restated.has(e.id), e.id).toBe(true);
    const expected = [...seeded, ...late].map((e) => ({
      id: e.id,
      taskType: e.taskType,
      ...recompute(
        e.taskType,
        e.outcome,
        restated.has(e.id) || e.taskType !== 'dev_bug_fix' ? 30 : 60,
        e.id === target.id ? { minutes: 5, verdict: 'rejected' } : null,
      ),
    }));
    expect(await byTaskType(ctx)).toEqual(expectedByTaskType(expected));
    await foldOnce(h.ctx, { sqlFrom: 1 });
    expect(await byTaskType(ctx)).toEqual(expectedByTaskType(expected));
    // Each event has at most one entry of the restatement.
    const entries = await h.ctx.db
      .selectFrom('adjustments')
      .select('event_id')
      .where('cause_id', '=', 'rst_race')
      .execute();
    expect(new Set(entries.map((e) => e.event_id)).size).toBe(entries.length);
  });
});

describe.each(ENGINES)("a restatement's publication (%s)", (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, pausedStageOptions(NOW));
  });
  afterAll(async () => h.close());

  /** The restatement's entries by event id, and the rows it still has staged. */
  async function entriesOf(restatementId: string) {
    const entries = await h.ctx.db
      .selectFrom('adjustments')
      .select(['event_id', 'hours_saved_micros'])
      .where('cause_id', '=', restatementId)
      .execute();
    const staged = await h.ctx.db
      .selectFrom('restatement_staging')
      .select('event_id')
      .where('restatement_id', '=', restatementId)
      .execute();
    return { entries, staged: staged.length };
  }

  it('reprices an event reviewed after it was staged; one reviewed before it was staged is counted once', async () => {
    const org = await h.createOrg({ plan: 'pro', hourlyRate: RATE });
    const ctx = await h.orgCtx(org);
    const hook = await h.request({
      method: 'POST',
      url: '/v1/webhooks',
      apiKey: org.apiKey,
      payload: { url: 'https://example.com/hook', event_types: ['figures.restated'] },
    });
    expect(hook.statusCode, hook.body).toBe(201);
    // A millisecond apart, so that ids follow the order tracked: the walk's batches of 3 are
    // [0-2], [3-5], [6-8].
    const seeded: Array<{ id: string; taskType: string; outcome: string }> = [];
    for (let i = 0; i < 9; i++) {
      h.clock.advance(1);
      seeded.push(...(await seedEvents(ctx, 1, i)));
    }
    h.clock.set(new Date(NOW));
    expect(seeded.map((e) => e.id)).toEqual(seeded.map((e) => e.id).sort());
    const bugFixes = (from: number, to: number) =>
      seeded.slice(from, to).filter((e) => e.taskType === 'dev_bug_fix' && e.outcome !== 'failure');
    const [beforeWalk] = bugFixes(3, 6);
    const [afterStaged] = bugFixes(0, 3);
    const [beforeStaged] = bugFixes(6, 9);
    if (!beforeWalk || !afterStaged || !beforeStaged) throw new Error('no event to review');
    const reviews = new Map([
      [beforeWalk.id, { minutes: 4, verdict: 'accepted' }],
      [afterStaged.id, { minutes: 7, verdict: 'corrected' }],
      [beforeStaged.id, { minutes: 2, verdict: 'accepted' }],
    ]);
    const review = async (id: string) => {
      const r = reviews.get(id) as { minutes: number; verdict: 'accepted' };
      await recordReview({
        ctx,
        eventId: id,
        input: { review_minutes: r.minutes, verdict: r.verdict },
        idempotencyKey: null,
      });
    };
    // Before the walk: the staged entry starts from the reviewed figures.
    await review(beforeWalk.id);
    const view = await applyRestatement(ctx, {
      restatementId: 'rst_stale',
      orgId: org.id,
      reason: 'stale entries',
      reprice: baselineRepricer('dev_bug_fix', 30),
      batch: 3,
      publishChunk: 2,
      afterBatch: async (seen) => {
        // After the first batch: one of its events (staged before its review) and one of the
        // last batch (reviewed before it is staged).
        if (seen !== 3) return;
        await review(afterStaged.id);
        await review(beforeStaged.id);
      },
    });
    const expected = seeded.map((e) => ({
      id: e.id,
      taskType: e.taskType,
      ...recompute(e.taskType, e.outcome, 30, reviews.get(e.id) ?? null),
    }));
    // 6 dev_bug_fix events, each with one entry, published 2 per statement.
    expect(view).toMatchObject({ status: 'applied', events_seen: 9, events_adjusted: 6 });
    const { entries, staged } = await entriesOf('rst_stale');
    expect(entries).toHaveLength(6);
    expect(new Set(entries.map((e) => e.event_id)).size).toBe(6);
    expect(staged).toBe(0);
    expect(await byTaskType(ctx)).toEqual(expectedByTaskType(expected));
    for (const e of [beforeWalk, afterStaged, beforeStaged]) {
      const ledger = await h.request({
        method: 'GET',
        url: `/v1/events/${e.id}/adjustments`,
        apiKey: org.apiKey,
      });
      const want = recompute(e.taskType, e.outcome, 30, reviews.get(e.id) ?? null);
      expect(Math.round(ledger.json().current.hours_saved * 1e6), e.id).toBe(want.hours);
    }
    await foldOnce(h.ctx, { sqlFrom: 1 });
    expect(await byTaskType(ctx)).toEqual(expectedByTaskType(expected));
    // The message sums every chunk: the entries' hours, the one month of the events.
    const message = await h.ctx.db
      .selectFrom('webhook_messages')
      .select('payload')
      .where('org_id', '=', org.id)
      .where('type', '=', 'figures.restated')
      .executeTakeFirstOrThrow();
    const payload = JSON.parse(message.payload);
    expect(payload.affected_events).toBe(6);
    expect(Math.round(payload.delta.hours_saved * 1e6)).toBe(
      entries.reduce((sum, e) => sum + Number(e.hours_saved_micros), 0),
    );
    expect(payload.months).toEqual(['2026-11']);
  });

  it('folds a publication in passes of the usual size where its positions allow it, reports whole after each', async () => {
    const org = await h.createOrg({ plan: 'pro', hourlyRate: RATE });
    const ctx = await h.orgCtx(org);
    const seeded = await seedEvents(ctx, 12);
    await foldOnce(h.ctx, { sqlFrom: 1 });
    await applyRestatement(ctx, {
      restatementId: 'rst_passes',
      orgId: org.id,
      reason: 'bug fixes take 30 minutes by hand',
      reprice: baselineRepricer('dev_bug_fix', 30),
      publishChunk: 3,
    });
    const expected = expectedByTaskType(
      seeded.map((e) => ({ id: e.id, taskType: e.taskType, ...recompute(e.taskType, e.outcome, 30) })),
    );
    const entries = await h.ctx.db
      .selectFrom('adjustments')
      .select('ingest_seq')
      .where('cause_id', '=', 'rst_passes')
      .execute();
    expect(entries).toHaveLength(8);
    const positions = new Set(entries.map((e) => String(e.ingest_seq))).size;
    // SQLite numbers each chunk of 3 (3 + 3 + 2); PostgreSQL's position is the transaction's id.
    expect(positions).toBe(engine === 'sqlite' ? 3 : 1);
    // The entries not yet folded into every fold part.
    const unfolded = async () =>
      Number(
        (
          await sql<{ n: unknown }>`
            SELECT COUNT(*) AS n FROM adjustments
            WHERE cause_id = 'rst_passes' AND ingest_seq >= (SELECT MIN(adjust_watermark) FROM fold_state)`.execute(
            h.ctx.db,
          )
        ).rows[0]?.n,
      );
    // Passes of 3: a position is never split, so PostgreSQL takes all 8 at once. (On PostgreSQL a
    // pass folds nothing while an older transaction of the server is still open.)
    const folded: number[] = [];
    let before = await unfolded();
    expect(before).toBe(8);
    for (let pass = 0; pass < 50 && before > 0; pass++) {
      await foldOnce(h.ctx, { sqlFrom: 1, limit: 3 });
      const after = await unfolded();
      if (after < before) folded.push(before - after);
      before = after;
      expect(await byTaskType(ctx)).toEqual(expected);
      if (after > 0 && after === before) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(folded).toEqual(engine === 'sqlite' ? [3, 3, 2] : [8]);
  });

  it('a process stopped after the publication leaves staged rows: harmless, then removed', async () => {
    const stopped = new Error('stopped after the publication');
    const leave = async (restatementId: string) => {
      const org = await h.createOrg({ plan: 'pro', hourlyRate: RATE });
      const ctx = await h.orgCtx(org);
      const seeded = await seedEvents(ctx, 6);
      let leftAtCommit = -1;
      await expect(
        applyRestatement(ctx, {
          restatementId,
          orgId: org.id,
          reason: 'left over',
          reprice: baselineRepricer('dev_bug_fix', 30),
          batch: 4,
          afterPublish: async () => {
            leftAtCommit = (await entriesOf(restatementId)).staged;
            throw stopped;
          },
        }),
      ).rejects.toBe(stopped);
      const expected = seeded.map((e) => ({
        id: e.id,
        taskType: e.taskType,
        ...recompute(e.taskType, e.outcome, 30),
      }));
      return { org, ctx, expected, leftAtCommit };
    };

    const first = await leave('rst_left');
    // Committed with its staged rows still there; reports show the restatement once.
    expect(first.leftAtCommit).toBe(4);
    expect(await entriesOf('rst_left')).toMatchObject({ staged: 4 });
    expect(await byTaskType(first.ctx)).toEqual(expectedByTaskType(first.expected));
    await foldOnce(h.ctx, { sqlFrom: 1 });
    expect(await byTaskType(first.ctx)).toEqual(expectedByTaskType(first.expected));
    await expect(abandonRestatement(first.ctx, 'rst_left')).rejects.toMatchObject({ code: 'bad_request' });
    // Applying it again answers it as it is, publishes nothing twice, and removes the rows.
    expect(
      await applyRestatement(first.ctx, {
        restatementId: 'rst_left',
        orgId: first.org.id,
        reason: 'again',
        reprice: baselineRepricer('dev_bug_fix', 30),
      }),
    ).toMatchObject({ status: 'applied', events_adjusted: 4 });
    const again = await entriesOf('rst_left');
    expect(again.entries).toHaveLength(4);
    expect(again.staged).toBe(0);
    expect(await byTaskType(first.ctx)).toEqual(expectedByTaskType(first.expected));

    // The sweeper removes them too; one left staging without a version it abandons, and then
    // removes what it staged.
    const second = await leave('rst_left_swept');
    expect(await entriesOf('rst_left_swept')).toMatchObject({ staged: 4 });
    const org = await h.createOrg({ plan: 'pro', hourlyRate: RATE });
    const ctx = await h.orgCtx(org);
    await seedEvents(ctx, 6);
    await expect(
      applyRestatement(ctx, {
        restatementId: 'rst_still_staging',
        orgId: org.id,
        reason: 'stopped while staging',
        reprice: baselineRepricer('dev_bug_fix', 30),
        batch: 3,
        afterBatch: () => {
          throw stopped;
        },
      }),
    ).rejects.toBe(stopped);
    const stillStaged = (await entriesOf('rst_still_staging')).staged;
    expect(stillStaged).toBeGreaterThan(0);
    // No version names it: the sweeper abandons it, and then removes what it staged.
    expect(await finishRestatements(h.ctx)).toEqual([{ id: 'rst_still_staging', status: 'abandoned' }]);
    expect(await entriesOf('rst_left_swept')).toMatchObject({ staged: 0 });
    expect((await entriesOf('rst_left_swept')).entries).toHaveLength(4);
    expect(await entriesOf('rst_still_staging')).toEqual({ entries: [], staged: 0 });
    expect(await byTaskType(second.ctx)).toEqual(expectedByTaskType(second.expected));
  });
});

describe.each(ENGINES)('a restatement killed in the middle (%s)', (engine) => {
  let database: ChildDatabase | null = null;
  let storage: Storage | null = null;
  afterEach(async () => {
    await storage?.close();
    await database?.destroy();
    storage = null;
    database = null;
  });

  /** Runs the child until it prints `line`, then kills it (SIGKILL). */
  async function killAt(stopAt: string, line: string, env: Record<string, string>): Promise<void> {
    const child = spawn(process.execPath, [...CLI.slice(0, 2), 'test/ledger/restate-child.ts'], {
      env: childEnv({ STOP_AT: stopAt, ...env }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stderr?.on('data', (c: Buffer) => (err += c.toString()));
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
    await new Promise<void>((resolve, reject) => {
      child.stdout?.on('data', (c: Buffer) => {
        out += c.toString();
        if (out.includes(line)) resolve();
      });
      child.on('exit', () => reject(new Error(`child exited before "${line}": ${out} ${err}`)));
    });
    child.kill('SIGKILL');
    await exited;
  }

  for (const stopAt of ['staged', 'publish'] as const)
    it(
      `leaves it not applied when killed ${stopAt === 'staged' ? 'while staging' : 'while publishing'}; it resumes, or is abandoned`,
      { timeout: 60_000 },
      async () => {
        database = await createChildDatabase(engine);
        storage = database.open();
        await migrateToLatest(storage.db);
        const clock = new ManualClock(new Date(NOW));
        const config = loadConfig({ TALLY_LOG_LEVEL: 'silent', TALLY_SECRET_KEY: TEST_SECRET_KEY });
        const base = { db: storage.db, engine, clock, config, storage };
        const created = await createOrganization({
          ctx: base,
          input: { name: 'Acme', plan: 'pro', hourlyRate: RATE },
        });
        const ctx: OrgCtx = {
          ...base,
          org: await getOrganization({ ctx: base, id: created.org.id }),
          actorKeyId: null,
        };
        const seeded = await seedEvents(ctx, 10);
        const before = seeded.map((e) => ({
          id: e.id,
          taskType: e.taskType,
          ...recompute(e.taskType, e.outcome, 60),
        }));
        const after = seeded.map((e) => ({
          id: e.id,
          taskType: e.taskType,
          ...recompute(e.taskType, e.outcome, 30),
        }));
        expect(await byTaskType(ctx)).toEqual(expectedByTaskType(before));

        await killAt(stopAt, stopAt === 'staged' ? 'staged' : 'publishing', {
          TALLY_DATABASE_URL: database.url,
          ORG_ID: ctx.org.id,
          RESTATEMENT_ID: 'rst_killed',
        });
        const state = await storage.db
          .selectFrom('restatements')
          .selectAll()
          .where('id', '=', 'rst_killed')
          .executeTakeFirstOrThrow();
        expect(state.status).toBe('staging');
        expect(await storage.db.selectFrom('adjustments').select('id').execute()).toEqual([]);
        expect(await byTaskType(ctx)).toEqual(expectedByTaskType(before));
        if (stopAt === 'staged') {
          // Killed after its first batch: resumed from its cursor, applied once.
          expect(Number(state.events_seen)).toBe(3);
          const view = await applyRestatement(ctx, {
            restatementId: 'rst_killed',
            orgId: ctx.org.id,
            reason: 'resumed',
            reprice: baselineRepricer('dev_bug_fix', 30),
            batch: 3,
          });
          expect(view).toMatchObject({ status: 'applied', events_seen: 10 });
          expect(await byTaskType(ctx)).toEqual(expectedByTaskType(after));
          const entries = await storage.db.selectFrom('adjustments').select('event_id').execute();
          expect(new Set(entries.map((e) => e.event_id)).size).toBe(entries.length);
          expect(entries.length).toBe(view.events_adjusted);
        } else {
          // Killed while publishing: every batch was staged; abandoned, nothing of it stays.
          expect(Number(state.events_seen)).toBe(10);
          expect(await abandonRestatement(ctx, 'rst_killed')).toMatchObject({ status: 'abandoned' });
          expect(await storage.db.selectFrom('restatement_staging').select('event_id').execute()).toEqual([]);
          expect(await byTaskType(ctx)).toEqual(expectedByTaskType(before));
        }
      },
    );
});
