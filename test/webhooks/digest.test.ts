import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { openStorage, type Storage } from '../../src/storage/db.js';
import { dueDigestWeeks, queueDueDigests } from '../../src/webhooks/digest.js';
import { DeliveryWorker } from '../../src/webhooks/worker.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
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
    });
    expect(digest.top_agents).toHaveLength(5);
    expect(digest.top_agents[0]).toEqual({
      agent_id: 'a1',
      events: 2,
      hours_saved: 1,
      cost_saved: 50,
      agent_cost: 1.25,
      net_saved: 48.75,
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
