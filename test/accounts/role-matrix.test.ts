import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Role } from '../../src/accounts/roles.js';
import { createApiKey } from '../../src/orgs/api-keys.js';
import { dashboardRoutes } from '../../src/dashboard/routes.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { csrfOf, page, post } from '../dashboard/support.js';
import { person, personSession } from './support.js';

// The role matrix of docs/people.md, walked cell by cell: every dashboard page and every
// state-changing dashboard action for each role, and every API route for each key scope. The
// tables below are the one source; the first test checks that they cover every route.

const ROLES: Role[] = ['owner', 'admin', 'analyst'];
const REFUSED = /may not do this; it needs the (admin|owner) role/;

/** Ids the pages and actions name, made fresh for each role's walk. */
interface Made {
  tag: string;
  budget: string;
  schedule: string;
  cost: string;
  mapping: string;
  webhook: string;
  key: string;
  taskType: string;
}

interface Page {
  route: string;
  url: (m: Made) => string;
}

/** GET pages: every role sees each one (an analyst without the forms that change something). */
const PAGES: Page[] = [
  { route: '/dashboard', url: () => '/dashboard' },
  { route: '/dashboard/reports', url: () => '/dashboard/reports' },
  { route: '/dashboard/reports/export', url: () => '/dashboard/reports/export?format=csv' },
  { route: '/dashboard/budgets', url: () => '/dashboard/budgets' },
  { route: '/dashboard/budgets/:id', url: (m) => `/dashboard/budgets/${m.budget}` },
  { route: '/dashboard/budgets/emails', url: () => '/dashboard/budgets/emails' },
  { route: '/dashboard/budgets/payback', url: () => '/dashboard/budgets/payback' },
  { route: '/dashboard/events', url: () => '/dashboard/events' },
  { route: '/dashboard/events/:id', url: () => '/dashboard/events/evt_none' },
  { route: '/dashboard/task-types', url: () => '/dashboard/task-types' },
  { route: '/dashboard/task-types/:key', url: () => '/dashboard/task-types/dev_bug_fix' },
  { route: '/dashboard/webhooks', url: () => '/dashboard/webhooks' },
  { route: '/dashboard/webhooks/:id', url: (m) => `/dashboard/webhooks/${m.webhook}` },
  { route: '/dashboard/webhooks/:id/delete', url: (m) => `/dashboard/webhooks/${m.webhook}/delete` },
  { route: '/dashboard/usage', url: () => '/dashboard/usage' },
  { route: '/dashboard/settings', url: () => '/dashboard/settings' },
  { route: '/dashboard/opentelemetry', url: () => '/dashboard/opentelemetry' },
  { route: '/dashboard/account', url: () => '/dashboard/account' },
];

interface Action {
  route: string;
  /** The lowest role allowed. */
  needs: Role;
  /** The page whose form is submitted (as an owner sees it); absent: posted with the CSRF token only. */
  form?: (m: Made) => string;
  action: (m: Made) => string;
  fill?: Record<string, string | string[]> | ((m: Made) => Record<string, string | string[]>);
  /** What the next page says when it worked. */
  ok: RegExp;
}

