import { randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import type { JWTPayload } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { addMembership, createAccount, findAccountByEmail, membershipIn } from '../../src/accounts/store.js';
import { SESSION_COOKIE } from '../../src/dashboard/security.js';
import { forgetProviders } from '../../src/sso/oidc.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness, type TestOrg } from '../support/harness.js';
import { CookieJar, signInAtProvider, startProvider, type TestProvider } from './provider.js';

const NOW = '2026-11-20T12:00:00.000Z';
const PUBLIC_URL = 'http://tally.test';
const REDIRECT_URI = `${PUBLIC_URL}/dashboard/sso/callback`;
const PASSWORD = 'provider-password-1';

const people = [
  { email: 'ana@example.com', name: 'Ana Example', emailVerified: true },
  { email: 'bob@other.org', emailVerified: true },
  { email: 'carol@example.com', emailVerified: true },
  { email: 'dave@example.com', emailVerified: false },
  { email: 'erin@example.com' },
  { email: 'olga@example.com', emailVerified: true },
  { email: 'finn@example.com', emailVerified: true },
].map((p) => ({ ...p, password: PASSWORD }));

/** The value of cookie `name` among a response's Set-Cookie headers, or undefined. */
function setCookie(res: LightMyRequestResponse, name: string): string | undefined {
  const raw = res.headers['set-cookie'];
  const lines = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
  for (const line of lines) {
    const [pair] = line.split(';');
    if (pair?.startsWith(`${name}=`)) return pair.slice(name.length + 1);
  }
  return undefined;
}

describe.each(ENGINES)('OpenID Connect single sign-on against oidc-provider (%s)', (engine) => {
  let h: Harness;
  let org: TestOrg;
  let provider: TestProvider;

  /** Both clocks move together: the service's (harness) and the provider's (Date). */
  const advance = (ms: number) => {
    h.clock.advance(ms);
    vi.setSystemTime(h.clock.now());
  };

  beforeAll(async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: new Date(NOW) });
    h = await createHarness(engine, { now: NOW, env: { TALLY_PUBLIC_URL: PUBLIC_URL } });
    org = await h.createOrg({ plan: 'enterprise' });
    provider = await startProvider({ redirectUri: REDIRECT_URI, people });
    forgetProviders();
    const res = await h.request({
      method: 'PUT',
      url: '/v1/sso',
      apiKey: org.apiKey,
      payload: {
        issuer: provider.issuer,
        client_id: provider.clientId,
        client_secret: provider.clientSecret,
        allowed_domains: ['example.com'],
        default_role: 'analyst',
      },
    });
    expect(res.statusCode, res.body).toBe(200);
  });
  afterAll(async () => {
    await provider.close();
    await h.close();
    vi.useRealTimers();
  });

  /** The browser's way in: /start, the provider's login form, back to the callback URL. */
  async function throughProvider(email: string) {
    // Starts are limited per address and second of the service's clock.
    advance(1000);
    const start = await h.app.inject({ method: 'GET', url: `/dashboard/sso/${org.id}/start` });
    expect(start.statusCode, start.body).toBe(303);
    const state = setCookie(start, 'tally_sso');
    expect(state).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    const location = String(start.headers.location);
    expect(location.startsWith(`${provider.issuer}/auth?`)).toBe(true);
    const callback = await signInAtProvider({
      authorizationUrl: location,
      redirectUri: REDIRECT_URI,
      email,
      password: PASSWORD,
      jar: new CookieJar(),
    });
    return { state: state ?? '', callback };
  }

  function finish(callback: URL, state: string | null) {
    return h.app.inject({
      method: 'GET',
      url: `/dashboard/sso/callback${callback.search}`,
      headers: state === null ? {} : { cookie: `tally_sso=${state}` },
    });
  }

  async function failures() {
    const rows = await h.storage.db
      .selectFrom('audit_log')
      .selectAll()
      .where('org_id', '=', org.id)
      .where('action', '=', 'sso.sign_in_failed')
      .execute();
    return rows.map(
      (r) => JSON.parse(r.after ?? 'null') as { reason: string; detail: string | null; email: string | null },
    );
  }

  async function expectRefused(res: LightMyRequestResponse, status: number, reason: string, text: RegExp) {
    expect(res.statusCode, res.body).toBe(status);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toMatch(text);
    expect(setCookie(res, SESSION_COOKIE)).toBeUndefined();
    expect(setCookie(res, 'tally_sso')).toBe('');
    const last = (await failures()).filter((f) => f.reason === reason);
    expect(last.length, `no audited ${reason}`).toBeGreaterThan(0);
    return last.at(-1);
  }

  it('signs a new person in: PKCE S256, nonce, the ID token checked, the account and membership provisioned', async () => {
    const { state, callback } = await throughProvider('ana@example.com');
    const sent = provider.checkedRequests.at(-1);
    expect(sent?.pkce).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(sent?.nonce).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    expect(sent?.scope).toBe('openid email profile');
    expect(callback.searchParams.get('iss')).toBe(provider.issuer);

    // What is stored of the sign-in in flight: hashes, and the verifier sealed.
    const login = await h.storage.db.selectFrom('sso_logins').selectAll().executeTakeFirstOrThrow();
    expect(login.state_hash).not.toBe(state);
    expect(login.state_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(login.nonce).not.toBe(sent?.nonce);
    expect(login.code_verifier.startsWith('tsb1.')).toBe(true);
    expect(Number(login.expires_at) - Number(login.created_at)).toBe(10 * 60_000);

    const res = await finish(callback, state);
    expect(res.statusCode, res.body).toBe(303);
    expect(res.headers.location).toBe('/dashboard');
    const token = setCookie(res, SESSION_COOKIE);
    expect(token).toMatch(/^p\./);
    expect(setCookie(res, 'tally_sso')).toBe('');

    const account = await findAccountByEmail(h.ctx, 'ana@example.com');
    expect(account).toMatchObject({ email: 'ana@example.com', name: 'Ana Example', hasPassword: false });
    expect((await membershipIn(h.ctx, org.id, account?.id ?? ''))?.role).toBe('analyst');
    const session = await h.storage.db.selectFrom('account_sessions').selectAll().executeTakeFirstOrThrow();
    expect(session).toMatchObject({ account_id: account?.id, org_id: org.id, method: 'sso' });
    const used = await h.storage.db.selectFrom('sso_logins').select('used_at').executeTakeFirstOrThrow();
    expect(Number(used.used_at)).toBe(h.clock.now().getTime());

    // The session opens the dashboard.
    const dashboard = await h.app.inject({
      method: 'GET',
      url: '/dashboard',
      headers: { cookie: `${SESSION_COOKIE}=${token}` },
    });
    expect(dashboard.statusCode).toBe(200);

    const audit = await h.storage.db
      .selectFrom('audit_log')
      .selectAll()
      .where('org_id', '=', org.id)
      .where('action', '=', 'sso.signed_in')
      .executeTakeFirstOrThrow();
    expect(audit.actor_account_id).toBe(account?.id);
    expect(JSON.parse(audit.after ?? '{}')).toEqual({
      email: 'ana@example.com',
      provisioned: true,
      membership_added: true,
    });

    // A replayed callback (same state, same browser) is refused, and audited.
    const again = await finish(callback, state);
    await expectRefused(again, 400, 'replayed_state', /already been used/);
  });

  it('gives an existing account the membership, and keeps the role of an existing member', async () => {
    const finn = await createAccount({ ctx: h.ctx, email: 'finn@example.com' });
    const olga = await createAccount({ ctx: h.ctx, email: 'olga@example.com' });
    await addMembership({ ctx: h.ctx, orgId: org.id, accountId: olga.id, role: 'owner' });
    for (const email of ['finn@example.com', 'olga@example.com']) {
      const { state, callback } = await throughProvider(email);
      const res = await finish(callback, state);
      expect(res.statusCode, res.body).toBe(303);
    }
    expect((await membershipIn(h.ctx, org.id, finn.id))?.role).toBe('analyst');
    expect((await membershipIn(h.ctx, org.id, olga.id))?.role).toBe('owner');
  });

  it('refuses an ID token issued for another client (audience)', async () => {
    const { state, callback } = await throughProvider('ana@example.com');
    provider.tamper = (claims: JWTPayload) => ({ ...claims, aud: 'another-client', azp: 'another-client' });
    try {
      const failure = await expectRefused(
        await finish(callback, state),
        400,
        'token_rejected',
        /could not be verified/,
      );
      expect(failure?.detail).toMatch(/"aud"/);
    } finally {
      provider.tamper = null;
    }
  });

  it('refuses an ID token from another issuer, an expired one, and one with another nonce', async () => {
    const cases: [(c: JWTPayload) => JWTPayload, RegExp][] = [
      [(c) => ({ ...c, iss: 'https://evil.example.com' }), /"iss"/],
      [(c) => ({ ...c, exp: Math.floor(h.clock.now().getTime() / 1000) - 120 }), /"exp"/],
      [(c) => ({ ...c, nonce: 'another-nonce' }), /"nonce"/],
    ];
    for (const [tamper, detail] of cases) {
      const { state, callback } = await throughProvider('ana@example.com');
      provider.tamper = tamper;
      try {
        const failure = await expectRefused(
          await finish(callback, state),
          400,
          'token_rejected',
          /could not be verified/,
        );
        expect(failure?.detail).toMatch(detail);
      } finally {
        provider.tamper = null;
      }
    }
  });

  it('refuses a callback in another browser, an unknown state and an expired one', async () => {
    const first = await throughProvider('ana@example.com');
    await expectRefused(await finish(first.callback, null), 400, 'state_not_bound', /another browser/);
    // The stolen callback did not spend the sign-in: its own browser still finishes it.
    expect((await finish(first.callback, first.state)).statusCode).toBe(303);

    const unknown = new URL(first.callback);
    const forged = randomBytes(32).toString('base64url');
    unknown.searchParams.set('state', forged);
    const res = await finish(unknown, forged);
    expect(res.statusCode).toBe(400);
    expect(res.body).toMatch(/unknown/);

    const late = await throughProvider('ana@example.com');
    advance(10 * 60_000 + 1);
    await expectRefused(await finish(late.callback, late.state), 400, 'expired_state', /expired/);
  });

  it('reads the e-mail at userinfo when the ID token has none, and from the ID token when it has it', async () => {
    // The main provider keeps scope claims out of the ID token (as OpenID Connect has it for the
    // code flow): the sign-ins above asked userinfo.
    expect(provider.paths).toContain('/me');
    const other = await startProvider({ redirectUri: REDIRECT_URI, people, emailInIdToken: true });
    const second = await h.createOrg({ plan: 'enterprise' });
    try {
      const put = await h.request({
        method: 'PUT',
        url: '/v1/sso',
        apiKey: second.apiKey,
        payload: {
          issuer: other.issuer,
          client_id: other.clientId,
          client_secret: other.clientSecret,
          allowed_domains: ['example.com'],
        },
      });
      expect(put.statusCode, put.body).toBe(200);
      advance(1000);
      const start = await h.app.inject({ method: 'GET', url: `/dashboard/sso/${second.id}/start` });
      const state = setCookie(start, 'tally_sso') ?? '';
      const callback = await signInAtProvider({
        authorizationUrl: String(start.headers.location),
        redirectUri: REDIRECT_URI,
        email: 'ana@example.com',
        password: PASSWORD,
      });
      const res = await finish(callback, state);
      expect(res.statusCode, res.body).toBe(303);
      expect(other.paths).toContain('/token');
      expect(other.paths).not.toContain('/me');
      const ana = await findAccountByEmail(h.ctx, 'ana@example.com');
      expect((await membershipIn(h.ctx, second.id, ana?.id ?? ''))?.role).toBe('analyst');
    } finally {
      await h.request({ method: 'DELETE', url: '/v1/sso', apiKey: second.apiKey });
      await other.close();
    }
  });

  it('two callbacks of one sign-in racing: exactly one signs in', async () => {
    const { state, callback } = await throughProvider('ana@example.com');
    const answers = await Promise.all([
      finish(callback, state),
      finish(callback, state),
      finish(callback, state),
    ]);
    expect(answers.map((a) => a.statusCode).sort()).toEqual([303, 400, 400]);
  });

  it('refuses an e-mail outside the allowed domains, and creates nothing for it', async () => {
    const { state, callback } = await throughProvider('bob@other.org');
    const failure = await expectRefused(
      await finish(callback, state),
      403,
      'domain_not_allowed',
      /not in a domain/,
    );
    expect(failure?.email).toBe('bob@other.org');
    expect(await findAccountByEmail(h.ctx, 'bob@other.org')).toBeNull();
  });

  it('refuses a disabled account', async () => {
    const carol = await createAccount({ ctx: h.ctx, email: 'carol@example.com' });
    await h.storage.db
      .updateTable('accounts')
      .set({ disabled_at: Date.parse(NOW) })
      .where('id', '=', carol.id)
      .execute();
    const { state, callback } = await throughProvider('carol@example.com');
    await expectRefused(await finish(callback, state), 403, 'account_disabled', /disabled/);
    expect(await membershipIn(h.ctx, org.id, carol.id)).toBeNull();
    const sessions = await h.storage.db
      .selectFrom('account_sessions')
      .selectAll()
      .where('account_id', '=', carol.id)
      .execute();
    expect(sessions).toEqual([]);
  });

  it('refuses an address the provider says is not verified; one it says nothing about is admitted', async () => {
    const dave = await throughProvider('dave@example.com');
    await expectRefused(await finish(dave.callback, dave.state), 403, 'email_unverified', /not verified/);
    const erin = await throughProvider('erin@example.com');
    expect((await finish(erin.callback, erin.state)).statusCode).toBe(303);
  });

  it('the sign-in page routes by the e-mail domain', async () => {
    const form = await h.app.inject({
      method: 'POST',
      url: '/dashboard/sso',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        origin: 'http://localhost:80',
        host: 'localhost:80',
      },
      payload: 'email=someone%40Example.com',
    });
    expect(form.statusCode, form.body).toBe(200);
    expect(form.body).toContain(`content="0; url=/dashboard/sso/${org.id}/start"`);
    expect(form.body).toContain(`href="/dashboard/sso/${org.id}/start"`);
    const none = await h.app.inject({
      method: 'POST',
      url: '/dashboard/sso',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        origin: 'http://localhost:80',
        host: 'localhost:80',
      },
      payload: 'email=someone%40nowhere.example',
    });
    expect(none.statusCode).toBe(404);
    expect(none.body).toMatch(/No single sign-on/);
    // A domain two organisations list routes to neither.
    const rival = await h.createOrg({ plan: 'enterprise' });
    const claimed = await h.request({
      method: 'PUT',
      url: '/v1/sso',
      apiKey: rival.apiKey,
      payload: {
        issuer: 'https://idp.rival.test',
        client_id: 'x',
        client_secret: 'y',
        allowed_domains: ['example.com'],
      },
    });
    expect(claimed.statusCode).toBe(200);
    const ambiguous = await h.app.inject({
      method: 'POST',
      url: '/dashboard/sso',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        origin: 'http://localhost:80',
        host: 'localhost:80',
      },
      payload: 'email=someone%40example.com',
    });
    expect(ambiguous.statusCode).toBe(404);
    expect((await h.request({ method: 'DELETE', url: '/v1/sso', apiKey: rival.apiKey })).statusCode).toBe(
      204,
    );
  });

  it('limits the sign-ins started per address and second', async () => {
    advance(1000);
    const codes: number[] = [];
    for (let i = 0; i < 6; i++) {
      codes.push((await h.app.inject({ method: 'GET', url: `/dashboard/sso/${org.id}/start` })).statusCode);
    }
    expect(codes).toEqual([303, 303, 303, 303, 303, 429]);
  });

  it('an organisation off Enterprise, or without single sign-on, does not start', async () => {
    advance(1000);
    await h.storage.db.updateTable('organizations').set({ plan: 'pro' }).where('id', '=', org.id).execute();
    try {
      const res = await h.app.inject({ method: 'GET', url: `/dashboard/sso/${org.id}/start` });
      expect(res.statusCode).toBe(403);
      expect(res.body).toMatch(/Enterprise/);
    } finally {
      await h.storage.db
        .updateTable('organizations')
        .set({ plan: 'enterprise' })
        .where('id', '=', org.id)
        .execute();
    }
    const other = await h.app.inject({ method: 'GET', url: `/dashboard/sso/${h.org.id}/start` });
    expect(other.statusCode).toBe(403);
    expect(other.body).toMatch(/not set up/);
    await h.storage.db
      .updateTable('sso_connections')
      .set({ enabled: 0 })
      .where('org_id', '=', org.id)
      .execute();
    try {
      const disabled = await h.app.inject({ method: 'GET', url: `/dashboard/sso/${org.id}/start` });
      expect(disabled.statusCode).toBe(403);
      expect(disabled.body).toMatch(/not set up/);
    } finally {
      await h.storage.db
        .updateTable('sso_connections')
        .set({ enabled: 1 })
        .where('org_id', '=', org.id)
        .execute();
    }
  });
});
