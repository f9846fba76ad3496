import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, revokeApiKey } from '../../src/orgs/api-keys.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { setSessionCookie } from '../../src/dashboard/security.js';
import { cookieOf, csrfOf, ORIGIN, page, post, session, signIn } from './support.js';

const MINUTE = 60_000;
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

describe.each(ENGINES)('dashboard sessions (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine);
  });
  afterAll(async () => h.close());

  it('redirects / to /dashboard and /dashboard to the sign-in page without a session', async () => {
    const root = await h.app.inject({ url: '/' });
    expect(root.statusCode).toBe(302);
    expect(root.headers.location).toBe('/dashboard');
    const dash = await h.app.inject({ url: '/dashboard' });
    expect(dash.statusCode).toBe(303);
    expect(dash.headers.location).toBe('/dashboard/login');
    const login = await h.app.inject({ url: '/dashboard/login' });
    expect(login.statusCode).toBe(200);
    expect(login.body).toContain('<label for="api_key">API key</label>');
    expect(login.body).toContain('Sign in</button>');
  });

  it('opens a session for an admin key with an HttpOnly, SameSite=Strict cookie on /dashboard', async () => {
    const res = await signIn(h);
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/dashboard');
    const cookie = String(res.headers['set-cookie']);
    expect(cookie).toMatch(/^tally_session=[A-Za-z0-9_-]{43}; /);
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Strict');
    expect(cookie).toContain('Path=/dashboard');
    expect(cookie).not.toContain('Secure'); // plain http here
    expect(cookie).not.toContain(h.org.apiKey);
    const overview = await page(h, cookieOf(res), '/dashboard');
    expect(overview.statusCode).toBe(200);
    expect(overview.body).toContain('<title>Overview · Tally</title>');
  });

  it('keeps only a hash of the session token in the database', async () => {
    const cookie = await session(h);
    const token = cookie.split('=')[1] ?? '';
    const rows = await h.storage.db.selectFrom('dashboard_sessions').selectAll().execute();
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(row.id).not.toBe(token);
    expect(JSON.stringify(rows)).not.toContain(token);
  });

  it('refuses wrong, revoked and ingest keys with a message and no session', async () => {
    const wrong = await signIn(h, `tally_live_ABCDEFGH_${'x'.repeat(48)}`);
    expect(wrong.statusCode).toBe(401);
    expect(wrong.body).toContain('That API key is not valid');
    expect(wrong.headers['set-cookie']).toBeUndefined();

    const revoked = await createApiKey({ ctx: h.ctx, orgId: h.org.id });
    await revokeApiKey({ ctx: h.ctx, orgId: h.org.id, keyId: revoked.key.id });
    const res = await signIn(h, revoked.api_key);
    expect(res.statusCode).toBe(401);
    expect(res.body).toContain('has been revoked');
    expect(res.headers['set-cookie']).toBeUndefined();

    const ingest = await createApiKey({ ctx: h.ctx, orgId: h.org.id, scope: 'ingest' });
    const refused = await signIn(h, ingest.api_key);
    expect(refused.statusCode).toBe(401);
    expect(refused.body).toContain('ingest key');
    expect(refused.headers['set-cookie']).toBeUndefined();
  });

  it('ends a session after 60 idle minutes, measured on the clock', async () => {
    const cookie = await session(h);
    h.clock.advance(59 * MINUTE);
    expect((await page(h, cookie, '/dashboard/usage')).statusCode).toBe(200);
    h.clock.advance(59 * MINUTE);
    expect((await page(h, cookie, '/dashboard/usage')).statusCode).toBe(200);
    h.clock.advance(60 * MINUTE);
    const ended = await page(h, cookie, '/dashboard/usage');
    expect(ended.statusCode).toBe(303);
    expect(ended.headers.location).toBe('/dashboard/login?ended=expired');
    // Gone for good: the clock going back does not revive it.
    h.clock.advance(-60 * MINUTE);
    expect((await page(h, cookie, '/dashboard/usage')).statusCode).toBe(303);
  });

  it('ends a session 12 hours after sign-in however active it is', async () => {
    const cookie = await session(h);
    for (let i = 0; i < 23; i++) {
      h.clock.advance(30 * MINUTE);
      expect((await page(h, cookie, '/dashboard/usage')).statusCode).toBe(200);
    }
    h.clock.advance(30 * MINUTE);
    const ended = await page(h, cookie, '/dashboard/usage');
    expect(ended.headers.location).toBe('/dashboard/login?ended=expired');
  });

  it('ends the sessions of a revoked key at their next request', async () => {
    const key = await createApiKey({ ctx: h.ctx, orgId: h.org.id });
    const cookie = await session(h, key.api_key);
    expect((await page(h, cookie, '/dashboard/usage')).statusCode).toBe(200);
    await revokeApiKey({ ctx: h.ctx, orgId: h.org.id, keyId: key.key.id });
    const ended = await page(h, cookie, '/dashboard/usage');
    expect(ended.headers.location).toBe('/dashboard/login?ended=revoked');
  });

  it('signs out by POST, ending the session and clearing the cookie', async () => {
    const cookie = await session(h);
    const overview = await page(h, cookie, '/dashboard');
    const out = await post(h, cookie, '/dashboard/logout', { csrf_token: csrfOf(overview.body) });
    expect(out.statusCode).toBe(303);
    expect(out.headers.location).toBe('/dashboard/login?ended=signed_out');
    expect(String(out.headers['set-cookie'])).toContain('Max-Age=0');
    expect((await page(h, cookie, '/dashboard')).statusCode).toBe(303);
  });

  it('sets a Secure cookie when the request came over https', () => {
    const headers: Record<string, string> = {};
    const reply = { header: (name: string, value: string) => (headers[name] = value) };
    setSessionCookie({ protocol: 'https' } as never, reply as never, 'token');
    expect(headers['Set-Cookie']).toBe(
      'tally_session=token; Path=/dashboard; HttpOnly; SameSite=Strict; Secure',
    );
  });

  it('rate-limits sign-in attempts per client address', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      const res = await h.app.inject({
        method: 'POST',
        url: '/dashboard/login',
        remoteAddress: '10.9.8.7',
        headers: { origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'api_key=wrong',
      });
      statuses.push(res.statusCode);
    }
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
    expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
    // Another address is not affected.
    expect((await signIn(h)).statusCode).toBe(303);
  });

  it('sends the CSP and the other security headers on every dashboard response', async () => {
    const cookie = await session(h);
    for (const url of [
      '/dashboard/login',
      '/dashboard',
      '/dashboard/assets/dashboard.css',
      '/dashboard/nope',
    ]) {
      const res = await page(h, cookie, url);
      expect(res.headers['content-security-policy'], url).toBe(CSP);
      expect(res.headers['x-content-type-options'], url).toBe('nosniff');
      expect(res.headers['referrer-policy'], url).toBe('same-origin');
    }
    const html = (await page(h, cookie, '/dashboard')).body;
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/\sstyle=/);
    expect(html).not.toContain('<style');
  });

  it('serves its assets and a favicon', async () => {
    for (const [url, type] of [
      ['/dashboard/assets/dashboard.css', 'text/css'],
      ['/dashboard/assets/dashboard.js', 'text/javascript'],
      ['/dashboard/assets/favicon.svg', 'image/svg+xml'],
      ['/favicon.ico', 'image/svg+xml'],
    ]) {
      const res = await h.app.inject({ url });
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['content-type'], url).toContain(type);
    }
  });
});

describe('dashboard and the API document', () => {
  it('keeps the dashboard pages out of /openapi.json', async () => {
    const h = await createHarness('sqlite');
    try {
      const doc = (await h.app.inject({ url: '/openapi.json' })).json<{ paths: Record<string, unknown> }>();
      expect(Object.keys(doc.paths).filter((p) => p.startsWith('/dashboard') || p === '/')).toEqual([]);
      expect(Object.keys(doc.paths)).toContain('/v1/track');
    } finally {
      await h.close();
    }
  });
});
