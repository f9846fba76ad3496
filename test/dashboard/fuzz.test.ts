import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { csrfOf, ORIGIN, page, post, session } from './support.js';

/**
 * Issue 12 §2 for the dashboard's pages and forms (hidden from the OpenAPI document, so
 * test/http/fuzz.test.ts does not reach them): hostile query strings, path ids and form fields
 * from a signed-in admin. Whatever comes in: never a 5xx, and the service healthy afterwards.
 */

const RUNS_PER_ROUTE = Number(process.env.TALLY_FUZZ_RUNS ?? 25);

const hostile = fc.oneof(
  fc.constantFrom(
    '\u0000',
    'a\u0000b',
    '\ud800',
    'x\udc00y',
    '__proto__',
    'constructor',
    '<img src=x onerror=alert(1)>',
    '%00',
    '1e400',
    '-1',
    '99999999999999999999',
    'x'.repeat(5000),
    '',
  ),
  fc.string({ maxLength: 30 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
);

const PAGES = [
  '/dashboard',
  '/dashboard/reports',
  '/dashboard/reports/export',
  '/dashboard/events',
  '/dashboard/events/{id}',
  '/dashboard/task-types',
  '/dashboard/task-types/{id}',
  '/dashboard/webhooks',
  '/dashboard/webhooks/{id}',
  '/dashboard/webhooks/{id}/delete',
  '/dashboard/usage',
  '/dashboard/settings',
  '/dashboard/budgets',
  '/dashboard/budgets/{id}',
  '/dashboard/budgets/payback',
  '/dashboard/budgets/emails',
];
const QUERY_KEYS = [
  'period',
  'group_by',
  'sort',
  'top',
  'agent_id',
  'task_type',
  'client_id',
  'outcome',
  'metadata',
  'cursor',
];

const FORMS: Array<[string, string[]]> = [
  [
    '/dashboard/settings',
    [
      'name',
      'default_hourly_rate',
      'fallback_baseline_minutes',
      'admin_emails',
      'credit_success',
      'usd_exchange_rate',
      'currency',
    ],
  ],
  ['/dashboard/settings/keys', ['name', 'scope']],
  ['/dashboard/settings/keys/{id}/revoke', []],
  ['/dashboard/task-types', ['key', 'display_name', 'category', 'default_baseline_minutes', 'hourly_rate']],
  ['/dashboard/task-types/{id}/override', ['baseline_minutes_override', 'reason']],
  ['/dashboard/task-types/{id}/override/remove', []],
  ['/dashboard/task-types/{id}/archive', []],
  ['/dashboard/webhooks', ['url', 'event_types', 'description']],
  ['/dashboard/webhooks/{id}', ['url', 'event_types', 'description']],
  ['/dashboard/webhooks/{id}/test', []],
  ['/dashboard/webhooks/{id}/reactivate', []],
  ['/dashboard/webhooks/{id}/delete', []],
  ['/dashboard/budgets', ['name', 'scope', 'scope_value', 'amount', 'thresholds']],
  ['/dashboard/budgets/{id}', ['name', 'scope', 'scope_value', 'amount', 'thresholds']],
  ['/dashboard/budgets/{id}/delete', []],
  ['/dashboard/budgets/payback/costs', ['name', 'kind', 'amount', 'start_month', 'end_month', 'date']],
  ['/dashboard/budgets/payback/costs/{id}/delete', []],
  ['/dashboard/budgets/payback/fte', ['fte_hours_per_month']],
  ['/dashboard/budgets/emails', ['frequency', 'recipients']],
  ['/dashboard/budgets/emails/alerts', ['alert_emails']],
  ['/dashboard/budgets/emails/{id}/send', []],
  ['/dashboard/budgets/emails/{id}/delete', []],
];

function encode(text: string): string {
  // encodeURIComponent throws on lone surrogates; send their UTF-8-less bytes as %-escapes.
  try {
    return encodeURIComponent(text);
  } catch {
    return text.replace(/[\s\S]/g, (c) => `%${(c.charCodeAt(0) & 0xff).toString(16).padStart(2, '0')}`);
  }
}

describe.each(ENGINES)('fuzz: hostile input to every dashboard page and form (%s)', (engine) => {
  let h: Harness;
  let cookie = '';
  let csrf = '';
  beforeAll(async () => {
    h = await createHarness(engine, { plan: 'pro' });
    cookie = await session(h);
    csrf = csrfOf((await page(h, cookie, '/dashboard/settings')).body);
  }, 60_000);
  afterAll(async () => h.close());

  it('never answers 5xx to a page or a form, and stays healthy', async () => {
    for (const path of PAGES) {
      await fc.assert(
        fc.asyncProperty(hostile, fc.constantFrom(...QUERY_KEYS), hostile, async (id, key, value) => {
          h.clock.advance(25);
          const url = `${path.replace('{id}', encode(id))}?${encode(key)}=${encode(value)}`;
          const res = await page(h, cookie, url);
          expect(res.statusCode, `GET ${url} → ${res.statusCode} ${res.body.slice(0, 200)}`).toBeLessThan(
            500,
          );
        }),
        { numRuns: RUNS_PER_ROUTE },
      );
    }
    for (const [path, fields] of FORMS) {
      await fc.assert(
        fc.asyncProperty(hostile, fc.array(hostile, { minLength: 7, maxLength: 7 }), async (id, values) => {
          h.clock.advance(25);
          const url = path.replace('{id}', encode(id));
          const form: Record<string, string> = { csrf_token: csrf };
          fields.forEach((name, i) => (form[name] = values[i] ?? ''));
          const res = await post(h, cookie, url, form, { origin: ORIGIN });
          expect(res.statusCode, `POST ${url} ${JSON.stringify(form)} → ${res.statusCode}`).toBeLessThan(500);
        }),
        { numRuns: RUNS_PER_ROUTE },
      );
    }
    expect((await h.request({ method: 'GET', url: '/readyz', apiKey: null })).statusCode).toBe(200);
    expect((await page(h, cookie, '/dashboard')).statusCode).toBe(200);
  }, 600_000);
});