const ACTIONS: Action[] = [
  {
    route: '/dashboard/budgets',
    needs: 'admin',
    form: () => '/dashboard/budgets',
    action: () => '/dashboard/budgets',
    fill: { name: 'Matrix budget', amount: '100' },
    ok: /Matrix budget/,
  },
  {
    route: '/dashboard/budgets/:id',
    needs: 'admin',
    form: (m) => `/dashboard/budgets/${m.budget}`,
    action: (m) => `/dashboard/budgets/${m.budget}`,
    fill: { amount: '250' },
    ok: /saved|updated/i,
  },
  {
    route: '/dashboard/budgets/:id/delete',
    needs: 'admin',
    action: (m) => `/dashboard/budgets/${m.budget}/delete`,
    ok: /deleted/i,
  },
  {
    route: '/dashboard/budgets/emails/alerts',
    needs: 'admin',
    form: () => '/dashboard/budgets/emails',
    action: () => '/dashboard/budgets/emails/alerts',
    ok: /Alert e-mails saved/,
  },
  {
    route: '/dashboard/budgets/emails',
    needs: 'admin',
    form: () => '/dashboard/budgets/emails',
    action: () => '/dashboard/budgets/emails',
    fill: { recipients: 'ops@example.com' },
    ok: /is scheduled/,
  },
  {
    route: '/dashboard/budgets/emails/:id/send',
    needs: 'admin',
    action: (m) => `/dashboard/budgets/emails/${m.schedule}/send`,
    ok: /on its way|already has the report/,
  },
  {
    route: '/dashboard/budgets/emails/:id/delete',
    needs: 'admin',
    action: (m) => `/dashboard/budgets/emails/${m.schedule}/delete`,
    ok: /deleted/i,
  },
  {
    route: '/dashboard/budgets/payback/costs',
    needs: 'admin',
    form: () => '/dashboard/budgets/payback',
    action: () => '/dashboard/budgets/payback/costs',
    fill: { name: 'Matrix licence', amount: '40', start_month: '2026-11' },
    ok: /added/,
  },
  {
    route: '/dashboard/budgets/payback/costs/:id/delete',
    needs: 'admin',
    action: (m) => `/dashboard/budgets/payback/costs/${m.cost}/delete`,
    ok: /deleted/i,
  },
  {
    route: '/dashboard/budgets/payback/fte',
    needs: 'admin',
    form: () => '/dashboard/budgets/payback',
    action: () => '/dashboard/budgets/payback/fte',
    fill: { fte_hours_per_month: '150' },
    ok: /FTE hours saved/,
  },
  {
    route: '/dashboard/opentelemetry/mappings',
    needs: 'admin',
    form: () => '/dashboard/opentelemetry',
    action: () => '/dashboard/opentelemetry/mappings',
    fill: (m) => ({ value: `matrix-bot-${m.tag}`, task_type: 'dev_bug_fix' }),
    ok: /Rule added/,
  },
  {
    route: '/dashboard/opentelemetry/mappings/:id/delete',
    needs: 'admin',
    action: (m) => `/dashboard/opentelemetry/mappings/${m.mapping}/delete`,
    ok: /deleted|removed/i,
  },
  {
    route: '/dashboard/opentelemetry/unresolved/:id/dismiss',
    needs: 'admin',
    action: () => '/dashboard/opentelemetry/unresolved/otlprun_none/dismiss',
    ok: /not found|no longer|dismissed/i,
  },
  {
    route: '/dashboard/opentelemetry/unresolved/retry',
    needs: 'admin',
    action: () => '/dashboard/opentelemetry/unresolved/retry',
    ok: /run|retr/i,
  },
  {
    route: '/dashboard/settings',
    needs: 'admin',
    form: () => '/dashboard/settings',
    action: () => '/dashboard/settings',
    fill: { name: 'Acme' },
    ok: /Settings saved|saved/i,
  },
  {
    route: '/dashboard/settings/keys',
    needs: 'admin',
    form: () => '/dashboard/settings',
    action: () => '/dashboard/settings/keys',
    fill: { name: 'matrix key' },
    ok: /tally_live_/,
  },
  {
    route: '/dashboard/settings/keys/:id/revoke',
    needs: 'admin',
    action: (m) => `/dashboard/settings/keys/${m.key}/revoke`,
    ok: /revoked/i,
  },
  {
    route: '/dashboard/task-types',
    needs: 'admin',
    form: () => '/dashboard/task-types',
    action: () => '/dashboard/task-types',
    fill: (m) => ({ key: `matrix_${m.tag}`, display_name: 'Matrix type', default_baseline_minutes: '20' }),
    ok: /Created the custom task type/,
  },
  {
    route: '/dashboard/task-types/:key/override',
    needs: 'admin',
    form: () => '/dashboard/task-types/dev_bug_fix',
    action: () => '/dashboard/task-types/dev_bug_fix/override',
    fill: { baseline_minutes_override: '33' },
    ok: /Override saved/,
  },
  {
    route: '/dashboard/task-types/:key/override/remove',
    needs: 'admin',
    action: () => '/dashboard/task-types/dev_bug_fix/override/remove',
    ok: /removed|default/i,
  },
  {
    route: '/dashboard/task-types/:key/archive',
    needs: 'admin',
    action: (m) => `/dashboard/task-types/${m.taskType}/archive`,
    ok: /archived/i,
  },
  {
    route: '/dashboard/webhooks',
    needs: 'admin',
    form: () => '/dashboard/webhooks',
    action: () => '/dashboard/webhooks',
    fill: (m) => ({ url: `https://hooks.example.com/matrix-${m.tag}`, event_types: ['event.created'] }),
    ok: /hooks\.example\.com\/matrix/,
  },
  {
    route: '/dashboard/webhooks/:id',
    needs: 'admin',
    form: (m) => `/dashboard/webhooks/${m.webhook}`,
    action: (m) => `/dashboard/webhooks/${m.webhook}`,
    fill: { description: 'Matrix description' },
    ok: /saved|updated|Matrix description/i,
  },
  {
    route: '/dashboard/webhooks/:id/test',
    needs: 'admin',
    action: (m) => `/dashboard/webhooks/${m.webhook}/test`,
    ok: /ping/i,
  },
  {
    route: '/dashboard/webhooks/:id/reactivate',
    needs: 'admin',
    action: (m) => `/dashboard/webhooks/${m.webhook}/reactivate`,
    ok: /reactivated/i,
  },
  {
    route: '/dashboard/webhooks/:id/delete',
    needs: 'admin',
    form: (m) => `/dashboard/webhooks/${m.webhook}/delete`,
    action: (m) => `/dashboard/webhooks/${m.webhook}/delete`,
    ok: /deleted/i,
  },
  {
    route: '/dashboard/account/switch',
    needs: 'analyst',
    action: () => '/dashboard/account/switch',
    fill: { org_id: '' },
    ok: /You are now looking at/,
  },
  {
    route: '/dashboard/account/password',
    needs: 'analyst',
    form: () => '/dashboard/account',
    action: () => '/dashboard/account/password',
    // The same password again: the walk goes on signing in with it.
    fill: { current_password: 'correct horse battery staple', new_password: 'correct horse battery staple' },
    ok: /password is changed/,
  },
];

