import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { delayAfter } from '../../src/accounts/throttle.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { cookieOf, csrfOf, page, post, session, signIn } from '../dashboard/support.js';
import { PASSWORD, passwordSignIn, person, personSession } from './support.js';

describe('throttle delays', () => {
  it('lets 4 failures through, then waits 1 s doubling to 15 minutes', () => {
    expect([1, 2, 3, 4].map(delayAfter)).toEqual([0, 0, 0, 0]);
    expect(delayAfter(5)).toBe(1000);
    expect(delayAfter(6)).toBe(2000);
    expect(delayAfter(9)).toBe(16_000);
    expect(delayAfter(15)).toBe(900_000);
    expect(delayAfter(500)).toBe(900_000);
  });
});

describe.each(ENGINES)('signing in with e-mail and password (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine);
    await person(h, 'ana@example.com', 'admin');
  });
  afterAll(async () => h.close());

  it('shows the e-mail form, and the key form while key sign-in is allowed (auto)', async () => {
    const login = await h.app.inject({ url: '/dashboard/login' });
    expect(login.body).toContain('<label for="email">E-mail</label>');
    expect(login.body).toContain('<label for="password">Password</label>');
    expect(login.body).toContain('<label for="api_key">API key</label>');
    expect(login.body).toContain('href="/dashboard/password-reset"');
  });

  it('signs a person in with a new session token, dropping the one the browser had', async () => {
    const before = await session(h, h.org.apiKey).catch(() => null);
    const res = await passwordSignIn(h, ' ANA@example.com ', PASSWORD, before ? { cookie: before } : {});
    expect(res.statusCode, res.body).toBe(303);
    expect(res.headers.location).toBe('/dashboard');
    const cookie = cookieOf(res);
    expect(cookie).toMatch(/^tally_session=p\.[A-Za-z0-9_-]{43}$/);
    const shown = await page(h, cookie, '/dashboard');
    expect(shown.statusCode).toBe(200);
    expect(shown.body).toContain('ana@example.com');
    expect(shown.body).toContain('<span class="pill">admin</span>');
    if (before) expect((await page(h, before, '/dashboard')).statusCode).toBe(303);
    const audit = await h.ctx.db
      .selectFrom('audit_log')
      .selectAll()
      .where('action', '=', 'account.signed_in')
      .execute();
    expect(audit.length).toBeGreaterThan(0);
    expect(audit[0]?.actor_account_id).toMatch(/^acct_/);
  });

  it('answers a wrong password and an unknown e-mail alike', async () => {
    const wrong = await passwordSignIn(h, 'ana@example.com', 'not the password at all');
    const unknown = await passwordSignIn(h, 'nobody@example.com', 'not the password at all');
    expect(wrong.statusCode).toBe(401);
    expect(unknown.statusCode).toBe(401);
    const message = (body: string) => /role="alert">\s*([^<]*?)\s*</.exec(body)?.[1];
    expect(message(wrong.body)).toBe('The e-mail address or the password is not right.');
    expect(message(unknown.body)).toBe(message(wrong.body));
    expect(wrong.headers['set-cookie']).toBeUndefined();
    // The known person's failure is in the organisation's log; the unknown e-mail is in none.
    const failed = await h.ctx.db
      .selectFrom('audit_log')
      .selectAll()
      .where('action', '=', 'account.sign_in_failed')
      .execute();
    expect(failed).toHaveLength(1);
    expect(JSON.stringify(failed)).not.toContain('nobody');
  });

  it('delays an e-mail after 5 failures, doubling, whether or not it has an account', async () => {
    for (const email of ['bo@example.com', 'ghost@example.com']) {
      if (email === 'bo@example.com') await person(h, email, 'analyst');
      // Each from its own address (the helper's default), so only the e-mail's count matters.
      const attempt = (password: string) => passwordSignIn(h, email, password);
      for (let i = 0; i < 5; i++) expect((await attempt('wrong password, again')).statusCode).toBe(401);
      const blocked = await attempt(PASSWORD);
      expect(blocked.statusCode).toBe(429);
      expect(blocked.headers['retry-after']).toBe('1');
      expect(blocked.body).toContain('Too many failed sign-ins');
      h.clock.advance(999);
      expect((await attempt(PASSWORD)).statusCode).toBe(429);
      h.clock.advance(1);
      expect((await attempt('wrong password, again')).statusCode).toBe(401);
      const second = await attempt(PASSWORD);
      expect(second.statusCode).toBe(429);
      expect(second.headers['retry-after']).toBe('2');
      h.clock.advance(60_000);
    }
    const rows = await h.ctx.db.selectFrom('sign_in_throttle').selectAll().execute();
    const emailRows = rows.filter((r) => r.subject.startsWith('email:'));
    expect(emailRows.filter((r) => Number(r.failures) === 6)).toHaveLength(2);
    expect(JSON.stringify(rows)).not.toContain('@');
  });

  it('counts failures per client address too, and a success clears the e-mail', async () => {
    await person(h, 'cy@example.com', 'analyst');
    const from = { ip: '192.0.2.9', advanceMs: 300 };
    for (let i = 0; i < 5; i++) {
      expect(
        (await passwordSignIn(h, `probe${i}@example.com`, 'wrong password, again', from)).statusCode,
      ).toBe(401);
    }
    expect((await passwordSignIn(h, 'cy@example.com', PASSWORD, from)).statusCode).toBe(429);
    // Another address is not held up: the e-mail itself has no failures.
    expect((await passwordSignIn(h, 'cy@example.com', PASSWORD)).statusCode).toBe(303);
    h.clock.advance(1000);
    expect((await passwordSignIn(h, 'cy@example.com', PASSWORD, from)).statusCode).toBe(303);
  });

  it('ends the other sessions when the password changes, and lists and ends sessions', async () => {
    await person(h, 'di@example.com', 'analyst');
    const first = await personSession(h, 'di@example.com');
    const second = await personSession(h, 'di@example.com');
    const third = await personSession(h, 'di@example.com');
    const account = await page(h, first, '/dashboard/account');
    expect(account.statusCode).toBe(200);
    expect(account.body).toContain('Your sessions');
    expect(account.body.match(/name="session" value="[0-9a-f]{16}"/g)).toHaveLength(3);
    const csrf = csrfOf(account.body);

    const changed = await post(h, first, '/dashboard/account/password', {
      csrf_token: csrf,
      current_password: PASSWORD,
      new_password: 'a brand new passphrase',
    });
    expect(changed.statusCode).toBe(303);
    expect((await page(h, first, '/dashboard')).statusCode).toBe(200);
    expect((await page(h, second, '/dashboard')).statusCode).toBe(303);
    expect((await page(h, third, '/dashboard')).statusCode).toBe(303);
    expect((await passwordSignIn(h, 'di@example.com', PASSWORD)).statusCode).toBe(401);
    const fresh = await personSession(h, 'di@example.com', 'a brand new passphrase');

    const list = await page(h, first, '/dashboard/account');
    const freshList = await page(h, fresh, '/dashboard/account');
    const mine = [...list.body.matchAll(/name="session" value="([0-9a-f]{16})"/g)].map((m) => m[1]);
    expect(mine).toHaveLength(2);
    // The fresh session's own handle is the one marked "this session" on its own page.
    const freshHandle = /this session[\s\S]*?name="session" value="([0-9a-f]{16})"/.exec(freshList.body)?.[1];
    expect(freshHandle).toBeDefined();
    const ended = await post(h, first, '/dashboard/account/sessions/end', {
      csrf_token: csrfOf(list.body),
      session: freshHandle ?? '',
    });
    expect(ended.statusCode).toBe(303);
    expect((await page(h, fresh, '/dashboard')).statusCode).toBe(303);
    expect((await page(h, first, '/dashboard')).statusCode).toBe(200);
  });

  it('refuses a wrong current password and a weak new one', async () => {
    await person(h, 'ed@example.com', 'analyst');
    const cookie = await personSession(h, 'ed@example.com');
    const csrf = csrfOf((await page(h, cookie, '/dashboard/account')).body);
    const wrong = await post(h, cookie, '/dashboard/account/password', {
      csrf_token: csrf,
      current_password: 'not it at all, sorry',
      new_password: 'a brand new passphrase',
    });
    expect(wrong.statusCode).toBe(422);
    const weak = await post(h, cookie, '/dashboard/account/password', {
      csrf_token: csrf,
      current_password: PASSWORD,
      new_password: 'Password2026!',
    });
    expect(weak.statusCode).toBe(422);
    expect(weak.body).toContain('most common');
  });

  it('switches organisations only among the person’s own', async () => {
    const other = await h.createOrg();
    const third = await h.createOrg();
    const fi = await person(h, 'fi@example.com', 'analyst');
    const { addMembership } = await import('../../src/accounts/store.js');
    await addMembership({ ctx: h.ctx, orgId: other.id, accountId: fi.accountId, role: 'owner' });
    const cookie = await personSession(h, 'fi@example.com');
    const home = await page(h, cookie, '/dashboard');
    expect(home.body).toContain('action="/dashboard/account/switch"');
    const csrf = csrfOf(home.body);
    const refused = await post(h, cookie, '/dashboard/account/switch', {
      csrf_token: csrf,
      org_id: third.id,
    });
    expect(refused.statusCode).toBe(404);
    const target = home.body.includes(`value="${other.id}"`) ? other.id : '';
    expect(target).toBe(other.id);
    const switched = await post(h, cookie, '/dashboard/account/switch', {
      csrf_token: csrf,
      org_id: other.id,
    });
    expect(switched.statusCode).toBe(303);
    const after = await page(h, cookie, '/dashboard');
    expect(after.body).toContain('<span class="pill">owner</span>');
    const row = await h.ctx.db
      .selectFrom('account_sessions')
      .select('org_id')
      .where('account_id', '=', fi.accountId)
      .executeTakeFirst();
    expect(row?.org_id).toBe(other.id);
  });
});

describe.each(ENGINES)('signing in with an API key (%s)', (engine) => {
  it('is allowed while the organisation has no owner (auto), then refused', async () => {
    const h = await createHarness(engine);
    try {
      expect((await signIn(h)).statusCode).toBe(303);
      await person(h, 'owner@example.com', 'owner');
      const refused = await signIn(h);
      expect(refused.statusCode).toBe(401);
      expect(refused.body).toContain('Signing in with an API key is turned off here');
    } finally {
      await h.close();
    }
  });

  it('follows TALLY_DASHBOARD_KEY_SIGN_IN=on and =off', async () => {
    const on = await createHarness(engine, { env: { TALLY_DASHBOARD_KEY_SIGN_IN: 'on' } });
    const off = await createHarness(engine, { env: { TALLY_DASHBOARD_KEY_SIGN_IN: 'off' } });
    try {
      await person(on, 'owner@example.com', 'owner');
      expect((await signIn(on)).statusCode).toBe(303);
      expect((await signIn(off)).statusCode).toBe(401);
      const login = await off.app.inject({ url: '/dashboard/login' });
      expect(login.body).not.toContain('api_key');
    } finally {
      await on.close();
      await off.close();
    }
  });
});
