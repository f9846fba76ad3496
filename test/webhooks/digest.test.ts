import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import type { OrgCtx } from '../../src/context.js';
import { foldAll } from '../fold/derived.js';
import { applyRestatement } from '../../src/ledger/restatement.js';
import { recordReview } from '../../src/ledger/review.js';
import type { Dimension } from '../../src/reports/params.js';
import { buildReport } from '../../src/reports/report.js';
import { openStorage, type Storage } from '../../src/storage/db.js';
import { trackEvent } from '../../src/tracking/track.js';
import { dueDigestWeeks, queueDigestWeekAt, queueDueDigests } from '../../src/webhooks/digest.js';
import { digestPayload } from '../../src/webhooks/digest-payload.js';
import { createWebhook } from '../../src/webhooks/subscriptions.js';
import { DeliveryWorker } from '../../src/webhooks/worker.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, pausedStageOptions, type Harness } from '../support/harness.js';
import { baselineRepricer } from '../ledger/repricer.js';
import { ALLOW_PRIVATE, subscribe } from './helpers.js';
import { startReceiver, type Receiver } from './receiver.js';

describe('dueDigestWeeks', () => {
  it('is due Mondays 09:00 UTC for the previous ISO week', () => {
    expect(dueDigestWeeks(new Date('2026-11-23T08:59:59.999Z'))[0]?.key).toBe('2026-11-09');
    const [week] = dueDigestWeeks(new Date('2026-11-23T09:00:00.000Z'));
    expect(week?.from.toISOString()).toBe('2026-11-16T00:00:00.000Z');
    expect(week?.to.toISOString()).toBe('2026-11-23T00:00:00.000Z');
    expect(week?.sendAt.toISOString()).toBe('2026-11-23T09:00:00.000Z');
    expect(dueDigestWeeks(new Date('2026-11-29T23:00:00.000Z'))[0]?.key).toBe('2026-11-16');
    expect(dueDigestWeeks(new Date('2027-01-04T09:00:00.000Z'))[0]?.key).toBe('2026-12-28');
  });
});

