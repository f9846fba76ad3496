import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOwner, issueFirstOwnerLink } from '../../src/accounts/tokens.js';
import { createMailTransport } from '../../src/email/sender.js';
import { DeliveryWorker } from '../../src/webhooks/worker.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { startSmtp, type Mailbox } from '../webhooks/smtp.js';
import { cookieOf, ORIGIN, page } from '../dashboard/support.js';
import { PASSWORD, passwordSignIn, person, personSession } from './support.js';

const form = (h: Harness, url: string, fields: Record<string, string>, cookie?: string) =>
  h.app.inject({
    method: 'POST',
    url,
    headers: {
      origin: ORIGIN,
      'content-type': 'application/x-www-form-urlencoded',
      ...(cookie ? { cookie } : {}),
    },
    payload: new URLSearchParams(fields).toString(),
  });

describe.each(ENGINES)('password reset over SMTP (%s)', (engine) => {
  let h: Harness;
  let smtp: Mailbox;
  beforeAll(async () => {
    smtp = await startSmtp();
    h = await createHarness(engine, {
      env: { TALLY_PUBLIC_URL: 'https://tally.example.com', TALLY_SMTP_URL: smtp.url },
    });
    await person(h, 'ana@example.com', 'admin');
  });
  afterAll(async () => {
    await h.close();
    await smtp.close();
  });

  async function deliver(): Promise<string[]> {
    const before = smtp.messages.length;
    const worker = new DeliveryWorker(h.ctx, { mailTransport: createMailTransport(smtp.url) });
    await worker.runOnce();
    await worker.stop();
    const mails = await Promise.all(smtp.messages.slice(before).map((m) => simpleParser(m.raw)));
    return mails.map(
      (m) => `${String(m.to && 'text' in m.to ? m.to.text : '')}\n${m.subject ?? ''}\n${m.text ?? ''}`,
    );
  }

  it('answers alike for a known and an unknown e-mail, and mails only the known one', async () => {
    const known = await form(h, '/dashboard/password-reset', { email: 'ANA@example.com' });
    const unknown = await form(h, '/dashboard/password-reset', { email: 'nobody@example.com' });
    expect(known.statusCode).toBe(200);
    expect(unknown.statusCode).toBe(200);
    expect(known.body).toBe(unknown.body);
    const mails = await deliver();
    expect(mails).toHaveLength(1);
    expect(mails[0]).toContain('ana@example.com');
    expect(mails[0]).toMatch(/https:\/\/tally\.example\.com\/dashboard\/password-reset\/[A-Za-z0-9_-]{43}/);
  });

  it('sets the password once through the link, ends every other session and signs in', async () => {
    const other = await personSession(h, 'ana@example.com');
    await form(h, '/dashboard/password-reset', { email: 'ana@example.com' });
    const [mail] = await deliver();
    const path = /\/dashboard\/password-reset\/[A-Za-z0-9_-]{43}/.exec(mail ?? '')?.[0] ?? '';
    expect((await h.app.inject({ url: path })).statusCode).toBe(200);
    const weak = await form(h, path, { password: 'short' });
    expect(weak.statusCode).toBe(422);
    expect(weak.body).toContain('at least 12 characters');
    const done = await form(h, path, { password: 'a reset passphrase here' }, other);
    expect(done.statusCode).toBe(303);
    const cookie = cookieOf(done);
    expect(cookie).toMatch(/^tally_session=p\./);
    expect((await page(h, cookie, '/dashboard')).statusCode).toBe(200);
    expect((await page(h, other, '/dashboard')).statusCode).toBe(303);
    // Used once: the link is gone.
    expect((await form(h, path, { password: 'another passphrase here' })).statusCode).toBe(404);
    expect((await passwordSignIn(h, 'ana@example.com', PASSWORD)).statusCode).toBe(401);
    expect((await passwordSignIn(h, 'ana@example.com', 'a reset passphrase here')).statusCode).toBe(303);
  });

  it('expires the link after an hour', async () => {
    await form(h, '/dashboard/password-reset', { email: 'ana@example.com' });
    const [mail] = await deliver();
    const path = /\/dashboard\/password-reset\/[A-Za-z0-9_-]{43}/.exec(mail ?? '')?.[0] ?? '';
    h.clock.advance(60 * 60_000);
    expect((await h.app.inject({ url: path })).statusCode).toBe(404);
    expect((await form(h, path, { password: 'a later passphrase here' })).statusCode).toBe(404);
  });
});

describe.each(ENGINES)('the first owner (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, { env: { TALLY_PUBLIC_URL: 'https://tally.example.com' } });
  });
  afterAll(async () => h.close());

  it('creates the owner’s account once through the link, and signs them in', async () => {
    const link = await issueFirstOwnerLink(h.ctx, h.org.id);
    expect(link).toMatch(/^https:\/\/tally\.example\.com\/dashboard\/first-owner\/[A-Za-z0-9_-]{43}$/);
    const path = new URL(link).pathname;
    const shown = await h.app.inject({ url: path });
    expect(shown.statusCode).toBe(200);
    expect(shown.body).toContain('Create the account');
    const common = await form(h, path, { email: 'owner@example.com', password: 'password123456' });
    expect(common.statusCode).toBe(422);
    const done = await form(h, path, { email: 'Owner@Example.com', password: PASSWORD, name: 'Olu' });
    expect(done.statusCode).toBe(303);
    const home = await page(h, cookieOf(done), '/dashboard');
    expect(home.body).toContain('owner@example.com');
    expect(home.body).toContain('<span class="pill">owner</span>');
    expect((await form(h, path, { email: 'x@example.com', password: PASSWORD })).statusCode).toBe(404);
    const audit = await h.ctx.db
      .selectFrom('audit_log')
      .select(['action', 'actor_account_id'])
      .where('action', '=', 'account.first_owner_created')
      .execute();
    expect(audit).toHaveLength(1);
  });

  it('create-owner: makes an existing account owner at once, and gives a link for a new e-mail', async () => {
    const other = await h.createOrg();
    const made = await createOwner(h.ctx, other.id, 'owner@example.com');
    expect(made.made).toBe('owner');
    const link = await createOwner(h.ctx, other.id, 'new.owner@example.com');
    expect(link.made).toBe('link');
    const path = link.made === 'link' ? new URL(link.link).pathname : '';
    const shown = await h.app.inject({ url: path });
    expect(shown.body).toContain('value="new.owner@example.com" readonly');
    // The link's e-mail wins over what the form says.
    const done = await form(h, path, { email: 'someone.else@example.com', password: PASSWORD });
    expect(done.statusCode).toBe(303);
    const row = await h.ctx.db
      .selectFrom('memberships')
      .innerJoin('accounts', 'accounts.id', 'memberships.account_id')
      .select(['accounts.email', 'memberships.role'])
      .where('memberships.org_id', '=', other.id)
      .orderBy('accounts.email')
      .execute();
    expect(row).toEqual([
      { email: 'new.owner@example.com', role: 'owner' },
      { email: 'owner@example.com', role: 'owner' },
    ]);
  });
});
