import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evaluateAlerts } from '../../src/alerts/evaluate.js';
import type { Config } from '../../src/config.js';
import { DeliveryWorker } from '../../src/webhooks/worker.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness, type TestOrg } from '../support/harness.js';
import { tempFile } from '../support/temp.js';
import { seed, type SeedEvent } from '../reports/seed.js';
import { unlimited } from '../reports/unlimited.js';
import { ALLOW_PRIVATE, verifyTallySignature } from '../webhooks/helpers.js';
import { startReceiver, type Receiver } from '../webhooks/receiver.js';
import { DEFAULT_PLANS } from '../../src/billing/plans.js';
import { simpleParser } from 'mailparser';
import { createMailTransport } from '../../src/email/sender.js';
import { startSmtp } from '../webhooks/smtp.js';

const DAY = 86_400_000;
const NOW = '2026-11-20T12:00:00.000Z';
const ALERT_TYPES = ['budget.threshold_crossed', 'budget.forecast_exceeded', 'usage.threshold_crossed'];
/** Pro includes 10 events a month here, so usage thresholds are quick to reach. */
const PLANS = tempFile(
  'tally-alert-plans-',
  'plans.json',
  JSON.stringify({ ...DEFAULT_PLANS, pro: { ...DEFAULT_PLANS.pro, included_events_per_month: 10 } }),
);

function spend(iso: string, agentCost: number, agent = 'bot-1'): SeedEvent {
  return {
    agent,
    taskType: 'support_ticket_reply',
    outcome: 'success',
    client: null,
    occurredAt: Date.parse(iso),
    agentCost,
    baselineMinutes: 60,
  };
}

interface Envelope {
  id: string;
  type: string;
  data: Record<string, unknown> & { threshold?: number; month?: string };
}

