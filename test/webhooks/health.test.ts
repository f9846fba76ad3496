import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceCtx } from '../../src/context.js';
import { createMailTransport } from '../../src/email/sender.js';
import { DeliveryWorker } from '../../src/webhooks/worker.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness, type TestOrg } from '../support/harness.js';
import { ALLOW_PRIVATE, subscribe, track } from './helpers.js';
import { startReceiver, type Receiver } from './receiver.js';
import { startSmtp, type Mailbox } from './smtp.js';

describe.each(ENGINES)('webhook health and admin e-mail (%s)', (engine) => {
  let h: Harness;
  let org: TestOrg;
  let r: Receiver;
  let smtp: Mailbox;
  let ctx: ServiceCtx;
  beforeAll(async () => {
    r = await startReceiver(500);
    smtp = await startSmtp();
    h = await createHarness(engine, { env: ALLOW_PRIVATE });
    org = await h.createOrg({ plan: 'pro', adminEmails: ['ops@acme.test', 'cto@acme.test'] });
    // One attempt per delivery, so each tracked event is one delivery that fails at once.
    ctx = { ...h.ctx, config: { ...h.config, webhookRetryDelaysSeconds: [0] } };
  });
  afterAll(async () => {
    await r.close();
    await smtp.close();
    await h.close();
  });

  const state = async (id: string) =>
    (await h.request({ method: 'GET', url: `/v1/webhooks/${id}`, apiKey: org.apiKey })).json();

  it('active → failing at 5 failed deliveries → active on success → deactivated at 20, e-mailing every admin once', async () => {
    const dead = await startSmtp();
    const deadUrl = dead.url;
    await dead.close();
    const worker = new DeliveryWorker(ctx, {
      mailTransport: createMailTransport(deadUrl),
      concurrency: 25,
      perWebhook: 25,
    });
    const hook = await subscribe(h, r.url, ['event.created'], org.apiKey);
    for (let i = 1; i <= 5; i++) {
      await track(h, 'bot', org.apiKey);
      await worker.runOnce();
      expect(await state(hook.id)).toMatchObject({
        status: i < 5 ? 'active' : 'failing',
        consecutive_failures: i,
      });
    }
    r.mode = 200;
    await track(h, 'bot', org.apiKey);
    await worker.runOnce();
    expect(await state(hook.id)).toMatchObject({ status: 'active', consecutive_failures: 0 });

    r.mode = 500;
    for (let i = 0; i < 21; i++) await track(h, 'bot', org.apiKey);
    // 25 slots: 21 deliveries claimed and failed in one pass.
    const w20 = new DeliveryWorker(ctx, {
      mailTransport: createMailTransport(deadUrl),
      concurrency: 20,
      perWebhook: 20,
    });
    await w20.runOnce();
    await w20.stop();
    expect(await state(hook.id)).toMatchObject({ status: 'deactivated', consecutive_failures: 20 });
    const audit = await h.ctx.db
      .selectFrom('audit_log')
      .selectAll()
      .where('action', '=', 'webhook.deactivated')
      .execute();
    expect(audit).toHaveLength(1);

    // SMTP down: the e-mails are kept with their error and retried later.
    const mails = await h.ctx.db.selectFrom('emails').selectAll().execute();
    expect(mails.map((m) => m.to_address).sort()).toEqual(['cto@acme.test', 'ops@acme.test']);
    expect(
      mails.every((m) => m.status === 'pending' && Number(m.attempts) === 1 && m.last_error !== null),
    ).toBe(true);

    // Deactivated: the held delivery and new events send nothing.
    const before = r.received.length;
    await track(h, 'bot', org.apiKey);
    await worker.runOnce();
    expect(r.received.length).toBe(before);
    await worker.stop();

    const live = new DeliveryWorker(ctx, { mailTransport: createMailTransport(smtp.url) });
    await live.runOnce();
    expect(smtp.messages).toHaveLength(0);
    h.clock.advance(60_000);
    await live.runOnce();
    await live.runOnce();
    expect(smtp.messages.map((m) => m.to[0]).sort()).toEqual(['cto@acme.test', 'ops@acme.test']);
    expect(smtp.messages[0]?.raw).toContain(hook.id);
    const sent = await h.ctx.db.selectFrom('emails').select('status').execute();
    expect(sent.map((m) => m.status)).toEqual(['sent', 'sent']);

    // Reactivation: the held delivery goes out; the webhook is healthy again.
    r.mode = 200;
    const patched = await h.request({
      method: 'PATCH',
      url: `/v1/webhooks/${hook.id}`,
      apiKey: org.apiKey,
      payload: { status: 'active' },
    });
    expect(patched.json()).toMatchObject({ status: 'active', consecutive_failures: 0 });
    await live.runOnce();
    expect(r.received.length).toBe(before + 1);
    expect(await state(hook.id)).toMatchObject({ status: 'active', consecutive_failures: 0 });
    await live.stop();
    expect(smtp.messages).toHaveLength(2);
  });
});
