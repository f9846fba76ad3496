import { simpleParser, type ParsedMail } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMailTransport } from '../../src/email/sender.js';
import { queueDueReportEmails } from '../../src/report-emails/send.js';
import { DeliveryWorker } from '../../src/webhooks/worker.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness, type TestOrg } from '../support/harness.js';
import { seed, type SeedEvent } from '../reports/seed.js';
import { unlimited } from '../reports/unlimited.js';
import { parseCsv } from '../reports/csv-parse.js';
import { startSmtp, type Mailbox } from '../webhooks/smtp.js';

/** Monday 23 November 2026, 09:30 UTC: last week's report (16–22 November) is due. */
const MONDAY = '2026-11-23T09:30:00.000Z';

function event(iso: string, agent: string, taskType: string, agentCost: number): SeedEvent {
  return {
    agent,
    taskType,
    outcome: 'success',
    client: null,
    occurredAt: Date.parse(iso),
    agentCost,
    baselineMinutes: 60,
  };
}

describe.each(ENGINES)('scheduled report e-mails over SMTP (%s)', (engine) => {
  let h: Harness;
  let smtp: Mailbox;
  let org: TestOrg;
  beforeAll(async () => {
    smtp = await startSmtp();
    h = await createHarness(engine, {
      now: '2026-11-20T12:00:00.000Z',
      rateLimiter: unlimited,
      env: { TALLY_PUBLIC_URL: 'https://tally.example.com', TALLY_SMTP_URL: smtp.url },
    });
    org = await h.createOrg();
    const ctx = await h.orgCtx(org);
    await seed(ctx, [
      // In the week: support-bot 3 × (€50 saved, €5 cost), <b>-agent 1 × (€50, €20).
      event('2026-11-16T10:00:00Z', 'support-bot', 'support_ticket_reply', 5),
      event('2026-11-18T10:00:00Z', 'support-bot', 'support_ticket_reply', 5),
      event('2026-11-20T10:00:00Z', 'support-bot', 'ops_invoice_processing', 5),
      event('2026-11-19T10:00:00Z', '<b>-agent', 'support_ticket_reply', 20),
      // Outside it.
      event('2026-11-15T23:59:00Z', 'support-bot', 'support_ticket_reply', 7),
    ]);
    const budget = await h.request({
      method: 'POST',
      url: '/v1/budgets',
      apiKey: org.apiKey,
      payload: { name: 'Support', scope: 'agent', scope_value: 'support-bot', amount: 100 },
    });
    expect(budget.statusCode).toBe(201);
  });
  afterAll(async () => {
    await h.close();
    await smtp.close();
  });

  async function runWorker(): Promise<void> {
    const worker = new DeliveryWorker(h.ctx, { mailTransport: createMailTransport(smtp.url) });
    await worker.runOnce();
    await worker.stop();
  }

  const parsed = (from: number) => Promise.all(smtp.messages.slice(from).map((m) => simpleParser(m.raw)));

  it('sends last week’s report once to each recipient: HTML and text parts, the CSV attached, an unsubscribe link', async () => {
    const created = await h.request({
      method: 'POST',
      url: '/v1/report-schedules',
      apiKey: org.apiKey,
      payload: { frequency: 'weekly', recipients: ['cfo@acme.test', 'ops@acme.test', 'CFO@acme.test'] },
    });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json()).toMatchObject({
      frequency: 'weekly',
      recipients: [
        { email: 'cfo@acme.test', unsubscribed_at: null },
        { email: 'ops@acme.test', unsubscribed_at: null },
      ],
      next_send_at: '2026-11-23T09:00:00.000Z',
    });
    h.clock.set(MONDAY);
    const before = smtp.messages.length;
    await runWorker();
    const mails = await parsed(before);
    expect(mails.map((m) => m.to && !Array.isArray(m.to) && m.to.text).sort()).toEqual([
      'cfo@acme.test',
      'ops@acme.test',
    ]);
    const mail = mails[0] as ParsedMail;
    expect(mail.subject).toBe(
      '[Tally] Weekly report, 16 November 2026 to 22 November 2026: €165.00 net saved',
    );
    // The plain-text part.
    expect(mail.text).toContain('Events: 4');
    expect(mail.text).toContain('Cost saved: €200.00');
    expect(mail.text).toContain('Agent cost: €35.00');
    expect(mail.text).toContain('1. support-bot: 3 events, €135.00 net saved');
    expect(mail.text).toContain('- Support (agent: support-bot): €22.00 (22%) of €100.00');
    expect(mail.text).toContain('Open the dashboard: https://tally.example.com/dashboard?period=7d');
    // The HTML part: tables with inline styles, values escaped, the same links.
    const body = String(mail.html);
    expect(body).toContain('role="presentation"');
    expect(body).toContain('&lt;b&gt;-agent');
    expect(body).not.toContain('<b>-agent');
    expect(body).toContain('href="https://tally.example.com/dashboard?period=7d"');
    const unsubscribe = /href="(https:\/\/tally\.example\.com\/unsubscribe\?[^"]+)"/.exec(body)?.[1];
    expect(unsubscribe).toBeDefined();
    // Unfolded (RFC 5322: a long header continues on lines that start with white space).
    const header = (name: string) =>
      mail.headerLines.find((l) => l.key === name)?.line.replace(/\r?\n[ \t]+/g, ' ');
    expect(header('list-unsubscribe')).toBe(
      `List-Unsubscribe: <${String(unsubscribe).replaceAll('&amp;', '&')}>`,
    );
    expect(header('list-unsubscribe-post')).toBe('List-Unsubscribe-Post: List-Unsubscribe=One-Click');
    // The CSV of the week by agent and task type.
    expect(mail.attachments).toHaveLength(1);
    const csv = mail.attachments[0];
    expect(csv?.filename).toBe('tally-report-weekly-2026-11-16.csv');
    expect(csv?.contentType).toBe('text/csv');
    const rows = parseCsv(csv?.content.toString('utf8') ?? '');
    expect(rows[0]).toEqual([
      'agent_id',
      'task_type',
      'events',
      'hours_saved',
      'cost_saved',
      'agent_cost',
      'net_saved',
      'review_hours',
      'review_cost',
    ]);
    expect(rows.slice(1)).toEqual([
      ['support-bot', 'support_ticket_reply', '2', '2', '100', '10', '90', '0', '0'],
      ['support-bot', 'ops_invoice_processing', '1', '1', '50', '5', '45', '0', '0'],
      ['<b>-agent', 'support_ticket_reply', '1', '1', '50', '20', '30', '0', '0'],
    ]);

    // Again, and from a second scheduler at once: nobody gets the week twice.
    await Promise.all([queueDueReportEmails({ ctx: h.ctx }), queueDueReportEmails({ ctx: h.ctx })]);
    await runWorker();
    expect(smtp.messages.length).toBe(before + 2);
    const stored = await h.ctx.db
      .selectFrom('emails')
      .select(['status'])
      .where('org_id', '=', org.id)
      .execute();
    expect(stored.map((s) => s.status)).toEqual(['sent', 'sent']);
  });

  it('unsubscribes with the signed link, without signing in', async () => {
    const mail = (await parsed(0)).find((m) => m.to && !Array.isArray(m.to) && m.to.text === 'ops@acme.test');
    const link = /href="https:\/\/tally\.example\.com(\/unsubscribe\?[^"]+)"/.exec(String(mail?.html))?.[1];
    expect(link).toBeDefined();
    const url = String(link).replaceAll('&amp;', '&');
    const page = await h.request({ method: 'GET', url, apiKey: null });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.body).toContain('ops@acme.test');
    expect(page.body).toContain('<button type="submit" class="button">Unsubscribe</button>');
    // A GET (a mail scanner following the link) changes nothing.
    const schedule = async () =>
      (await h.request({ method: 'GET', url: '/v1/report-schedules', apiKey: org.apiKey })).json().data[0];
    expect((await schedule()).recipients[1].unsubscribed_at).toBeNull();
    // Tampered links do nothing.
    const forged = url.replace(/t=[^&]+/, 't=AAAA');
    expect((await h.request({ method: 'POST', url: forged, apiKey: null })).statusCode).toBe(404);
    // A mail client's one-click POST (RFC 8058).
    const done = await h.request({
      method: 'POST',
      url,
      apiKey: null,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'List-Unsubscribe=One-Click',
    });
    expect(done.statusCode).toBe(200);
    expect(done.body).toContain('ops@acme.test no longer receives the weekly report');
    expect((await schedule()).recipients[1].unsubscribed_at).toBe(new Date(MONDAY).toISOString());

    // The next Monday only the other recipient hears from Tally.
    h.clock.set('2026-11-30T09:30:00.000Z');
    const before = smtp.messages.length;
    await runWorker();
    const next = await parsed(before);
    expect(next.map((m) => m.to && !Array.isArray(m.to) && m.to.text)).toEqual(['cfo@acme.test']);
    expect(next[0]?.subject).toContain('23 November 2026 to 29 November 2026');
  });

  it('sends the monthly report on the 1st, with the month’s final budget spend', async () => {
    h.clock.set('2026-11-30T12:00:00.000Z');
    const created = await h.request({
      method: 'POST',
      url: '/v1/report-schedules',
      apiKey: org.apiKey,
      payload: { frequency: 'monthly', recipients: ['board@acme.test'] },
    });
    expect(created.json().next_send_at).toBe('2026-12-01T09:00:00.000Z');
    h.clock.set('2026-12-01T09:05:00.000Z');
    const before = smtp.messages.length;
    await runWorker();
    const [mail] = await parsed(before);
    expect(mail?.subject).toBe('[Tally] Monthly report, November 2026: €208.00 net saved');
    expect(mail?.text).toContain('Budgets, 2026-11');
    // November's whole spend of support-bot: 5 + 5 + 5 + 7.
    expect(mail?.text).toContain(
      '- Support (agent: support-bot): €22.00 (22%) of €100.00; forecast €22.00; On track',
    );
    expect(mail?.attachments[0]?.filename).toBe('tally-report-monthly-2026-11.csv');
  });

  it('manages schedules through the API, for Pro and above', async () => {
    const call = (
      method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
      url: string,
      payload?: object,
      apiKey = org.apiKey,
    ) => h.request({ method, url, apiKey, ...(payload ? { payload } : {}) });
    for (const payload of [
      { frequency: 'daily', recipients: ['a@b.test'] },
      { frequency: 'weekly', recipients: [] },
      { frequency: 'weekly', recipients: ['not an address'] },
      { frequency: 'weekly', recipients: ['a@b.test'], extra: 1 },
    ]) {
      const res = await call('POST', '/v1/report-schedules', payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(422);
    }
    const created = (
      await call('POST', '/v1/report-schedules', { frequency: 'weekly', recipients: ['x@acme.test'] })
    ).json();
    const patched = await call('PATCH', `/v1/report-schedules/${created.id}`, {
      recipients: ['y@acme.test'],
      frequency: 'monthly',
    });
    expect(patched.json()).toMatchObject({ frequency: 'monthly', recipients: [{ email: 'y@acme.test' }] });
    const sent = await call('POST', `/v1/report-schedules/${created.id}/send`);
    expect(sent.statusCode).toBe(202);
    expect(sent.json()).toEqual({ period: '2026-11', queued: ['y@acme.test'] });
    expect((await call('POST', `/v1/report-schedules/${created.id}/send`)).json().queued).toEqual([]);
    expect((await call('DELETE', `/v1/report-schedules/${created.id}`)).statusCode).toBe(204);
    expect((await call('GET', `/v1/report-schedules/${created.id}`)).statusCode).toBe(404);
    const other = await h.createOrg();
    const own = (await call('GET', '/v1/report-schedules')).json().data[0].id;
    expect((await call('GET', `/v1/report-schedules/${own}`, undefined, other.apiKey)).statusCode).toBe(404);
    const free = await h.createOrg({ plan: 'free' });
    expect((await call('GET', '/v1/report-schedules', undefined, free.apiKey)).statusCode).toBe(403);
  });
});