describe.each(ENGINES)('weekly digest (%s)', (engine) => {
  let h: Harness;
  let r: Receiver;
  let second: Storage | null = null;
  beforeAll(async () => {
    r = await startReceiver();
    // Subscribed on Tuesday 2026-11-10; events in the ISO week of 2026-11-16.
    h = await createHarness(engine, { env: ALLOW_PRIVATE, now: '2026-11-10T10:00:00.000Z' });
    if (engine === 'postgres') second = openStorage(h.storage.url, { schema: h.storage.schema });
  });
  afterAll(async () => {
    await r.close();
    await second?.close();
    await h.close();
  });

  const trackAt = async (occurredAt: string, agentId: string, taskType: string, extra: object = {}) => {
    h.clock.set(occurredAt);
    const res = await h.request({
      method: 'POST',
      url: '/v1/track',
      payload: { agent_id: agentId, task_type: taskType, outcome: 'success', ...extra },
    });
    expect(res.statusCode).toBe(201);
    return res.json();
  };

  it('sends the previous ISO week once per webhook, across two schedulers, with totals and top 5 lists', async () => {
    const hook = await subscribe(h, r.url, ['weekly.digest']);
    const notSubscribed = await subscribe(h, r.url, ['event.created']);
    const events = [
      await trackAt('2026-11-16T00:00:00.000Z', 'a1', 'dev_code_review', { agent_cost: 1.25 }),
      await trackAt('2026-11-18T12:00:00.000Z', 'a2', 'support_ticket_reply'),
      await trackAt('2026-11-22T23:59:59.999Z', 'a1', 'dev_code_review'),
    ];
    for (let i = 0; i < 6; i++)
      events.push(await trackAt('2026-11-20T10:00:00.000Z', `b${i}`, `data_entry_record`));
    await trackAt('2026-11-23T00:00:00.000Z', 'late', 'dev_bug_fix'); // next week: not counted
    await trackAt('2026-11-15T23:59:59.999Z', 'early', 'dev_bug_fix'); // previous week
    await h.ctx.db.deleteFrom('webhook_deliveries').execute();

    h.clock.set('2026-11-23T08:59:00.000Z');
    expect(await queueDueDigests({ ctx: h.ctx })).toHaveLength(1); // the week of 11-09 (subscribed 11-10 < 11-16 09:00)
    h.clock.set('2026-11-23T09:00:00.000Z');
    const other = second ? { ...h.ctx, db: second.db } : h.ctx;
    const [a, b] = await Promise.all([queueDueDigests({ ctx: h.ctx }), queueDueDigests({ ctx: other })]);
    expect([...(a ?? []), ...(b ?? [])].map((q) => [q.webhook_id, q.week])).toEqual([
      [hook.id, '2026-11-16'],
    ]);
    expect(await queueDueDigests({ ctx: h.ctx })).toEqual([]);

    const worker = new DeliveryWorker(h.ctx, { mailTransport: null });
    await worker.runOnce();
    await worker.runOnce();
    await worker.stop();
    const digests = r.received.map((m) => JSON.parse(m.body)).filter((m) => m.type === 'weekly.digest');
    expect(digests).toHaveLength(2);
    expect(r.received.every((m) => m.headers['x-tally-event-type'] === 'weekly.digest')).toBe(true);
    const digest = digests.find((d) => d.data.period.from === '2026-11-16T00:00:00.000Z')?.data;
    const sum = (k: 'hours_saved' | 'cost_saved') =>
      events.reduce((t, e) => t + Math.round(e[k] * 1e6), 0) / 1e6;
    expect(digest.period).toEqual({ from: '2026-11-16T00:00:00.000Z', to: '2026-11-23T00:00:00.000Z' });
    expect(digest.currency).toBe('EUR');
    expect(digest.totals).toEqual({
      events: 9,
      hours_saved: sum('hours_saved'),
      cost_saved: sum('cost_saved'),
      agent_cost: 1.25,
      net_saved: Math.round((sum('cost_saved') - 1.25) * 1e6) / 1e6,
      review_hours: 0,
      review_cost: 0,
    });
    expect(digest.top_agents).toHaveLength(5);
    expect(digest.top_agents[0]).toEqual({
      agent_id: 'a1',
      events: 2,
      hours_saved: 1,
      cost_saved: 50,
      agent_cost: 1.25,
      net_saved: 48.75,
      review_hours: 0,
      review_cost: 0,
    });
    expect(digest.top_task_types.map((t: { task_type: string }) => t.task_type)).toEqual([
      'dev_code_review',
      'data_entry_record',
      'support_ticket_reply',
    ]);
    const earlier = digests.find((d) => d.data.period.from === '2026-11-09T00:00:00.000Z')?.data;
    expect(earlier.totals.events).toBe(1);
    await h.request({ method: 'DELETE', url: `/v1/webhooks/${hook.id}` });
    await h.request({ method: 'DELETE', url: `/v1/webhooks/${notSubscribed.id}` });
  });

  it('catches up missed weeks after downtime (at most 4), never before the subscription, never when deactivated', async () => {
    h.clock.set('2026-11-24T12:00:00.000Z');
    const hook = await subscribe(h, r.url, ['event.created']);
    const off = await subscribe(h, r.url, ['weekly.digest']);
    await h.ctx.db.updateTable('webhooks').set({ status: 'deactivated' }).where('id', '=', off.id).execute();
    h.clock.set('2026-12-01T12:00:00.000Z');
    // Subscribing to the digest later: nothing is owed for weeks sent before that.
    await h.request({
      method: 'PATCH',
      url: `/v1/webhooks/${hook.id}`,
      payload: { event_types: ['weekly.digest'] },
    });
    h.clock.set('2027-02-10T00:00:00.000Z');
    const queued = await queueDueDigests({ ctx: h.ctx });
    expect(queued.map((q) => q.week).sort()).toEqual([
      '2027-01-11',
      '2027-01-18',
      '2027-01-25',
      '2027-02-01',
    ]);
    expect(queued.every((q) => q.webhook_id === hook.id)).toBe(true);
    expect(await queueDueDigests({ ctx: h.ctx })).toEqual([]);
    // The week of 11-23 was due 11-30 09:00, before the subscription of 12-01: never owed.
    const early = await queueDueDigests({
      ctx: { ...h.ctx, clock: new ManualClock('2026-12-01T13:00:00.000Z') },
    });
    expect(early).toEqual([]);
  });
});