/**
 * Routes outside the matrix: signing in and out, ending one's own session, static assets, and
 * the pages of single-use links (password reset, the first owner), open without a session.
 */
const UNGATED = new Set([
  'GET /dashboard/password-reset',
  'POST /dashboard/password-reset',
  'GET /dashboard/password-reset/:token',
  'POST /dashboard/password-reset/:token',
  'GET /dashboard/first-owner/:token',
  'POST /dashboard/first-owner/:token',
  'GET /dashboard/login',
  'POST /dashboard/login',
  'POST /dashboard/logout',
  'POST /dashboard/account/sessions/end',
  'GET /dashboard/assets/:name',
  'HEAD /dashboard/assets/:name',
  'HEAD /dashboard/login',
]);

/** The fields of the form posting to `action`, as a browser would send them (submit buttons aside). */
function formFields(body: string, action: string): Map<string, string[]> | null {
  const forms = body.match(/<form\b[^>]*>[\s\S]*?<\/form>/g) ?? [];
  const form = forms.find((f) =>
    new RegExp(`action="${action.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"`).test(f),
  );
  if (!form) return null;
  const out = new Map<string, string[]>();
  const add = (name: string, value: string) => out.set(name, [...(out.get(name) ?? []), value]);
  for (const input of form.match(/<input\b[^>]*>/g) ?? []) {
    const name = /\bname="([^"]*)"/.exec(input)?.[1];
    if (!name) continue;
    const type = /\btype="([^"]*)"/.exec(input)?.[1] ?? 'text';
    if ((type === 'checkbox' || type === 'radio') && !/\bchecked\b/.test(input)) continue;
    add(
      name,
      (/\bvalue="([^"]*)"/.exec(input)?.[1] ?? '').replaceAll('&amp;', '&').replaceAll('&quot;', '"'),
    );
  }
  for (const select of form.match(/<select\b[^>]*>[\s\S]*?<\/select>/g) ?? []) {
    const name = /\bname="([^"]*)"/.exec(select)?.[1];
    if (!name) continue;
    const options = [...select.matchAll(/<option value="([^"]*)"([^>]*)>/g)];
    const chosen = options.find((o) => /selected/.test(o[2] ?? '')) ?? options[0];
    add(name, chosen?.[1] ?? '');
  }
  for (const area of form.match(/<textarea\b[^>]*>[\s\S]*?<\/textarea>/g) ?? []) {
    const name = /\bname="([^"]*)"/.exec(area)?.[1];
    if (name) add(name, /<textarea\b[^>]*>([\s\S]*?)<\/textarea>/.exec(area)?.[1]?.trim() ?? '');
  }
  return out;
}

function encode(fields: Map<string, string[]>): string {
  const params = new URLSearchParams();
  for (const [name, values] of fields) for (const value of values) params.append(name, value);
  return params.toString();
}

