import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness, type TestOrg } from '../support/harness.js';
import { csrfOf, ORIGIN, page, post } from '../dashboard/support.js';
import { PASSWORD, passwordSignIn, person, personSession } from './support.js';

// Password sign-in meets an organisation's single sign-on: an organisation that allows single
// sign-on only is never opened with a password (docs/people.md, "Signing in").

const connection = {
  issuer: 'https://login.example.com/tenant',
  client_id: 'tally-dashboard',
  client_secret: 'client-secret-for-the-sso-only-test',
  allowed_domains: ['example.com'],
  default_role: 'analyst',
};

describe.each(ENGINES)('password sign-in and single sign-on only (%s)', (engine) => {
  let h: Harness;
  let zeta: TestOrg;

  const rename = (id: string, name: string) =>
    h.storage.db.updateTable('organizations').set({ name }).where('id', '=', id).execute();
  const ssoOnly = async (only: boolean) => {
    const res = await h.request({
      method: 'PUT',
      url: '/v1/sso',
      apiKey: zeta.apiKey,
      payload: { ...connection, enabled: true, passwords_allowed: !only },
    });
    expect(res.statusCode, res.body).toBe(200);
  };
  /** The organisation a fresh session of `cookie` looks at, by the header's name. */
  const orgShown = async (cookie: string) => {
    const res = await page(h, cookie, '/dashboard');
    expect(res.statusCode).toBe(200);
    return /Alpha Ltd|Zeta Corp/.exec(
      /<header class="top">[\s\S]*?<\/header>/.exec(res.body)?.[0] ?? '',
    )?.[0];
  };

  beforeAll(async () => {
    h = await createHarness(engine, { env: { TALLY_PUBLIC_URL: 'https://tally.example.net' } });
    zeta = await h.createOrg({ plan: 'enterprise' });
    await rename(h.org.id, 'Alpha Ltd');
    await rename(zeta.id, 'Zeta Corp');
    await person(h, 'only@example.com', 'analyst', zeta);
    await person(h, 'both@example.com', 'admin');
    const { addMembership, findAccountRowByEmail } = await import('../../src/accounts/store.js');
    const both = await findAccountRowByEmail(h.ctx, 'both@example.com');
    await addMembership({ ctx: h.ctx, orgId: zeta.id, accountId: both?.id ?? '', role: 'owner' });
  });
  afterAll(async () => h.close());

  it('opens an organisation with a password while it allows passwords', async () => {
    await ssoOnly(false);
    const res = await passwordSignIn(h, 'only@example.com');
    expect(res.statusCode, res.body).toBe(303);
  });

  it('refuses the right password for single sign-on only, and a wrong one as ever', async () => {
    await ssoOnly(true);
    const right = await passwordSignIn(h, 'only@example.com');
    expect(right.statusCode).toBe(403);
    expect(right.body).toContain('signs in with single sign-on only');
    expect(right.body).toContain('href="/dashboard/sso"');
    expect(right.headers['set-cookie']).toBeUndefined();
    // A wrong password tells nothing more than for an unknown e-mail.
    const wrong = await passwordSignIn(h, 'only@example.com', 'not the password at all');
    const unknown = await passwordSignIn(h, 'nobody@example.com', 'not the password at all');
    expect(wrong.statusCode).toBe(401);
    expect(unknown.statusCode).toBe(401);
    const message = (body: string) => /<p class="error"[^>]*>([\s\S]*?)<\/p>/.exec(body)?.[1];
    expect(message(wrong.body)).toBe(message(unknown.body));
    expect(message(wrong.body)).not.toContain('single sign-on');
  });

  it('sets a password by the reset link but opens no session in an organisation with single sign-on only', async () => {
    await ssoOnly(true);
    const asked = await h.app.inject({
      method: 'POST',
      url: '/dashboard/password-reset',
      headers: { origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ email: 'only@example.com' }).toString(),
    });
    expect(asked.statusCode).toBeLessThan(400);
    const mails = await h.storage.db
      .selectFrom('emails')
      .select('body')
      .where('to_address', '=', 'only@example.com')
      .execute();
    const path = /\/dashboard\/password-reset\/[A-Za-z0-9_-]{43}/.exec(mails.at(-1)?.body ?? '')?.[0] ?? '';
    expect(path).not.toBe('');
    const done = await h.app.inject({
      method: 'POST',
      url: path,
      headers: { origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ password: 'a reset passphrase here' }).toString(),
    });
    expect(done.statusCode).toBe(200);
    expect(done.body).toContain('Your password is set. Your organisation signs in with single sign-on only.');
    expect(done.headers['set-cookie']).toBeUndefined();
    // Once passwords are allowed again, the new password works.
    await ssoOnly(false);
    expect((await passwordSignIn(h, 'only@example.com', 'a reset passphrase here')).statusCode).toBe(303);
  });

  it('signs a member of several organisations in to one that allows passwords', async () => {
    await ssoOnly(false);
    // Last looked at Zeta Corp: a password sign-in would reopen it ...
    const first = await personSession(h, 'both@example.com', PASSWORD);
    const csrf = csrfOf((await page(h, first, '/dashboard/account')).body);
    const switched = await post(h, first, '/dashboard/account/switch', { csrf_token: csrf, org_id: zeta.id });
    expect(switched.statusCode).toBe(303);
    expect(await orgShown(first)).toBe('Zeta Corp');
    expect(await orgShown(await personSession(h, 'both@example.com'))).toBe('Zeta Corp');
    // ... until Zeta Corp allows single sign-on only: then Alpha Ltd, where passwords work.
    await ssoOnly(true);
    expect(await orgShown(await personSession(h, 'both@example.com'))).toBe('Alpha Ltd');
  });

  it('sends a switch to an organisation with single sign-on only to its identity provider', async () => {
    await ssoOnly(true);
    const cookie = await personSession(h, 'both@example.com');
    expect(await orgShown(cookie)).toBe('Alpha Ltd');
    const csrf = csrfOf((await page(h, cookie, '/dashboard/account')).body);
    const res = await post(h, cookie, '/dashboard/account/switch', { csrf_token: csrf, org_id: zeta.id });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain(`url=/dashboard/sso/${zeta.id}/start`);
    // The password session did not move.
    expect(await orgShown(cookie)).toBe('Alpha Ltd');
  });
});