describe.each(ENGINES)('weekly digest of reviewed and restated events (%s)', (engine) => {
  // The Wednesday after the digested week of 2026-11-16.
  const NOW = Date.parse('2026-11-25T12:00:00.000Z');
  const WEEK = { from: new Date('2026-11-16T00:00:00.000Z'), to: new Date('2026-11-23T00:00:00.000Z') };
  let h: Harness;
  let ctx: OrgCtx;
  beforeAll(async () => {
    h = await createHarness(engine, { ...pausedStageOptions(NOW), env: ALLOW_PRIVATE });
    ctx = await h.orgCtx(await h.createOrg({ plan: 'pro', hourlyRate: 50 }));
  });
  afterAll(async () => h.close());

  const track = async (
    agentId: string,
    taskType: string,
    outcome: 'success' | 'needs_review',
    minutes: number,
    occurredAt: string,
    agentCost?: number,
  ) =>
    (
      await trackEvent({
        ctx,
        idempotencyKey: null,
        input: {
          agent_id: agentId,
          task_type: taskType,
          outcome,
          human_baseline_minutes: minutes,
          occurred_at: occurredAt,
          ...(agentCost === undefined ? {} : { agent_cost: agentCost }),
        },
      })
    ).event;

  /** The report verb's rows over the digested week, by hours saved. */
  const reportRows = async (groupBy: Dimension[]) =>
    (
      await buildReport({
        ctx,
        input: { period: 'all', groupBy, sort: 'hours_saved', top: 5, filters: { metadata: [] } },
        options: { range: { from: WEEK.from.getTime(), to: WEEK.to.getTime() } },
      })
    ).rows;
  /** Its rows with the group's `key` first, as the digest's rows are. */
  const report = async (groupBy: Dimension[], key: string) =>
    (await reportRows(groupBy)).map(({ group, ...figures }) => ({ [key]: group[key], ...figures }));
  const digest = () =>
    digestPayload({ db: h.ctx.db, orgId: ctx.org.id, currency: 'EUR', from: WEEK.from, to: WEEK.to });

  it("equals the report verb's figures for the week, and ranks by the adjusted hours", async () => {
    // Before the adjustments: alpha 1.5 h (dev_bug_fix), beta 1 h (needs_review at 120 min), gamma 1/3 h.
    await track('alpha', 'dev_bug_fix', 'success', 90, '2026-11-17T10:00:00.000Z', 2);
    const beta = await track(
      'beta',
      'support_ticket_reply',
      'needs_review',
      120,
      '2026-11-18T10:00:00.000Z',
      0.5,
    );
    await track('gamma', 'data_sql_query', 'success', 20, '2026-11-19T10:00:00.000Z');
    // Outside the week, restated too: neither they nor their adjustments count.
    await track('alpha', 'dev_bug_fix', 'success', 90, '2026-11-15T23:59:59.999Z');
    await track('delta', 'dev_bug_fix', 'success', 600, '2026-11-23T00:00:00.000Z');
    await foldAll(h.ctx);
    const before = await digest();
    expect(before.top_agents.map((r) => r.agent_id)).toEqual(['alpha', 'beta', 'gamma']);

    // beta's review (accepted after 10 minutes): (120 − 10) / 60 h. The restatement of
    // dev_bug_fix to 30 minutes: alpha 0.5 h.
    await recordReview({
      ctx,
      eventId: beta.event_id,
      input: { review_minutes: 10, verdict: 'accepted' },
      idempotencyKey: null,
    });
    const restated = await applyRestatement(ctx, {
      restatementId: `rst_digest_${engine}`,
      orgId: ctx.org.id,
      reason: 'bug fixes take 30 minutes by hand',
      reprice: baselineRepricer('dev_bug_fix', 30),
    });
    expect(restated).toMatchObject({ status: 'applied', events_adjusted: 3 });

    const expectAsReports = async () => {
      const payload = await digest();
      // A week's rows: the one row of the digested ISO week.
      const weeks = (await reportRows(['week'])).map(({ group: _group, ...figures }) => figures);
      expect(weeks).toHaveLength(1);
      const totals = weeks[0];
      expect(payload.totals).toEqual(totals);
      expect(payload.top_agents).toEqual(await report(['agent'], 'agent_id'));
      expect(payload.top_task_types).toEqual(await report(['task_type'], 'task_type'));
      return payload;
    };
    // The adjustments in the tail, then folded into the rollups.
    const unfolded = await expectAsReports();
    await foldAll(h.ctx);
    expect(await expectAsReports()).toEqual(unfolded);

    expect(unfolded.totals).toMatchObject({
      events: 3,
      agent_cost: 2.5,
      hours_saved: 0.5 + 1.833333 + 0.333333,
      review_hours: 0.166667,
      review_cost: 8.33335,
    });
    expect(unfolded.totals.net_saved).toBe(
      Math.round((unfolded.totals.cost_saved - unfolded.totals.agent_cost) * 1e6) / 1e6,
    );
    expect(unfolded.top_agents.map((r) => [r.agent_id, r.events, r.hours_saved])).toEqual([
      ['beta', 1, 1.833333],
      ['alpha', 1, 0.5],
      ['gamma', 1, 0.333333],
    ]);
    expect(unfolded.top_task_types.map((r) => r.task_type)).toEqual([
      'support_ticket_reply',
      'dev_bug_fix',
      'data_sql_query',
    ]);
    expect(Object.keys(unfolded.totals)).toEqual([
      'events',
      'hours_saved',
      'cost_saved',
      'agent_cost',
      'net_saved',
      'review_hours',
      'review_cost',
    ]);

    // The message queued for a subscriber carries the same payload.
    const hook = await createWebhook({
      ctx,
      input: { url: 'http://127.0.0.1:9/hook', event_types: ['weekly.digest'] },
    });
    const queued = await queueDigestWeekAt({ ctx: h.ctx, at: new Date('2026-11-23T09:00:00.000Z') });
    const mine = queued.find((q) => q.webhook_id === hook.id);
    expect(mine?.week).toBe('2026-11-16');
    const message = await h.ctx.db
      .selectFrom('webhook_messages')
      .select('payload')
      .where('id', '=', mine?.message_id ?? '')
      .executeTakeFirstOrThrow();
    expect(JSON.parse(message.payload)).toEqual(unfolded);
  });
});
