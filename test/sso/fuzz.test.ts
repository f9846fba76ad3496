import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAccountSession } from '../../src/accounts/sessions.js';
import { addMembership, createAccount } from '../../src/accounts/store.js';
import { SESSION_COOKIE } from '../../src/dashboard/security.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness, type TestOrg } from '../support/harness.js';
import { csrfOf, ORIGIN, page, post } from '../dashboard/support.js';

// Hostile input to the single sign-on pages: the open ones (entry, start, callback) and the
// owner's form. Whatever comes in: never a 5xx, and the service healthy afterwards.
const RUNS = Number(process.env.TALLY_FUZZ_RUNS ?? 25);

const hostile = fc.oneof(
  fc.constantFrom(
    '\u0000',
    'a\u0000b',
    '\ud800',
    '__proto__',
    '<img src=x onerror=alert(1)>',
    '%00',
    'org_01R699BCM0S4A31PBXXMVQV8XA',
    'https://login.example.com',
    'http://127.0.0.1:9',
    'example.com',
    'x'.repeat(5000),
    '',
  ),
  fc.string({ maxLength: 30 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
);

function encode(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return text.replace(/[\s\S]/g, (c) => `%${(c.charCodeAt(0) & 0xff).toString(16).padStart(2, '0')}`);
  }
}

describe.each(ENGINES)('fuzz: hostile input to the single sign-on pages (%s)', (engine) => {
  let h: Harness;
  let org: TestOrg;
  let cookie = '';
  let csrf = '';
  beforeAll(async () => {
    h = await createHarness(engine);
    org = await h.createOrg({ plan: 'enterprise' });
    const owner = await createAccount({ ctx: h.ctx, email: 'owner@example.com' });
    await addMembership({ ctx: h.ctx, orgId: org.id, accountId: owner.id, role: 'owner' });
    const opened = await openAccountSession({
      ctx: h.ctx,
      accountId: owner.id,
      orgId: org.id,
      method: 'password',
    });
    cookie = `${SESSION_COOKIE}=${opened.token}`;
    csrf = csrfOf((await page(h, cookie, '/dashboard/settings/sso')).body);
  }, 60_000);
  afterAll(async () => h.close());

  it('never answers 5xx, and stays healthy', async () => {
    await fc.assert(
      fc.asyncProperty(hostile, hostile, hostile, hostile, async (id, state, code, bound) => {
        h.clock.advance(1000);
        const start = await h.app.inject({ method: 'GET', url: `/dashboard/sso/${encode(id)}/start` });
        expect(start.statusCode, `start ${id}`).toBeLessThan(500);
        const url = `/dashboard/sso/callback?state=${encode(state)}&code=${encode(code)}&iss=${encode(id)}`;
        const callback = await h.app.inject({
          method: 'GET',
          url,
          headers: { cookie: `tally_sso=${encode(bound)}` },
        });
        expect(callback.statusCode, `${url} → ${callback.body.slice(0, 200)}`).toBeLessThan(500);
        const entry = await post(h, '', '/dashboard/sso', { email: `${id}@${state}` }, { origin: ORIGIN });
        expect(entry.statusCode).toBeLessThan(500);
      }),
      { numRuns: RUNS },
    );
    const fields = [
      'issuer',
      'client_id',
      'client_secret',
      'allowed_domains',
      'default_role',
      'enabled',
      'passwords_allowed',
    ];
    await fc.assert(
      fc.asyncProperty(fc.array(hostile, { minLength: 7, maxLength: 7 }), async (values) => {
        const form: Record<string, string> = { csrf_token: csrf };
        fields.forEach((name, i) => (form[name] = values[i] ?? ''));
        const res = await post(h, cookie, '/dashboard/settings/sso', form, { origin: ORIGIN });
        expect(res.statusCode, `${JSON.stringify(form).slice(0, 300)} → ${res.statusCode}`).toBeLessThan(500);
        const removed = await post(
          h,
          cookie,
          '/dashboard/settings/sso/remove',
          { csrf_token: csrf },
          { origin: ORIGIN },
        );
        expect(removed.statusCode).toBeLessThan(500);
      }),
      { numRuns: RUNS },
    );
    expect((await h.request({ method: 'GET', url: '/readyz', apiKey: null })).statusCode).toBe(200);
    expect((await page(h, cookie, '/dashboard/settings/sso')).statusCode).toBe(200);
  }, 600_000);
});
