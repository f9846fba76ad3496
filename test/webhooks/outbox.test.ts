import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { claimDueDeliveries } from '../../src/webhooks/claim.js';
import { recordFailedDelivery } from '../../src/webhooks/health.js';
import { recordAttempt } from '../../src/webhooks/record.js';
import { DeliveryWorker } from '../../src/webhooks/worker.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { ALLOW_PRIVATE, deliveriesOf, subscribe, track } from './helpers.js';
import { startReceiver, type Receiver } from './receiver.js';

describe.each(ENGINES)('webhook outbox and crash recovery (%s)', (engine) => {
  let h: Harness;
  let r: Receiver | undefined;
  beforeAll(async () => {
    h = await createHarness(engine, { env: ALLOW_PRIVATE });
  });
  afterEach(async () => {
    await r?.close();
    for (const w of (await h.request({ method: 'GET', url: '/v1/webhooks' })).json().data) {
      await h.request({ method: 'DELETE', url: `/v1/webhooks/${w.id}` });
    }
  });
  afterAll(async () => h.close());

  const count = async (table: 'webhook_messages' | 'webhook_deliveries') =>
    Number(
      (
        await h.ctx.db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  it('writes messages with the event, and none for replays, failed calls or unsubscribed types', async () => {
    r = await startReceiver();
    const before = await count('webhook_messages');
    await track(h, 'no-hooks-yet');
    expect(await count('webhook_messages')).toBe(before);

    await subscribe(h, r.url, ['agent.first_event']);
    await track(h, 'no-hooks-yet');
    expect(await count('webhook_messages')).toBe(before);
    await track(h, 'brand-new');
    expect(await count('webhook_messages')).toBe(before + 1);

    await subscribe(h, r.url, ['event.created']);
    const payload = { agent_id: 'brand-new', task_type: 'support_ticket_reply', outcome: 'success' };
    const headers = { 'idempotency-key': 'run-1' };
    await h.request({ method: 'POST', url: '/v1/track', payload, headers });
    const replay = await h.request({ method: 'POST', url: '/v1/track', payload, headers });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    const failed = await h.request({
      method: 'POST',
      url: '/v1/track',
      payload: { ...payload, task_type: 'nope' },
    });
    expect(failed.statusCode).toBe(422);
    expect(await count('webhook_messages')).toBe(before + 2);
  });

  it('a worker killed after claiming loses nothing: the attempt is recovered and never re-sent under its number', async () => {
    r = await startReceiver();
    const hook = await subscribe(h, r.url);
    await track(h);
    // The state a killed process leaves: a claimed attempt, never sent or recorded.
    const [dead] = await claimDueDeliveries({
      ctx: h.ctx,
      workerId: 'dead-worker',
      limit: 10,
      leaseMs: 60_000,
      room: { webhooks: new Map(), otherwise: 10 },
    });
    expect(dead?.attempt).toBe(1);

    const worker = new DeliveryWorker(h.ctx, { mailTransport: null });
    try {
      expect(await worker.runOnce()).toBe(0);
      h.clock.advance(60_000);
      await worker.runOnce();
      expect(r.received).toHaveLength(0);
      h.clock.advance(30_000);
      await worker.runOnce();
      expect(r.received.map((m) => m.headers['x-tally-attempt'])).toEqual(['2']);

      // The dead worker's late result is refused: only the claim holder records.
      if (!dead) throw new Error('no claim');
      const late = await recordAttempt(h.ctx, {
        deliveryId: dead.id,
        webhookId: dead.webhookId,
        type: dead.type,
        attempt: 1,
        token: dead.token,
        statusCode: 200,
        responseBody: '',
        error: null,
        signature: null,
        durationMs: 1,
        startedAt: 0,
      });
      expect(late).toBe(false);
      const [delivery] = await deliveriesOf(h, hook.id);
      expect(delivery?.status).toBe('succeeded');
      expect(delivery?.attempts.map((a) => [a.attempt, a.succeeded])).toEqual([
        [1, false],
        [2, true],
      ]);
      expect(delivery?.attempts[0]?.error).toMatch(/lease expired/);
    } finally {
      await worker.stop();
    }
  });

  it('a late result of an earlier claim is refused, even when the same worker holds the newer claim', async () => {
    r = await startReceiver();
    const hook = await subscribe(h, r.url);
    await track(h);
    const claim = () =>
      claimDueDeliveries({
        ctx: h.ctx,
        workerId: 'wrk_same',
        limit: 10,
        leaseMs: 60_000,
        room: { webhooks: new Map(), otherwise: 10 },
      });
    const [first] = await claim();
    if (!first) throw new Error('no claim');
    const recovering = new DeliveryWorker(h.ctx, { mailTransport: null });
    h.clock.advance(60_000);
    await recovering.recover();
    await recovering.stop();
    h.clock.advance(30_000);
    const [second] = await claim();
    if (!second) throw new Error('no second claim');
    expect(second.attempt).toBe(2);
    expect(second.token).not.toBe(first.token);

    const result = (token: string, attempt: number) =>
      recordAttempt(h.ctx, {
        deliveryId: first.id,
        webhookId: first.webhookId,
        type: first.type,
        attempt,
        token,
        statusCode: 200,
        responseBody: '',
        error: null,
        signature: null,
        durationMs: 1,
        startedAt: 0,
      });
    expect(await result(first.token, 1)).toBe(false);
    expect(await result(second.token, 2)).toBe(true);
    const [delivery] = await deliveriesOf(h, hook.id);
    expect(delivery?.attempts.map((a) => [a.attempt, a.succeeded])).toEqual([
      [1, false],
      [2, true],
    ]);
  });

  it('messages queued while no worker runs are delivered by the next one; a stopped worker finishes what it claimed', async () => {
    r = await startReceiver();
    await subscribe(h, r.url);
    for (let i = 0; i < 5; i++) await track(h, `agent-${i}`);
    const first = new DeliveryWorker(h.ctx, { mailTransport: null, idlePollMs: 10 });
    first.start();
    await first.stop();
    const second = new DeliveryWorker(h.ctx, { mailTransport: null });
    await second.runOnce();
    await second.stop();
    expect(r.received).toHaveLength(5);
    expect(new Set(r.received.map((m) => m.headers['x-tally-message-id'])).size).toBe(5);
    const pending = await h.ctx.db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('status', '=', 'pending')
      .execute();
    expect(pending).toEqual([]);
  });

  it('deleting a webhook cancels its pending deliveries; deactivated webhooks get no new messages', async () => {
    r = await startReceiver(500);
    const hook = await subscribe(h, r.url);
    await track(h);
    await h.request({ method: 'DELETE', url: `/v1/webhooks/${hook.id}` });
    const rows = await h.ctx.db
      .selectFrom('webhook_deliveries')
      .select('status')
      .where('webhook_id', '=', hook.id)
      .execute();
    expect(rows.map((x) => x.status)).toEqual(['canceled']);

    const off = await subscribe(h, r.url);
    // Deactivated as the worker does it, at the 20th failed delivery in a row.
    await h.ctx.db
      .updateTable('webhooks')
      .set({ status: 'failing', consecutive_failures: 19 })
      .where('id', '=', off.id)
      .execute();
    await h.ctx.db
      .transaction()
      .execute((trx) => recordFailedDelivery({ ...h.ctx, db: trx }, off.id, h.clock.now()));
    await track(h);
    const none = await h.ctx.db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('webhook_id', '=', off.id)
      .execute();
    expect(none).toEqual([]);
  });
});
