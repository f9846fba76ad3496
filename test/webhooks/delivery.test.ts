import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { DeliveryWorker } from '../../src/webhooks/worker.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { ALLOW_PRIVATE, deliveriesOf, subscribe, track, verifyTallySignature } from './helpers.js';
import { startReceiver, type Receiver } from './receiver.js';

describe.each(ENGINES)('webhook delivery (%s)', (engine) => {
  let h: Harness;
  let worker: DeliveryWorker;
  const receivers: Receiver[] = [];
  const receiver = async (mode: Receiver['mode'] = 200) => {
    const r = await startReceiver(mode);
    receivers.push(r);
    return r;
  };
  beforeAll(async () => {
    // Real time: the standardwebhooks library checks the timestamp against the wall clock.
    h = await createHarness(engine, {
      now: new Date().toISOString(),
      env: { ...ALLOW_PRIVATE, TALLY_WEBHOOK_TIMEOUT_MS: '300' },
    });
    worker = new DeliveryWorker(h.ctx, { mailTransport: null });
  });
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });
  afterAll(async () => {
    await worker.stop();
    await h.close();
  });

  it('delivers event.created and agent.first_event with the envelope, headers and both signatures', async () => {
    const r = await receiver();
    const hook = await subscribe(h, r.url, ['event.created', 'agent.first_event']);
    const event = await track(h, 'agent-first');
    const stored = (await h.request({ method: 'GET', url: `/v1/events/${event.event_id}` })).json();
    expect(await worker.runOnce()).toBe(2);
    expect(r.received).toHaveLength(2);
    const byType = new Map(r.received.map((m) => [m.headers['x-tally-event-type'], m]));
    const created = byType.get('event.created');
    const first = byType.get('agent.first_event');
    if (!created || !first) throw new Error('missing messages');

    const envelope = JSON.parse(created.body);
    expect(envelope).toEqual({
      id: expect.stringMatching(/^whmsg_[0-9A-Z]{26}$/),
      type: 'event.created',
      created_at: expect.any(String),
      data: stored,
    });
    expect(JSON.parse(first.body).data).toEqual({ agent_id: 'agent-first', event: stored });
    expect(created.headers['content-type']).toBe('application/json');
    expect(created.headers['x-tally-message-id']).toBe(envelope.id);
    expect(created.headers['x-tally-attempt']).toBe('1');

    const sig = verifyTallySignature(String(created.headers['x-tally-signature']), created.body, hook.secret);
    expect(sig.ok).toBe(true);
    expect(Math.abs(sig.t - Date.now() / 1000)).toBeLessThan(300);
    expect(
      verifyTallySignature(String(created.headers['x-tally-signature']), created.body + ' ', hook.secret).ok,
    ).toBe(false);
    const verified = new Webhook(hook.secret).verify(created.body, {
      'webhook-id': String(created.headers['webhook-id']),
      'webhook-timestamp': String(created.headers['webhook-timestamp']),
      'webhook-signature': String(created.headers['webhook-signature']),
    });
    expect(verified).toEqual(envelope);
    expect(created.headers['webhook-id']).toBe(envelope.id);

    // The same agent again: event.created only.
    await track(h, 'agent-first');
    expect(await worker.runOnce()).toBe(1);
    expect(r.received[2]?.headers['x-tally-event-type']).toBe('event.created');

    const log = await deliveriesOf(h, hook.id);
    expect(log).toHaveLength(3);
    expect(log[0]?.attempts[0]).toMatchObject({ attempt: 1, succeeded: true, status_code: 200, error: null });
    expect(log[0]?.attempts[0]?.response_body).toHaveLength(4096);
    expect(log[0]?.attempts[0]?.signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    await h.request({ method: 'DELETE', url: `/v1/webhooks/${hook.id}` });
  });

  it('retries on the schedule 0, 30 s, 2 min, 10 min, 1 h counted from each failure, then fails', async () => {
    const r = await receiver(500);
    const hook = await subscribe(h, r.url);
    await track(h);
    const expectAttempts = async (n: number) => {
      await worker.runOnce();
      expect(r.received).toHaveLength(n);
    };
    await expectAttempts(1);
    for (const delay of [30, 120, 600, 3600]) {
      h.clock.advance(delay * 1000 - 1);
      await expectAttempts(r.received.length);
      h.clock.advance(1);
      await expectAttempts(r.received.length + 1);
    }
    h.clock.advance(24 * 3600 * 1000);
    await expectAttempts(5);
    expect(r.received.map((m) => m.headers['x-tally-attempt'])).toEqual(['1', '2', '3', '4', '5']);
    expect(new Set(r.received.map((m) => m.headers['x-tally-message-id'])).size).toBe(1);
    // Re-signed at each attempt: each signature matches its own timestamp.
    const signatures = r.received.map((m) => String(m.headers['x-tally-signature']));
    expect(new Set(signatures).size).toBe(5);
    for (const m of r.received) {
      expect(verifyTallySignature(String(m.headers['x-tally-signature']), m.body, hook.secret).ok).toBe(true);
    }

    const [delivery] = await deliveriesOf(h, hook.id);
    expect(delivery?.status).toBe('failed');
    expect(delivery?.attempts.map((a) => [a.attempt, a.status_code, a.response_body])).toEqual(
      [1, 2, 3, 4, 5].map((n) => [n, 500, 'receiver broke']),
    );
    const webhook = (await h.request({ method: 'GET', url: `/v1/webhooks/${hook.id}` })).json();
    expect(webhook).toMatchObject({ status: 'active', consecutive_failures: 1 });
    await h.request({ method: 'DELETE', url: `/v1/webhooks/${hook.id}` });
  });

  it('logs a 2xx answer with a NUL byte as a success, the body sanitised and cut between characters', async () => {
    const r = await receiver('nul');
    const hook = await subscribe(h, r.url);
    await track(h);
    const errors: unknown[] = [];
    const w = new DeliveryWorker(h.ctx, { mailTransport: null, onError: (e) => errors.push(e) });
    try {
      await w.runOnce();
    } finally {
      await w.stop();
    }
    expect(errors).toEqual([]);
    const [delivery] = await deliveriesOf(h, hook.id);
    expect(delivery?.status).toBe('succeeded');
    const body = delivery?.attempts[0]?.response_body ?? '';
    expect(delivery?.attempts[0]).toMatchObject({ attempt: 1, succeeded: true, status_code: 200 });
    // 'ok' + U+FFFD (5 bytes) + 2045 two-byte 'é' = 4095 bytes: one more 'é' would pass 4096.
    expect(body).toBe(`ok\uFFFD${'é'.repeat(2045)}`);
    expect(Buffer.byteLength(body, 'utf8')).toBeLessThanOrEqual(4096);
    await h.request({ method: 'DELETE', url: `/v1/webhooks/${hook.id}` });
  });

  it('a success on a later attempt ends the delivery and resets the failure count', async () => {
    const r = await receiver(500);
    const hook = await subscribe(h, r.url);
    await track(h);
    await worker.runOnce();
    r.mode = 200;
    h.clock.advance(30_000);
    await worker.runOnce();
    const [delivery] = await deliveriesOf(h, hook.id);
    expect(delivery?.status).toBe('succeeded');
    expect(delivery?.attempts.map((a) => a.succeeded)).toEqual([false, true]);
    await h.request({ method: 'DELETE', url: `/v1/webhooks/${hook.id}` });
  });

  it('fails attempts on timeout, closed connections and redirects; a hanging receiver delays no other', async () => {
    const slow = await receiver('hang');
    const closing = await receiver('close');
    const redirecting = await receiver('redirect');
    const fast = await receiver(200);
    const hooks = await Promise.all([slow, closing, redirecting, fast].map((r) => subscribe(h, r.url)));
    await track(h);
    const started = Date.now();
    await worker.runOnce();
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(fast.received).toHaveLength(1);
    expect((fast.received[0]?.at ?? Infinity) - started).toBeLessThan(250);

    const [slowLog, closeLog, redirectLog, fastLog] = await Promise.all(
      hooks.map((w) => deliveriesOf(h, w.id)),
    );
    expect(slowLog?.[0]?.attempts[0]?.error).toMatch(/timeout/i);
    expect(slowLog?.[0]?.attempts[0]?.duration_ms).toBeGreaterThanOrEqual(250);
    expect(closeLog?.[0]?.attempts[0]).toMatchObject({ succeeded: false, status_code: null });
    expect(closeLog?.[0]?.attempts[0]?.error).toBeTruthy();
    expect(redirectLog?.[0]?.attempts[0]).toMatchObject({ succeeded: false, status_code: 302 });
    expect(fastLog?.[0]?.status).toBe('succeeded');
    expect(slowLog?.[0]?.status).toBe('pending');
    for (const w of hooks) await h.request({ method: 'DELETE', url: `/v1/webhooks/${w.id}` });
  });

  it('re-checks the resolved address at delivery: private targets are refused when not allowed', async () => {
    const r = await receiver(200);
    const port = new URL(r.url).port;
    const literal = await subscribe(h, r.url);
    const named = await subscribe(h, `http://localhost:${port}/hook`);
    await track(h);
    const strict = new DeliveryWorker(
      { ...h.ctx, config: { ...h.config, webhookAllowPrivateNetworks: false } },
      { mailTransport: null },
    );
    await strict.runOnce();
    await strict.stop();
    expect(r.received).toHaveLength(0);
    for (const w of [literal, named]) {
      const [delivery] = await deliveriesOf(h, w.id);
      expect(delivery?.attempts[0]?.error).toMatch(/non-public address/);
      await h.request({ method: 'DELETE', url: `/v1/webhooks/${w.id}` });
    }
  });

  it('sends a test.ping once, whatever the event types and state, logs it and keeps the state', async () => {
    const r = await receiver(500);
    const hook = await subscribe(h, r.url, ['weekly.digest']);
    await h.ctx.db
      .updateTable('webhooks')
      .set({ status: 'deactivated', consecutive_failures: 20 })
      .where('id', '=', hook.id)
      .execute();
    const res = await h.request({ method: 'POST', url: `/v1/webhooks/${hook.id}/test` });
    expect(res.statusCode).toBe(202);
    const { message_id: messageId } = res.json();
    expect(messageId).toMatch(/^whmsg_/);
    await worker.runOnce();
    h.clock.advance(3_600_000);
    await worker.runOnce();
    expect(r.received).toHaveLength(1);
    const body = JSON.parse(r.received[0]?.body ?? '{}');
    expect(body).toMatchObject({
      id: messageId,
      type: 'test.ping',
      data: { webhook_id: hook.id, message: expect.any(String), sent_at: expect.any(String) },
    });
    const [delivery] = await deliveriesOf(h, hook.id);
    expect(delivery).toMatchObject({ event_type: 'test.ping', status: 'failed' });
    expect(delivery?.attempts).toHaveLength(1);
    const webhook = (await h.request({ method: 'GET', url: `/v1/webhooks/${hook.id}` })).json();
    expect(webhook).toMatchObject({ status: 'deactivated', consecutive_failures: 20 });
  });

  it('TALLY_WEBHOOK_RETRY_DELAYS replaces the schedule', async () => {
    // The worker's config is what schedules retries; a second harness is not needed.
    const config = {
      ...h.config,
      webhookRetryDelaysSeconds: loadConfig({ TALLY_WEBHOOK_RETRY_DELAYS: '0,5' }).webhookRetryDelaysSeconds,
    };
    const w = new DeliveryWorker({ ...h.ctx, config }, { mailTransport: null });
    try {
      const r = await receiver(500);
      const hook = await subscribe(h, r.url);
      await track(h);
      await w.runOnce();
      h.clock.advance(4_999);
      await w.runOnce();
      expect(r.received).toHaveLength(1);
      h.clock.advance(1);
      await w.runOnce();
      h.clock.advance(3_600_000);
      await w.runOnce();
      expect(r.received).toHaveLength(2);
      const [delivery] = await deliveriesOf(h, hook.id);
      expect(delivery?.status).toBe('failed');
    } finally {
      await w.stop();
    }
  });

  it('TALLY_WEBHOOK_RETRY_DELAYS: the first delay counts for attempt 1', async () => {
    const delayed = await createHarness(engine, {
      now: new Date().toISOString(),
      env: { ...ALLOW_PRIVATE, TALLY_WEBHOOK_RETRY_DELAYS: '5,30' },
    });
    const w = new DeliveryWorker(delayed.ctx, { mailTransport: null });
    try {
      const r = await receiver(500);
      const hook = await subscribe(delayed, r.url);
      await track(delayed);
      await w.runOnce();
      delayed.clock.advance(4_999);
      await w.runOnce();
      expect(r.received).toHaveLength(0);
      delayed.clock.advance(1);
      await w.runOnce();
      expect(r.received.map((m) => m.headers['x-tally-attempt'])).toEqual(['1']);
      delayed.clock.advance(29_999);
      await w.runOnce();
      expect(r.received).toHaveLength(1);
      delayed.clock.advance(1);
      await w.runOnce();
      expect(r.received.map((m) => m.headers['x-tally-attempt'])).toEqual(['1', '2']);
      const [delivery] = await deliveriesOf(delayed, hook.id);
      expect(delivery?.status).toBe('failed');
    } finally {
      await w.stop();
      await delayed.close();
    }
  });
});