describe.each(ENGINES)('the role matrix (%s)', (engine) => {
  let h: Harness;
  let other: { id: string };
  const cookies = new Map<Role, string>();

  beforeAll(async () => {
    h = await createHarness(engine, { plan: 'enterprise' });
    other = await h.createOrg({ plan: 'enterprise' });
    const res = await h.request({
      method: 'PATCH',
      url: '/v1/settings',
      payload: { admin_emails: ['ops@example.com'] },
    });
    expect(res.statusCode, res.body).toBe(200);
    for (const role of ROLES) {
      const p = await person(h, `${role}@example.com`, role);
      const { addMembership } = await import('../../src/accounts/store.js');
      await addMembership({ ctx: h.ctx, orgId: other.id, accountId: p.accountId, role: 'analyst' });
    }
  });
  afterAll(async () => h.close());

  async function make(tag: string): Promise<Made> {
    const json = async (method: 'POST', url: string, payload: object) => {
      const res = await h.request({ method, url, payload });
      expect(res.statusCode, `${url}: ${res.body}`).toBe(201);
      return res.json<{ id?: string; key?: string }>();
    };
    const budget = await json('POST', '/v1/budgets', { name: `B ${tag}`, scope: 'org', amount: 100 });
    const schedule = await json('POST', '/v1/report-schedules', {
      frequency: 'weekly',
      recipients: ['ops@example.com'],
    });
    const cost = await json('POST', '/v1/fixed-costs', {
      name: `C ${tag}`,
      kind: 'monthly',
      amount: 10,
      start_month: '2026-11',
    });
    const mapping = await json('POST', '/v1/otlp/mappings', {
      kind: 'task_type',
      field: 'agent_name',
      value: `bot-${tag}`,
      task_type: 'dev_bug_fix',
    });
    const webhook = await json('POST', '/v1/webhooks', {
      url: `https://hooks.example.com/${tag}`,
      event_types: ['event.created'],
    });
    await h.ctx.db
      .updateTable('webhooks')
      .set({ status: 'deactivated' })
      .where('id', '=', webhook.id ?? '')
      .execute();
    const taskType = await json('POST', '/v1/task-types', {
      key: `custom_${tag}`,
      display_name: `Custom ${tag}`,
      category: 'support',
      default_baseline_minutes: 10,
    });
    const key = await createApiKey({ ctx: h.ctx, orgId: h.org.id, name: `k ${tag}`, scope: 'ingest' });
    return {
      tag,
      budget: budget.id ?? '',
      schedule: schedule.id ?? '',
      cost: cost.id ?? '',
      mapping: mapping.id ?? '',
      webhook: webhook.id ?? '',
      key: key.key.id,
      taskType: taskType.key ?? '',
    };
  }

  it('names every dashboard route and every API route in its tables', async () => {
    const named = new Set([
      ...PAGES.map((p) => `GET ${p.route}`),
      ...ACTIONS.map((a) => `POST ${a.route}`),
      ...UNGATED,
    ]);
    const missing = dashboardRoutes().filter((r) => !named.has(r) && !r.startsWith('HEAD '));
    expect(missing).toEqual([]);
  });

  for (const role of ROLES) {
    it(`walks every page as ${role}: all shown, no change control for an analyst`, async () => {
      const cookie = await personSession(h, `${role}@example.com`);
      cookies.set(role, cookie);
      const made = await make(`p${role}`);
      for (const p of PAGES) {
        const res = await page(h, cookie, p.url(made));
        const expected = p.route === '/dashboard/events/:id' ? 404 : 200;
        expect(res.statusCode, `${role} GET ${p.route}: ${res.body.slice(0, 300)}`).toBe(expected);
        const body = res.body.replace(/<header class="top">[\s\S]*?<\/header>/, '');
        const changeForms = [...body.matchAll(/<form\b[^>]*method="post"[^>]*action="([^"]*)"/g)]
          .map((m) => m[1] ?? '')
          .filter((action) => !/^\/dashboard\/(logout|account)/.test(action));
        if (role === 'analyst') expect(changeForms, `${role} ${p.route}`).toEqual([]);
      }
      // The pages with forms show them to those who may use them.
      const settings = await page(h, cookie, '/dashboard/settings');
      expect(settings.body.includes('action="/dashboard/settings/keys"')).toBe(role !== 'analyst');
    });

    it(`walks every action as ${role}: done where the role allows, refused by the verb where not`, async () => {
      const cookie = cookies.get(role) ?? (await personSession(h, `${role}@example.com`));
      const ownerCookie = await personSession(h, 'owner@example.com');
      const made = await make(`a${role}`);
      const problems: string[] = [];
      for (const a of ACTIONS) {
        const allowed = ROLES.indexOf(role) <= ROLES.indexOf(a.needs);
        let fields = new Map<string, string[]>();
        if (a.form) {
          const formPage = await page(h, ownerCookie, a.form(made));
          const found = formFields(formPage.body, a.action(made));
          expect(found, `the form of ${a.route} on ${a.form(made)}`).not.toBeNull();
          fields = found ?? fields;
        }
        for (const [name, value] of Object.entries(
          typeof a.fill === 'function' ? a.fill(made) : (a.fill ?? {}),
        ))
          fields.set(name, [value].flat());
        if (a.route === '/dashboard/account/switch') fields.set('org_id', [other.id]);
        const csrf = csrfOf((await page(h, cookie, '/dashboard/account')).body);
        fields.set('csrf_token', [csrf]);
        const res = await h.app.inject({
          method: 'POST',
          url: a.action(made),
          headers: {
            cookie,
            origin: 'http://localhost:80',
            'content-type': 'application/x-www-form-urlencoded',
          },
          payload: encode(fields),
        });
        expect(res.statusCode, `${role} ${a.route}: ${res.body.slice(0, 300)}`).toBeLessThan(500);
        const shown =
          res.statusCode === 303 ? (await page(h, cookie, String(res.headers.location))).body : res.body;
        // The notice the next page shows, or the page itself where it answers with one (a new key).
        const notice =
          /<p class="(?:notice|error)"[^>]*>([\s\S]*?)<\/p>/.exec(shown)?.[1] ??
          /<main[\s\S]*<\/main>/.exec(shown)?.[0] ??
          '';
        if (allowed && (REFUSED.test(shown) || !a.ok.test(notice))) {
          problems.push(`${role} ${a.route} did not work: ${notice.slice(0, 200)}`);
        }
        if (!allowed && !REFUSED.test(notice))
          problems.push(`${role} ${a.route} not refused: ${notice.slice(0, 200)}`);
        if (a.route === '/dashboard/account/switch') {
          // Back to the first organisation for the next cells.
          const back = csrfOf((await page(h, cookie, '/dashboard/account')).body);
          await post(h, cookie, '/dashboard/account/switch', { csrf_token: back, org_id: h.org.id });
        }
      }
      expect(problems).toEqual([]);
    });
  }

  it('walks every API route with an admin key (as admin) and an ingest key (DESIGN §3)', async () => {
    const doc = (await h.request({ method: 'GET', url: '/openapi.json', apiKey: null })).json<{
      paths: Record<string, Record<string, unknown>>;
    }>();
    const ingest = await createApiKey({ ctx: h.ctx, orgId: h.org.id, name: 'ingest', scope: 'ingest' });
    const ingestRoutes = new Set([
      'POST /v1/track',
      'POST /v1/track/batch',
      'GET /v1/task-types',
      'POST /v1/traces',
    ]);
    let walked = 0;
    for (const [path, methods] of Object.entries(doc.paths)) {
      if (!path.startsWith('/v1/')) continue;
      for (const method of Object.keys(methods)) {
        const verb = method.toUpperCase() as 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT';
        const url = path.replace(/\{[^}]+\}/g, 'none');
        const route = `${verb} ${path.replace(/\{([^}]+)\}/g, ':$1')}`;
        for (const [scope, apiKey] of [
          ['admin', h.org.apiKey],
          ['ingest', ingest.api_key],
        ] as const) {
          const res = await h.request({
            method: verb,
            url,
            apiKey,
            ...(verb === 'GET' || verb === 'DELETE' ? {} : { payload: {} }),
          });
          const code =
            res.statusCode >= 400 ? res.json<{ error?: { code?: string } }>().error?.code : undefined;
          if (scope === 'ingest' && !ingestRoutes.has(route)) {
            expect(code, `${scope} ${route}`).toBe('insufficient_scope');
          } else {
            expect(
              ['insufficient_scope', 'insufficient_role', 'missing_authorization'],
              `${scope} ${route}`,
            ).not.toContain(code);
          }
          expect(res.statusCode, `${scope} ${route}`).toBeLessThan(500);
          walked++;
        }
      }
    }
    expect(walked).toBeGreaterThan(40);
  });
});
