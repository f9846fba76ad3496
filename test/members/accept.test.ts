import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyPassword } from '../../src/accounts/passwords.js';
import { openAccountSession } from '../../src/accounts/sessions.js';
import { createMailTransport } from '../../src/email/sender.js';
import { DeliveryWorker } from '../../src/webhooks/worker.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness, type TestOrg } from '../support/harness.js';
import { unlimited } from '../reports/unlimited.js';
import { startSmtp, type Mailbox } from '../webhooks/smtp.js';
import { cookieOf, csrfOf, ORIGIN, page, post } from '../dashboard/support.js';
import { addPerson } from './people.js';

const NOW = '2026-11-20T12:00:00.000Z';
const DAY = 86_400_000;
const LINK = /https:\/\/tally\.example\.com(\/dashboard\/invitations\/[A-Za-z0-9_-]{43})/;
const PASSWORD = 'correct horse battery staple';

describe.each(ENGINES)('accepting an invitation from its e-mail (%s)', (engine) => {
  let h: Harness;
  let smtp: Mailbox;
  let org: TestOrg;
  let owner: string;
  beforeAll(async () => {
    smtp = await startSmtp();
    h = await createHarness(engine, {
      now: NOW,
      rateLimiter: unlimited,
      env: { TALLY_PUBLIC_URL: 'https://tally.example.com', TALLY_SMTP_URL: smtp.url },
    });
    org = await h.createOrg();
    owner = await addPerson(h, org, 'olga@acme.test', 'owner', 'Olga', PASSWORD);
  });
  afterAll(async () => {
    await h.close();
    await smtp.close();
  });

  /** Invites over the API, sends the outbox over SMTP and returns the received link's path. */
  async function invite(email: string, role: string): Promise<{ id: string; path: string }> {
    h.clock.advance(1000);
    const res = await h.request({
      method: 'POST',
      url: '/v1/invitations',
      apiKey: org.apiKey,
      payload: { email, role },
    });
    expect(res.statusCode, res.body).toBeLessThan(300);
    const before = smtp.messages.length;
    const worker = new DeliveryWorker(h.ctx, { mailTransport: createMailTransport(smtp.url) });
    await worker.runOnce();
    await worker.stop();
    const mails = await Promise.all(smtp.messages.slice(before).map((m) => simpleParser(m.raw)));
    const mine = mails.filter((m) => m.to && !Array.isArray(m.to) && m.to.text === email.toLowerCase());
    expect(mine).toHaveLength(1);
    const path = LINK.exec(mine[0]?.text ?? '')?.[1];
    expect(path).toBeDefined();
    return { id: res.json().id, path: path as string };
  }

  const form = (path: string, fields: Record<string, string>, cookie = '') => post(h, cookie, path, fields);
  const create = (path: string, name: string, password = PASSWORD, again = password) =>
    form(path, { intent: 'create', name, password, password_again: again });
  const personCookie = async (accountId: string, orgId = org.id) => {
    const opened = await openAccountSession({ ctx: h.ctx, accountId, orgId, method: 'password' });
    return `tally_session=${opened.token}`;
  };

  it('a new person opens the link, sets a name and password, lands signed in; the link is single use', async () => {
    const { id, path } = await invite('new.person@example.com', 'analyst');
    const shown = await page(h, '', path);
    expect(shown.statusCode).toBe(200);
    expect(shown.body).toContain('You are invited to join <strong>Acme</strong>');
    expect(shown.body).toContain('<strong>analyst</strong>: reads every figure, changes nothing');
    expect(shown.body).toContain('Invitation for new.person@example.com');
    expect(shown.body).toContain('Create account and join');

    const differ = await create(path, 'Nia', PASSWORD, `${PASSWORD}!`);
    expect(differ.statusCode).toBe(200);
    expect(differ.body).toContain('The two passwords differ');
    const weak = await create(path, 'Nia', 'password1234');
    expect(weak.statusCode).toBe(200);
    expect(weak.body).toContain('role="alert"');
    const short = await create(path, 'Nia', 'short');
    expect(short.statusCode).toBe(200);
    expect(
      await h.ctx.db
        .selectFrom('accounts')
        .select('id')
        .where('email', '=', 'new.person@example.com')
        .execute(),
    ).toEqual([]);

    const accepted = await create(path, ' Nia Ng ');
    expect(accepted.statusCode, accepted.body).toBe(303);
    expect(accepted.headers.location).toBe('/dashboard');
    const cookie = cookieOf(accepted);
    expect(cookie).toMatch(/^tally_session=p\./);
    const home = await page(h, cookie, '/dashboard');
    expect(home.statusCode).toBe(200);
    expect(home.body).toContain('Welcome: you joined Acme as analyst.');

    const account = await h.ctx.db
      .selectFrom('accounts')
      .selectAll()
      .where('email', '=', 'new.person@example.com')
      .executeTakeFirstOrThrow();
    expect(account.name).toBe('Nia Ng');
    expect(await verifyPassword(PASSWORD, account.password_hash ?? '')).toBe(true);
    const members = (await h.request({ method: 'GET', url: '/v1/members', apiKey: org.apiKey })).json().data;
    expect(members).toContainEqual(
      expect.objectContaining({
        account_id: account.id,
        role: 'analyst',
        last_seen_at: h.clock.now().toISOString(),
      }),
    );
    const invitation = (
      await h.request({ method: 'GET', url: `/v1/invitations/${id}`, apiKey: org.apiKey })
    ).json();
    expect(invitation).toMatchObject({ status: 'accepted', accepted_account_id: account.id });
    const audit = await h.ctx.db
      .selectFrom('audit_log')
      .selectAll()
      .where('org_id', '=', org.id)
      .where('action', '=', 'invitation.accepted')
      .execute();
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      target: `invitation:${id}`,
      actor_account_id: account.id,
      actor_key_id: null,
    });

    // Single use: the link shows it was used, and a second acceptance changes nothing.
    const reopened = await page(h, '', path);
    expect(reopened.statusCode).toBe(200);
    expect(reopened.body).toContain('This invitation has already been used.');
    const twice = await create(path, 'Mallory', 'another long passphrase');
    expect(twice.statusCode).toBe(200);
    expect(twice.headers['set-cookie']).toBeUndefined();
    const after = await h.ctx.db
      .selectFrom('accounts')
      .select('name')
      .where('id', '=', account.id)
      .executeTakeFirstOrThrow();
    expect(after.name).toBe('Nia Ng');
  });

  it('two acceptances of one link at once: one account, one membership', async () => {
    const { path } = await invite('race@example.com', 'analyst');
    const results = await Promise.all([create(path, 'A'), create(path, 'B')]);
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 303]);
    const accounts = await h.ctx.db
      .selectFrom('accounts')
      .select('id')
      .where('email', '=', 'race@example.com')
      .execute();
    expect(accounts).toHaveLength(1);
  });

  it('an existing account joins from its own session, not from another one or none', async () => {
    const other = await h.createOrg();
    const ex = await addPerson(h, other, 'ex@example.com', 'owner', 'Ex', PASSWORD);
    const { path } = await invite('EX@example.com', 'admin');
    const anonymous = await page(h, '', path);
    expect(anonymous.statusCode).toBe(200);
    expect(anonymous.body).toContain('ex@example.com already has a Tally account.');
    expect(anonymous.body).not.toContain('Choose a password');
    const refused = await form(path, { intent: 'accept' });
    expect(refused.statusCode).toBe(200);
    expect(refused.body).toContain('Sign in as ex@example.com first');
    // Someone else's session, even with its own CSRF token, does not accept it.
    const olga = await personCookie(owner);
    const wrong = await page(h, olga, path);
    expect(wrong.body).toContain('You are signed in as olga@acme.test');
    const wrongPost = await form(path, { intent: 'accept', csrf_token: 'x' }, olga);
    expect(wrongPost.statusCode).toBe(200);
    // A forged creation for an existing e-mail neither joins nor changes the password.
    const forged = await create(path, 'Eve', 'an attacker passphrase');
    expect(forged.statusCode).toBe(200);

    const cookie = await personCookie(ex, other.id);
    const shown = await page(h, cookie, path);
    expect(shown.body).toContain('Join Acme');
    const joined = await form(path, { intent: 'accept', csrf_token: csrfOf(shown.body) }, cookie);
    expect(joined.statusCode, joined.body).toBe(303);
    const next = cookieOf(joined);
    expect(next).not.toBe(cookie);
    // The new session looks at the organisation joined, with the invited role; the old one is gone.
    const members = await page(h, next, '/dashboard/members');
    expect(members.statusCode).toBe(200);
    expect(members.body).toContain('<span class="org-name">Acme</span>');
    expect(members.body).toContain('ex@example.com <span class="badge">you</span>');
    expect((await page(h, cookie, '/dashboard')).statusCode).toBe(303);
    const role = await h.ctx.db
      .selectFrom('memberships')
      .select('role')
      .where('org_id', '=', org.id)
      .where('account_id', '=', ex)
      .executeTakeFirstOrThrow();
    expect(role.role).toBe('admin');
  });

  it('an expired link (7 days after sending) shows a clear page and accepts nothing', async () => {
    const { path } = await invite('late@example.com', 'analyst');
    h.clock.advance(7 * DAY - 1);
    expect((await page(h, '', path)).statusCode).toBe(200);
    h.clock.advance(1);
    const expired = await page(h, '', path);
    expect(expired.statusCode).toBe(200);
    expect(expired.body).toContain('This invitation has expired');
    const late = await create(path, 'Late');
    expect(late.statusCode).toBe(200);
    expect(
      await h.ctx.db.selectFrom('accounts').select('id').where('email', '=', 'late@example.com').execute(),
    ).toEqual([]);
  });

  it('a resent invitation kills the old link; a revoked one shows it was revoked', async () => {
    const first = await invite('twice@example.com', 'analyst');
    h.clock.advance(1000);
    const resent = await h.request({
      method: 'POST',
      url: `/v1/invitations/${first.id}/resend`,
      apiKey: org.apiKey,
    });
    expect(resent.statusCode).toBe(200);
    const old = await page(h, '', first.path);
    expect(old.statusCode).toBe(200);
    expect(old.body).toContain('replaced by a newer invitation e-mail');
    expect((await create(first.path, 'Old')).statusCode).toBe(200);

    const other = await invite('gone@example.com', 'analyst');
    await h.request({ method: 'DELETE', url: `/v1/invitations/${other.id}`, apiKey: org.apiKey });
    const revoked = await page(h, '', other.path);
    expect(revoked.statusCode).toBe(200);
    expect(revoked.body).toContain('This invitation was revoked');
    const nonsense = await page(h, '', '/dashboard/invitations/nonsense');
    expect(nonsense.statusCode).toBe(200);
    expect(nonsense.body).toContain('This invitation link is not valid.');
    // Longer than any link Tally makes: not a route at all.
    expect((await page(h, '', `/dashboard/invitations/${'x'.repeat(300)}`)).statusCode).toBe(404);
  });

  it('refuses a cross-origin acceptance', async () => {
    const { path } = await invite('csrf@example.com', 'analyst');
    const res = await post(
      h,
      '',
      path,
      { intent: 'create', name: 'X', password: PASSWORD, password_again: PASSWORD },
      { origin: 'https://evil.example' },
    );
    expect(res.statusCode).toBe(403);
    expect((await page(h, '', path)).statusCode).toBe(200);
    expect(ORIGIN).toBe('http://localhost:80');
  });
});