describe.each(ENGINES)('budget and usage alerts (%s)', (engine) => {
  let h: Harness;
  let r: Receiver;
  beforeAll(async () => {
    r = await startReceiver(200);
    h = await createHarness(engine, {
      now: NOW,
      rateLimiter: unlimited,
      env: { ...ALLOW_PRIVATE, TALLY_PLANS_FILE: PLANS, TALLY_PUBLIC_URL: 'https://tally.example.com' },
    });
  });
  afterAll(async () => {
    await r.close();
    await h.close();
  });

  /** A fresh organisation with an admin who opted in and a webhook for the alert types. */
  async function setup(): Promise<{ org: TestOrg; secret: string; hookId: string }> {
    const org = await h.createOrg({ adminEmails: ['cfo@acme.test', 'ops@acme.test'] });
    const settings = await h.request({
      method: 'PATCH',
      url: '/v1/settings',
      apiKey: org.apiKey,
      payload: { alert_emails: ['cfo@acme.test'] },
    });
    expect(settings.statusCode).toBe(200);
    const hook = await h.request({
      method: 'POST',
      url: '/v1/webhooks',
      apiKey: org.apiKey,
      payload: { url: r.url, event_types: ALERT_TYPES },
    });
    expect(hook.statusCode, hook.body).toBe(201);
    return { org, secret: hook.json().secret, hookId: hook.json().id };
  }

  async function budget(org: TestOrg, payload: object): Promise<string> {
    const res = await h.request({ method: 'POST', url: '/v1/budgets', apiKey: org.apiKey, payload });
    expect(res.statusCode, res.body).toBe(201);
    return res.json().id;
  }

  /**
   * One worker pass; the messages of `prefix` types the receiver then got for the webhook of
   * `secret`, their signature verified.
   */
  async function deliver(secret: string, since: number, prefix = 'budget.'): Promise<Envelope[]> {
    const worker = new DeliveryWorker(h.ctx, { mailTransport: null });
    await worker.runOnce();
    await worker.stop();
    return r.received.slice(since).flatMap((m) => {
      const check = verifyTallySignature(String(m.headers['x-tally-signature']), m.body, secret);
      const envelope = JSON.parse(m.body) as Envelope;
      return check.ok && envelope.type.startsWith(prefix) ? [envelope] : [];
    });
  }

  async function emailsTo(orgId: string, about: string) {
    const mails = await h.ctx.db
      .selectFrom('emails')
      .select(['to_address', 'subject', 'body'])
      .where('org_id', '=', orgId)
      .orderBy('subject')
      .execute();
    return mails.filter((m) => m.subject.includes(about));
  }

  it('sends each threshold once per budget and month, and the forecast reaching the amount, signed and by e-mail', async () => {
    const { org, secret } = await setup();
    const ctx = await h.orgCtx(org);
    // 1 … 7 on Nov 13 … 19, 10 this morning: 38 of 60, forecast 80.
    await seed(ctx, [
      ...[1, 2, 3, 4, 5, 6, 7].map((c, i) =>
        spend(new Date(Date.parse('2026-11-13T09:00:00Z') + i * DAY).toISOString(), c),
      ),
      spend('2026-11-20T08:00:00Z', 10),
      spend('2026-11-20T08:30:00Z', 900, 'other-bot'),
    ]);
    const id = await budget(org, { name: 'Support bot', scope: 'agent', scope_value: 'bot-1', amount: 60 });
    let since = r.received.length;
    const first = await deliver(secret, since);
    expect(first.map((m) => [m.type, m.data.threshold ?? null]).sort()).toEqual([
      ['budget.forecast_exceeded', null],
      ['budget.threshold_crossed', 50],
    ]);
    const crossed = first.find((m) => m.type === 'budget.threshold_crossed');
    expect(crossed?.data).toEqual({
      budget: {
        id,
        name: 'Support bot',
        scope: 'agent',
        scope_value: 'bot-1',
        amount: 60,
        thresholds: [50, 80, 100],
      },
      currency: 'EUR',
      month: '2026-11',
      threshold: 50,
      threshold_amount: 30,
      spend: 38,
      percent_used: 63.3,
      forecast: {
        agent_cost: 80,
        low: 48.5,
        high: 111.5,
        run_out_date: '2026-11-25',
        method: {
          name: 'run_rate',
          description:
            'The month so far, plus the daily average of the last 7 complete days (2026-11-13 to 2026-11-19) times the 10.5 days left in the month.',
        },
      },
      crossed_at: NOW,
    });
    // Only the admin who opted in hears of it.
    const mails = await emailsTo(org.id, 'Budget');
    expect(mails.map((m) => [m.to_address, m.subject])).toEqual([
      ['cfo@acme.test', '[Tally] Budget "Support bot" is forecast to run out in 2026-11'],
      ['cfo@acme.test', '[Tally] Budget "Support bot" reached 50% for 2026-11'],
    ]);
    expect(mails[1]?.body).toContain('Agent spend in 2026-11: 38.00 EUR (63.3% of the budget).');
    expect(mails[1]?.body).toContain('Budgets: https://tally.example.com/dashboard/budgets');

    // Evaluated again: nothing new.
    since = r.received.length;
    expect(await evaluateAlerts({ ctx: h.ctx })).toEqual([]);
    expect(await deliver(secret, since)).toEqual([]);

    // 10 more: 48 is 80 %; then 12 more: 60 is 100 %.
    await seed(ctx, [spend('2026-11-20T09:00:00Z', 10)]);
    since = r.received.length;
    expect((await deliver(secret, since)).map((m) => m.data.threshold)).toEqual([80]);
    await seed(ctx, [spend('2026-11-20T10:00:00Z', 12)]);
    since = r.received.length;
    const last = await deliver(secret, since);
    expect(last.map((m) => [m.type, m.data.threshold, m.data.spend])).toEqual([
      ['budget.threshold_crossed', 100, 60],
    ]);
    const ledger = await h.ctx.db
      .selectFrom('alerts')
      .select(['kind', 'threshold', 'month'])
      .where('org_id', '=', org.id)
      .where('subject', '=', id)
      .execute();
    expect(ledger.map((a) => `${a.month} ${a.kind} ${Number(a.threshold)}`).sort()).toEqual([
      '2026-11 forecast 0',
      '2026-11 threshold 100',
      '2026-11 threshold 50',
      '2026-11 threshold 80',
    ]);
  });

  it('e-mails the admins who opted in over SMTP', async () => {
    const smtp = await startSmtp();
    try {
      const { org } = await setup();
      await budget(org, {
        name: 'Mail me',
        scope: 'agent',
        scope_value: 'mail-bot',
        amount: 10,
        thresholds: [50],
      });
      await seed(await h.orgCtx(org), [spend('2026-11-20T09:00:00Z', 6, 'mail-bot')]);
      const worker = new DeliveryWorker(h.ctx, { mailTransport: createMailTransport(smtp.url) });
      await worker.runOnce();
      await worker.stop();
      const mails = await Promise.all(smtp.messages.map((m) => simpleParser(m.raw)));
      const mine = mails.filter((m) => m.subject?.includes('"Mail me"'));
      // The organisation's first event is today: nothing is projected, so only the threshold.
      expect(mine.map((m) => [m.to && !Array.isArray(m.to) ? m.to.text : '', m.subject])).toEqual([
        ['cfo@acme.test', '[Tally] Budget "Mail me" reached 50% for 2026-11'],
      ]);
      const crossed = mine.find((m) => m.subject?.includes('reached'));
      expect(crossed?.text).toContain('Agent spend in 2026-11: 6.00 EUR (60% of the budget).');
    } finally {
      await smtp.close();
    }
  });

  it('sends a threshold of a new month again, and catches up the month before after downtime', async () => {
    const { org, secret } = await setup();
    const ctx = await h.orgCtx(org);
    await budget(org, { name: 'All', scope: 'org', amount: 100, thresholds: [50, 61] });
    await seed(ctx, [spend('2026-11-10T09:00:00Z', 20)]);
    expect(await deliver(secret, r.received.length)).toEqual([]);
    try {
      // Spent on the 30th while no worker ran; the next one starts on December 2nd.
      h.clock.set('2026-11-30T10:00:00.000Z');
      await seed(ctx, [spend('2026-11-30T09:00:00Z', 40)]);
      h.clock.set('2026-12-02T08:00:00.000Z');
      const caught = await deliver(secret, r.received.length);
      // November's threshold, caught up (the month is over: no forecast); and December's forecast
      // already runs out, at November 30's 40 over the last 7 days: 40 ÷ 7 × 29.67 days left.
      expect(
        caught.map((m) => [m.type, m.data.month, m.data.threshold ?? null, m.data.spend]).sort(),
      ).toEqual([
        ['budget.forecast_exceeded', '2026-12', null, 0],
        ['budget.threshold_crossed', '2026-11', 50, 60],
      ]);
      expect(caught.find((m) => m.data.month === '2026-11')?.data.forecast).toBeNull();
      // December's own spend crosses the same threshold again: another month, another alert.
      await seed(ctx, [spend('2026-12-02T07:00:00Z', 55)]);
      const december = await deliver(secret, r.received.length);
      expect(december.map((m) => [m.type, m.data.month, m.data.threshold])).toEqual([
        ['budget.threshold_crossed', '2026-12', 50],
      ]);
      // After the catch-up days, a month that is over is left alone: November's 61 % is not sent.
      await seed(ctx, [spend('2026-11-29T09:00:00Z', 1)]);
      h.clock.set('2026-12-09T08:00:00.000Z');
      expect(await deliver(secret, r.received.length)).toEqual([]);
    } finally {
      h.clock.set(NOW);
    }
  });

  it('writes nothing when a pass fails half-way, and the next pass sends the alert once', async () => {
    const { org, secret } = await setup();
    await budget(org, { name: 'Tiny', scope: 'org', amount: 1, thresholds: [100] });
    await seed(await h.orgCtx(org), [spend('2026-11-20T09:00:00Z', 5)]);
    // The crash: the configuration read after the ledger row is inserted throws.
    const broken = {
      ...h.ctx.config,
      get webhookRetryDelaysSeconds(): number[] {
        throw new Error('the process died here');
      },
    } as Config;
    await expect(evaluateAlerts({ ctx: { ...h.ctx, config: broken } })).rejects.toThrow(
      'the process died here',
    );
    const none = await h.ctx.db.selectFrom('alerts').select('org_id').where('org_id', '=', org.id).execute();
    expect(none).toEqual([]);
    expect(await emailsTo(org.id, '')).toEqual([]);
    const sent = await deliver(secret, r.received.length);
    expect(sent.map((m) => [m.type, m.data.threshold ?? null]).sort()).toEqual([
      ['budget.forecast_exceeded', null],
      ['budget.threshold_crossed', 100],
    ]);
  });

  it('sends usage.threshold_crossed at 80 % and 100 % of the included events, counted by receipt', async () => {
    const { org, secret } = await setup();
    const track = async (n: number, occurredAt?: string) => {
      for (let i = 0; i < n; i++) {
        const res = await h.request({
          method: 'POST',
          url: '/v1/track',
          apiKey: org.apiKey,
          payload: {
            agent_id: 'bot',
            task_type: 'support_ticket_reply',
            outcome: 'success',
            ...(occurredAt ? { occurred_at: occurredAt } : {}),
          },
        });
        expect(res.statusCode).toBe(201);
      }
    };
    await track(7);
    expect(await deliver(secret, r.received.length, 'usage.')).toEqual([]);
    // Dated in October, received now: it counts for November.
    await track(1, '2026-10-15T10:00:00.000Z');
    const eighty = await deliver(secret, r.received.length, 'usage.');
    expect(eighty.map((m) => m.data)).toEqual([
      {
        month: '2026-11',
        plan: 'pro',
        threshold: 80,
        events_in_month: 8,
        events_included_in_plan: 10,
        percent_used: 80,
        counted_by: 'received_at',
        crossed_at: NOW,
      },
    ]);
    await track(3);
    const full = await deliver(secret, r.received.length, 'usage.');
    expect(full.map((m) => [m.type, m.data.threshold, m.data.events_in_month])).toEqual([
      ['usage.threshold_crossed', 100, 11],
    ]);
    const mails = await emailsTo(org.id, 'included events');
    expect(mails.map((m) => m.subject)).toEqual([
      '[Tally] 100% of the included events used in 2026-11',
      '[Tally] 80% of the included events used in 2026-11',
    ]);
  });

  it('leaves organisations below Pro, and webhooks not subscribed, without budget alerts', async () => {
    const { org, secret } = await setup();
    await budget(org, { name: 'Tiny', scope: 'org', amount: 1 });
    const other = await h.request({
      method: 'POST',
      url: '/v1/webhooks',
      apiKey: org.apiKey,
      payload: { url: r.url, event_types: ['event.created'] },
    });
    const otherSecret = other.json().secret;
    await h.ctx.db.updateTable('organizations').set({ plan: 'free' }).where('id', '=', org.id).execute();
    await seed(await h.orgCtx(org), [spend('2026-11-20T09:00:00Z', 5)]);
    const since = r.received.length;
    expect(await deliver(secret, since, '')).toEqual([]);
    const toOther = r.received
      .slice(since)
      .filter((m) => verifyTallySignature(String(m.headers['x-tally-signature']), m.body, otherSecret).ok)
      .map((m) => (JSON.parse(m.body) as Envelope).type);
    expect(toOther.filter((t) => t !== 'event.created')).toEqual([]);
  });
});
