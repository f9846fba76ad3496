import { readFileSync } from 'node:fs';
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
const PERIODS_PAGES = 'Periods, a month (its statement, CSV)';
const MEMBERS_PAGES = 'Members, a member’s removal confirmation';
const MEMBERS_ADMIN = 'Members: invite, resend or revoke an admin or analyst; change their role; remove them';
const MEMBERS_OWNER = 'Members: invite an owner, make someone owner, remove an owner';
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
  /** A pending invitation of an analyst. */
  invitation: string;
  /** Two analysts and a second owner (account ids), to change and remove. */
  member: string;
  member2: string;
  ownerMember: string;
  /** An ended month still open, and one closed. */
  openMonth: string;
  closedMonth: string;
  /** An event that needs review. */
  event: string;
}

interface Page {
  route: string;
  url: (m: Made) => string;
  /** The row of docs/people.md's pages table this page is in. */
  doc: string;
  /** The answer a role gets where it is not 200 (a redirect back with a notice). */
  status?: Partial<Record<Role, number>>;
  /** What the page must not show a role (besides the change controls the role may not use). */
  hides?: Partial<Record<Role, RegExp>>;
  /**
   * The headings (or a folded part's summary) of the page's change panels, as they begin: shown to
   * an admin and an owner, never to an analyst, who sees neither the controls nor their instructions.
   */
  changes?: string[];
}

/**
 * GET pages: every role sees each one, without the controls its role may not use (an analyst
 * none). The `doc` labels are the rows of docs/people.md's table; a test compares the two.
 */
const PAGES: Page[] = [
  {
    route: '/dashboard',
    url: () => '/dashboard',
    doc: 'Overview, Reports (and CSV export), Events, an event',
  },
  {
    route: '/dashboard/reports',
    url: () => '/dashboard/reports',
    doc: 'Overview, Reports (and CSV export), Events, an event',
  },
  {
    route: '/dashboard/reports/export',
    url: () => '/dashboard/reports/export?format=csv',
    doc: 'Overview, Reports (and CSV export), Events, an event',
  },
  {
    route: '/dashboard/budgets',
    url: () => '/dashboard/budgets',
    doc: 'Budgets, a budget, Payback, Report e-mails',
    changes: ['Add a budget'],
  },
  {
    route: '/dashboard/budgets/:id',
    url: (m) => `/dashboard/budgets/${m.budget}`,
    doc: 'Budgets, a budget, Payback, Report e-mails',
    changes: ['Edit B ', 'Delete'],
  },
  {
    route: '/dashboard/budgets/emails',
    url: () => '/dashboard/budgets/emails',
    doc: 'Budgets, a budget, Payback, Report e-mails',
    changes: ['Alert e-mails', 'Schedule a report e-mail'],
  },
  {
    route: '/dashboard/budgets/payback',
    url: () => '/dashboard/budgets/payback',
    doc: 'Budgets, a budget, Payback, Report e-mails',
    changes: ['Add a fixed cost'],
  },
  {
    route: '/dashboard/events',
    url: () => '/dashboard/events',
    doc: 'Overview, Reports (and CSV export), Events, an event',
  },
  {
    route: '/dashboard/events/:id',
    url: () => '/dashboard/events/evt_none',
    doc: 'Overview, Reports (and CSV export), Events, an event',
    status: { owner: 404, admin: 404, analyst: 404 },
  },
  {
    route: '/dashboard/events/:id',
    url: (m) => `/dashboard/events/${m.event}`,
    doc: 'Overview, Reports (and CSV export), Events, an event',
    changes: ['Record a review'],
  },
  {
    route: '/dashboard/events/review-queue',
    url: () => '/dashboard/events/review-queue',
    doc: 'Overview, Reports (and CSV export), Events, an event',
  },
  {
    route: '/dashboard/restatements/preview',
    url: (m) => `/dashboard/restatements/preview?${pastChange(m)}`,
    doc: 'A change from a past date: its preview (not offered to analysts; they get a notice)',
    // The preview is the first step of a change: an analyst is sent back with a notice.
    status: { analyst: 303 },
  },
  {
    route: '/dashboard/task-types',
    url: () => '/dashboard/task-types',
    doc: 'Task types, a task type',
    changes: ['Create a custom task type'],
  },
  {
    route: '/dashboard/task-types/:key',
    url: () => '/dashboard/task-types/dev_bug_fix',
    doc: 'Task types, a task type',
    changes: ['Change from a past date', 'Override the baseline'],
  },
  {
    route: '/dashboard/task-types/:key',
    url: (m) => `/dashboard/task-types/${m.taskType}`,
    doc: 'Task types, a task type',
    changes: ['Change from a past date', 'Archive'],
  },
  {
    route: '/dashboard/webhooks',
    url: () => '/dashboard/webhooks',
    doc: 'Webhooks, a webhook, its delete confirmation',
    changes: ['Add a webhook'],
  },
  {
    route: '/dashboard/webhooks/:id',
    url: (m) => `/dashboard/webhooks/${m.webhook}`,
    doc: 'Webhooks, a webhook, its delete confirmation',
    changes: ['Edit'],
  },
  {
    route: '/dashboard/webhooks/:id/delete',
    url: (m) => `/dashboard/webhooks/${m.webhook}/delete`,
    doc: 'Webhooks, a webhook, its delete confirmation',
    changes: ['Delete the webhook for'],
  },
  { route: '/dashboard/usage', url: () => '/dashboard/usage', doc: 'Usage, Settings, OpenTelemetry' },
  {
    route: '/dashboard/settings',
    url: () => '/dashboard/settings',
    doc: 'Usage, Settings, OpenTelemetry',
    changes: ['Change from a past date', 'Create a key', 'Single sign-on'],
  },
  {
    route: '/dashboard/opentelemetry',
    url: () => '/dashboard/opentelemetry',
    doc: 'Usage, Settings, OpenTelemetry',
    changes: ['Add a mapping rule', 'Clients'],
  },
  {
    route: '/dashboard/account',
    url: () => '/dashboard/account',
    doc: 'Your account (sessions, organisations, password)',
  },
  { route: '/dashboard/periods', url: () => '/dashboard/periods', doc: PERIODS_PAGES },
  {
    route: '/dashboard/periods/:month',
    url: (m) => `/dashboard/periods/${m.closedMonth}`,
    doc: PERIODS_PAGES,
  },
  {
    route: '/dashboard/periods/:month',
    url: (m) => `/dashboard/periods/${m.openMonth}`,
    doc: PERIODS_PAGES,
    changes: ['Close '],
  },
  {
    route: '/dashboard/periods/:month/statement.csv',
    url: (m) => `/dashboard/periods/${m.closedMonth}/statement.csv`,
    doc: PERIODS_PAGES,
  },
  {
    route: '/dashboard/members',
    url: () => '/dashboard/members',
    doc: MEMBERS_PAGES,
    changes: ['Invite someone'],
  },
  {
    route: '/dashboard/members/:id/remove',
    url: (m) => `/dashboard/members/${m.ownerMember}/remove`,
    doc: MEMBERS_PAGES,
  },
  {
    route: '/dashboard/settings/sso',
    url: () => '/dashboard/settings/sso',
    doc: 'Single sign-on settings (admins read them, analysts get a note)',
    hides: { analyst: /Redirect URI|client ID/i },
  },
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
  /** The row of docs/people.md's actions table this action is in. */
  doc: string;
}

/** A change of the default hourly rate from a past day, its value different for each fixture set. */
const pastChange = (m: Made) =>
  new URLSearchParams({
    what: 'default_hourly_rate',
    value: String(60 + Number(m.closedMonth.slice(5))),
    effective_from: '2024-01-01',
  }).toString();

const ACTIONS: Action[] = [
  {
    route: '/dashboard/events/:id/review',
    doc: 'Events: record a review',
    needs: 'admin',
    form: (m) => `/dashboard/events/${m.event}`,
    action: (m) => `/dashboard/events/${m.event}/review`,
    fill: { review_minutes: '5', verdict: 'accepted' },
    ok: /Review saved/,
  },
  {
    route: '/dashboard/restatements',
    doc: 'A change from a past date: apply it (a restatement)',
    needs: 'admin',
    form: (m) => `/dashboard/restatements/preview?${pastChange(m)}`,
    action: () => '/dashboard/restatements',
    fill: { reason: 'Matrix restatement' },
    ok: /Restatement rst_\w+ (applied|recorded)/,
  },
  {
    route: '/dashboard/budgets',
    doc: 'Budgets: create, edit, delete',
    needs: 'admin',
    form: () => '/dashboard/budgets',
    action: () => '/dashboard/budgets',
    fill: { name: 'Matrix budget', amount: '100' },
    ok: /Matrix budget/,
  },
  {
    route: '/dashboard/budgets/:id',
    doc: 'Budgets: create, edit, delete',
    needs: 'admin',
    form: (m) => `/dashboard/budgets/${m.budget}`,
    action: (m) => `/dashboard/budgets/${m.budget}`,
    fill: { amount: '250' },
    ok: /saved|updated/i,
  },
  {
    route: '/dashboard/budgets/:id/delete',
    doc: 'Budgets: create, edit, delete',
    needs: 'admin',
    action: (m) => `/dashboard/budgets/${m.budget}/delete`,
    ok: /deleted/i,
  },
  {
    route: '/dashboard/budgets/emails/alerts',
    doc: 'Report e-mails: alert e-mails, schedule, send now, delete',
    needs: 'admin',
    form: () => '/dashboard/budgets/emails',
    action: () => '/dashboard/budgets/emails/alerts',
    ok: /Alert e-mails saved/,
  },
  {
    route: '/dashboard/budgets/emails',
    doc: 'Report e-mails: alert e-mails, schedule, send now, delete',
    needs: 'admin',
    form: () => '/dashboard/budgets/emails',
    action: () => '/dashboard/budgets/emails',
    fill: { recipients: 'ops@example.com' },
    ok: /is scheduled/,
  },
  {
    route: '/dashboard/budgets/emails/:id/send',
    doc: 'Report e-mails: alert e-mails, schedule, send now, delete',
    needs: 'admin',
    action: (m) => `/dashboard/budgets/emails/${m.schedule}/send`,
    ok: /on its way|already has the report/,
  },
  {
    route: '/dashboard/budgets/emails/:id/delete',
    doc: 'Report e-mails: alert e-mails, schedule, send now, delete',
    needs: 'admin',
    action: (m) => `/dashboard/budgets/emails/${m.schedule}/delete`,
    ok: /deleted/i,
  },
  {
    route: '/dashboard/budgets/payback/costs',
    doc: 'Payback: add or delete a fixed cost, FTE hours',
    needs: 'admin',
    form: () => '/dashboard/budgets/payback',
    action: () => '/dashboard/budgets/payback/costs',
    fill: { name: 'Matrix licence', amount: '40', start_month: '2026-11' },
    ok: /added/,
  },
  {
    route: '/dashboard/budgets/payback/costs/:id/delete',
    doc: 'Payback: add or delete a fixed cost, FTE hours',
    needs: 'admin',
    action: (m) => `/dashboard/budgets/payback/costs/${m.cost}/delete`,
    ok: /deleted/i,
  },
  {
    route: '/dashboard/budgets/payback/fte',
    doc: 'Payback: add or delete a fixed cost, FTE hours',
    needs: 'admin',
    form: () => '/dashboard/budgets/payback',
    action: () => '/dashboard/budgets/payback/fte',
    fill: { fte_hours_per_month: '150' },
    ok: /FTE hours saved/,
  },
  {
    route: '/dashboard/opentelemetry/mappings',
    doc: 'OpenTelemetry: add or delete a mapping, dismiss or retry unresolved',
    needs: 'admin',
    form: () => '/dashboard/opentelemetry',
    action: () => '/dashboard/opentelemetry/mappings',
    fill: (m) => ({ value: `matrix-bot-${m.tag}`, task_type: 'dev_bug_fix' }),
    ok: /Rule added/,
  },
  {
    route: '/dashboard/opentelemetry/mappings/:id/delete',
    doc: 'OpenTelemetry: add or delete a mapping, dismiss or retry unresolved',
    needs: 'admin',
    action: (m) => `/dashboard/opentelemetry/mappings/${m.mapping}/delete`,
    ok: /deleted|removed/i,
  },
  {
    route: '/dashboard/opentelemetry/unresolved/:id/dismiss',
    doc: 'OpenTelemetry: add or delete a mapping, dismiss or retry unresolved',
    needs: 'admin',
    action: () => '/dashboard/opentelemetry/unresolved/otlprun_none/dismiss',
    ok: /not found|no longer|dismissed/i,
  },
  {
    route: '/dashboard/opentelemetry/unresolved/retry',
    doc: 'OpenTelemetry: add or delete a mapping, dismiss or retry unresolved',
    needs: 'admin',
    action: () => '/dashboard/opentelemetry/unresolved/retry',
    ok: /run|retr/i,
  },
  {
    route: '/dashboard/settings',
    doc: 'Settings: save; API keys: create, revoke',
    needs: 'admin',
    form: () => '/dashboard/settings',
    action: () => '/dashboard/settings',
    fill: { name: 'Acme' },
    ok: /Settings saved|saved/i,
  },
  {
    route: '/dashboard/settings/keys',
    doc: 'Settings: save; API keys: create, revoke',
    needs: 'admin',
    form: () => '/dashboard/settings',
    action: () => '/dashboard/settings/keys',
    fill: { name: 'matrix key' },
    ok: /tally_live_/,
  },
  {
    route: '/dashboard/settings/keys/:id/revoke',
    doc: 'Settings: save; API keys: create, revoke',
    needs: 'admin',
    action: (m) => `/dashboard/settings/keys/${m.key}/revoke`,
    ok: /revoked/i,
  },
  {
    route: '/dashboard/task-types',
    doc: 'Task types: create, archive; baseline override: set, remove',
    needs: 'admin',
    form: () => '/dashboard/task-types',
    action: () => '/dashboard/task-types',
    fill: (m) => ({ key: `matrix_${m.tag}`, display_name: 'Matrix type', default_baseline_minutes: '20' }),
    ok: /Created the custom task type/,
  },
  {
    route: '/dashboard/task-types/:key/override',
    doc: 'Task types: create, archive; baseline override: set, remove',
    needs: 'admin',
    form: () => '/dashboard/task-types/dev_bug_fix',
    action: () => '/dashboard/task-types/dev_bug_fix/override',
    fill: { baseline_minutes_override: '33' },
    ok: /Override saved/,
  },
  {
    route: '/dashboard/task-types/:key/override/remove',
    doc: 'Task types: create, archive; baseline override: set, remove',
    needs: 'admin',
    action: () => '/dashboard/task-types/dev_bug_fix/override/remove',
    ok: /removed|default/i,
  },
  {
    route: '/dashboard/task-types/:key/archive',
    doc: 'Task types: create, archive; baseline override: set, remove',
    needs: 'admin',
    action: (m) => `/dashboard/task-types/${m.taskType}/archive`,
    ok: /archived/i,
  },
  {
    route: '/dashboard/webhooks',
    doc: 'Webhooks: create, edit, send a test ping, reactivate, delete',
    needs: 'admin',
    form: () => '/dashboard/webhooks',
    action: () => '/dashboard/webhooks',
    fill: (m) => ({ url: `https://hooks.example.com/matrix-${m.tag}`, event_types: ['event.created'] }),
    ok: /hooks\.example\.com\/matrix/,
  },
  {
    route: '/dashboard/webhooks/:id',
    doc: 'Webhooks: create, edit, send a test ping, reactivate, delete',
    needs: 'admin',
    form: (m) => `/dashboard/webhooks/${m.webhook}`,
    action: (m) => `/dashboard/webhooks/${m.webhook}`,
    fill: { description: 'Matrix description' },
    ok: /saved|updated|Matrix description/i,
  },
  {
    route: '/dashboard/webhooks/:id/test',
    doc: 'Webhooks: create, edit, send a test ping, reactivate, delete',
    needs: 'admin',
    action: (m) => `/dashboard/webhooks/${m.webhook}/test`,
    ok: /ping/i,
  },
  {
    route: '/dashboard/webhooks/:id/reactivate',
    doc: 'Webhooks: create, edit, send a test ping, reactivate, delete',
    needs: 'admin',
    action: (m) => `/dashboard/webhooks/${m.webhook}/reactivate`,
    ok: /reactivated/i,
  },
  {
    route: '/dashboard/webhooks/:id/delete',
    doc: 'Webhooks: create, edit, send a test ping, reactivate, delete',
    needs: 'admin',
    form: (m) => `/dashboard/webhooks/${m.webhook}/delete`,
    action: (m) => `/dashboard/webhooks/${m.webhook}/delete`,
    ok: /deleted/i,
  },
  {
    route: '/dashboard/periods/:month/close',
    needs: 'admin',
    form: (m) => `/dashboard/periods/${m.openMonth}`,
    action: (m) => `/dashboard/periods/${m.openMonth}/close`,
    fill: { reason: 'Matrix close', confirm: 'yes' },
    ok: /closed; its statement is frozen/,
    doc: 'Periods: close a month',
  },
  {
    route: '/dashboard/periods/:month/reopen',
    needs: 'owner',
    form: (m) => `/dashboard/periods/${m.closedMonth}`,
    action: (m) => `/dashboard/periods/${m.closedMonth}/reopen`,
    fill: { reason: 'Matrix reopen', confirm: 'yes' },
    ok: /reopened/,
    doc: 'Periods: reopen a closed month',
  },
  {
    route: '/dashboard/members/invite',
    needs: 'admin',
    form: () => '/dashboard/members',
    action: () => '/dashboard/members/invite',
    fill: (m) => ({ email: `invited-${m.tag}@example.com`, role: 'analyst' }),
    ok: /Invitation sent to invited-/,
    doc: MEMBERS_ADMIN,
  },
  {
    route: '/dashboard/members/invitations/:id/resend',
    needs: 'admin',
    action: (m) => `/dashboard/members/invitations/${m.invitation}/resend`,
    ok: /Invitation sent again/,
    doc: MEMBERS_ADMIN,
  },
  {
    route: '/dashboard/members/invitations/:id/revoke',
    needs: 'admin',
    action: (m) => `/dashboard/members/invitations/${m.invitation}/revoke`,
    ok: /revoked/,
    doc: MEMBERS_ADMIN,
  },
  {
    route: '/dashboard/members/:id/role',
    needs: 'admin',
    form: () => '/dashboard/members',
    action: (m) => `/dashboard/members/${m.member}/role`,
    fill: { role: 'admin' },
    ok: /is now admin/,
    doc: MEMBERS_ADMIN,
  },
  {
    route: '/dashboard/members/:id/remove',
    needs: 'admin',
    form: (m) => `/dashboard/members/${m.member}/remove`,
    action: (m) => `/dashboard/members/${m.member}/remove`,
    ok: /removed/,
    doc: MEMBERS_ADMIN,
  },
  {
    route: '/dashboard/members/invite',
    needs: 'owner',
    form: () => '/dashboard/members',
    action: () => '/dashboard/members/invite',
    fill: (m) => ({ email: `owner-${m.tag}@example.com`, role: 'owner' }),
    ok: /Invitation sent to owner-/,
    doc: MEMBERS_OWNER,
  },
  {
    route: '/dashboard/members/:id/role',
    needs: 'owner',
    form: () => '/dashboard/members',
    action: (m) => `/dashboard/members/${m.member2}/role`,
    fill: { role: 'owner' },
    ok: /is now owner/,
    doc: MEMBERS_OWNER,
  },
  {
    route: '/dashboard/members/:id/remove',
    needs: 'owner',
    form: (m) => `/dashboard/members/${m.ownerMember}/remove`,
    action: (m) => `/dashboard/members/${m.ownerMember}/remove`,
    ok: /removed/,
    doc: MEMBERS_OWNER,
  },
  {
    route: '/dashboard/settings/sso',
    needs: 'owner',
    form: () => '/dashboard/settings/sso',
    action: () => '/dashboard/settings/sso',
    fill: {
      issuer: 'https://login.example.com/tenant',
      client_id: 'tally-dashboard',
      client_secret: 'matrix-client-secret',
      allowed_domains: 'example.com',
    },
    ok: /Single sign-on saved/,
    doc: 'Single sign-on: save, remove',
  },
  {
    route: '/dashboard/settings/sso/remove',
    needs: 'owner',
    action: () => '/dashboard/settings/sso/remove',
    ok: /Single sign-on removed/,
    doc: 'Single sign-on: save, remove',
  },
  {
    route: '/dashboard/account/switch',
    doc: 'Your account: switch organisation, change password, end a session',
    needs: 'analyst',
    action: () => '/dashboard/account/switch',
    fill: { org_id: '' },
    ok: /You are now looking at/,
  },
  {
    route: '/dashboard/account/password',
    doc: 'Your account: switch organisation, change password, end a session',
    needs: 'analyst',
    form: () => '/dashboard/account',
    action: () => '/dashboard/account/password',
    // The same password again: the walk goes on signing in with it.
    fill: { current_password: 'correct horse battery staple', new_password: 'correct horse battery staple' },
    ok: /password is changed/,
  },
];

/** API routes an ingest key may use (DESIGN §3); every other `/v1/…` route needs an admin key. */
const API_INGEST = new Set([
  'POST /v1/track',
  'POST /v1/track/batch',
  'GET /v1/task-types',
  'POST /v1/traces',
]);

/**
 * API routes that need the owner role: an admin key acts as an admin, so it gets 403
 * `insufficient_role` (owners act from the dashboard, the operator from the CLI).
 */
const API_OWNER = new Map<string, { url: string; payload: object; before?: string }>([
  [
    'POST /v1/periods/:month/reopen',
    // A month closed just before: the refusal is the role's, not the request's.
    { url: '/v1/periods/2023-01/reopen', payload: { reason: 'matrix' }, before: '/v1/periods/2023-01/close' },
  ],
]);

/**
 * Routes outside the matrix: signing in and out (with a password or single sign-on), ending one's
 * own session, static assets, and the pages of single-use links (password reset, the first owner,
 * invitations), open without a session.
 */
const UNGATED = new Set([
  'GET /dashboard/password-reset',
  'POST /dashboard/password-reset',
  'GET /dashboard/password-reset/:token',
  'POST /dashboard/password-reset/:token',
  'GET /dashboard/first-owner/:token',
  'POST /dashboard/first-owner/:token',
  'GET /dashboard/invitations/:token',
  'POST /dashboard/invitations/:token',
  'GET /dashboard/sso',
  'POST /dashboard/sso',
  'GET /dashboard/sso/:org/start',
  'GET /dashboard/sso/callback',
  'GET /dashboard/login',
  'POST /dashboard/login',
  'POST /dashboard/logout',
  'POST /dashboard/account/sessions/end',
  'GET /dashboard/assets/:name',
  'HEAD /dashboard/assets/:name',
  'HEAD /dashboard/login',
]);

/** Whether `role` may do what needs `needs` (owner ⊇ admin ⊇ analyst). */
function mayDo(role: Role, needs: Role): boolean {
  return ROLES.indexOf(role) <= ROLES.indexOf(needs);
}

/** Whether a URL path is one of `route` (`:name` standing for one segment). */
function routeMatches(route: string, path: string): boolean {
  const pattern = route
    .split('/')
    .map((part) => (part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${pattern}$`).test(path);
}

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

/** The opening tags of the elements a page marks as a change panel (read-only.ts). */
const markedForChange = (body: string) => body.match(/<[a-z][a-z0-9]*\b[^>]*\sdata-change\b[^>]*>/g) ?? [];

/** A page's headings and summaries, as text. */
const headingsOf = (body: string) =>
  [...body.matchAll(/<(h[2-6]|summary)\b[^>]*>([\s\S]*?)<\/\1>/g)].map((m) =>
    (m[2] ?? '')
      .replace(/<[^>]*>/g, '')
      .replace(/\s+/g, ' ')
      .trim(),
  );

function encode(fields: Map<string, string[]>): string {
  const params = new URLSearchParams();
  for (const [name, values] of fields) for (const value of values) params.append(name, value);
  return params.toString();
}

/** The rows of the tables under docs/people.md's "The matrix": label → its cells. */
function docMatrix(): Map<string, string[]> {
  const text = readFileSync(new URL('../../docs/people.md', import.meta.url), 'utf8');
  const section = /\n## The matrix\n([\s\S]*?)(?:\n## |$)/.exec(text)?.[1] ?? '';
  const rows = new Map<string, string[]>();
  for (const line of section.split('\n')) {
    if (!line.startsWith('|') || /^\|\s*-/.test(line)) continue;
    const cells = line
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim());
    const [label, ...rest] = cells;
    if (label === undefined || /^(Page|Action|API routes)/.test(label)) continue;
    rows.set(label, rest);
  }
  return rows;
}

describe('the role matrix of docs/people.md', () => {
  it('lists the same rows and cells as the tables this test walks', () => {
    const expected = new Map<string, string[]>();
    const put = (label: string, cells: string[]) => {
      const before = expected.get(label);
      if (before && before.join() !== cells.join()) throw new Error(`${label}: rows of one label differ`);
      expected.set(label, cells);
    };
    for (const p of PAGES) put(p.doc, ['✓', '✓', '✓']);
    for (const a of ACTIONS)
      put(
        a.doc,
        ROLES.map((r) => (mayDo(r, a.needs) ? '✓' : '—')),
      );
    const documented = docMatrix();
    const api = [...documented.entries()].filter(([label]) => label.includes('/v1/'));
    for (const [label] of api) documented.delete(label);
    expect(documented).toEqual(expected);
    // The API table: the ingest routes, the owner's routes, and every other route for admin keys.
    const routesOf = (label: string) => [...label.matchAll(/`([A-Z]+ \/v1\/[^`]*)`/g)].map((m) => m[1]);
    const docRoute = (route: string) => route.replace(/:(\w+)/g, '{$1}');
    const rowOf = (route: string) => api.find(([label]) => routesOf(label).includes(docRoute(route)))?.[1];
    for (const route of API_INGEST) expect(rowOf(route), route).toEqual(['✓', '✓']);
    for (const route of API_OWNER.keys()) {
      expect(rowOf(route)?.[0], route).toContain('insufficient_role');
      expect(rowOf(route)?.[1], route).toContain('insufficient_scope');
    }
    const named = api.flatMap(([label]) => routesOf(label));
    expect(named.sort()).toEqual([...API_INGEST, ...API_OWNER.keys()].map(docRoute).sort());
  });
});

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

  let months = 0;
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
    const invitation = await json('POST', '/v1/invitations', {
      email: `pending-${tag}@example.com`,
      role: 'analyst',
    });
    const member = await person(h, `member-${tag}@example.com`, 'analyst');
    const member2 = await person(h, `member2-${tag}@example.com`, 'analyst');
    const ownerMember = await person(h, `owner-member-${tag}@example.com`, 'owner');
    // Two ended months of their own: one left open, one closed.
    const openMonth = `2024-${String(++months).padStart(2, '0')}`;
    const closedMonth = `2024-${String(++months).padStart(2, '0')}`;
    await json('POST', `/v1/periods/${closedMonth}/close`, { reason: `closed for ${tag}` });
    const tracked = await h.request({
      method: 'POST',
      url: '/v1/track',
      payload: { agent_id: `matrix-${tag}`, task_type: 'dev_bug_fix', outcome: 'needs_review' },
    });
    expect(tracked.statusCode, tracked.body).toBe(201);
    return {
      tag,
      budget: budget.id ?? '',
      schedule: schedule.id ?? '',
      cost: cost.id ?? '',
      mapping: mapping.id ?? '',
      webhook: webhook.id ?? '',
      key: key.key.id,
      taskType: taskType.key ?? '',
      invitation: invitation.id ?? '',
      member: member.accountId,
      member2: member2.accountId,
      ownerMember: ownerMember.accountId,
      openMonth,
      closedMonth,
      event: tracked.json<{ event_id: string }>().event_id,
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
        const expected = p.status?.[role] ?? 200;
        expect(res.statusCode, `${role} GET ${p.route}: ${res.body.slice(0, 300)}`).toBe(expected);
        const body = res.body.replace(/<header class="top">[\s\S]*?<\/header>/, '');
        const changeForms = [...body.matchAll(/<form\b[^>]*method="post"[^>]*action="([^"]*)"/g)]
          .map((m) => m[1] ?? '')
          .filter((action) => !/^\/dashboard\/(logout|account)/.test(action));
        if (role === 'analyst') expect(changeForms, `${role} ${p.route}`).toEqual([]);
        // No control the role may not use: every form posts to an action of the table it may do.
        const unusable = changeForms.filter(
          (action) => !ACTIONS.some((a) => routeMatches(a.route, action) && mayDo(role, a.needs)),
        );
        expect(unusable, `${role} ${p.route}`).toEqual([]);
        // Nor a form that only leads to a page sending the role back (a change's preview).
        const refusedOnArrival = [...body.matchAll(/<form\b[^>]*action="([^"]*)"/g)]
          .map((m) => m[1] ?? '')
          .filter((action) =>
            PAGES.some((q) => routeMatches(q.route, action) && q.status?.[role] !== undefined),
          );
        expect(refusedOnArrival, `${role} ${p.route}`).toEqual([]);
        const hidden = p.hides?.[role];
        if (hidden) expect(body, `${role} ${p.route}`).not.toMatch(hidden);
        // No change panel, nor its heading or instructions, for an analyst; all of them for the others.
        if (role === 'analyst') expect(markedForChange(body), `${role} ${p.url(made)}`).toEqual([]);
        const headings = headingsOf(body);
        for (const change of p.changes ?? [])
          expect(
            headings.some((h) => h.startsWith(change)),
            `${role} ${p.url(made)} “${change}” in ${headings.join(' | ')}`,
          ).toBe(role !== 'analyst');
      }
      // The pages with forms show them to those who may use them.
      const settings = await page(h, cookie, '/dashboard/settings');
      expect(settings.body.includes('action="/dashboard/settings/keys"')).toBe(role !== 'analyst');
      expect(settings.body.includes('action="/dashboard/restatements/preview"')).toBe(role !== 'analyst');
      // Who gets the alert e-mails, as text where the form is not shown.
      const emails = await page(h, cookie, '/dashboard/budgets/emails');
      expect(headingsOf(emails.body).includes('Who gets alert e-mails')).toBe(role === 'analyst');
    });

    it(`walks every action as ${role}: done where the role allows, refused by the verb where not`, async () => {
      const cookie = cookies.get(role) ?? (await personSession(h, `${role}@example.com`));
      const ownerCookie = await personSession(h, 'owner@example.com');
      const made = await make(`a${role}`);
      const problems: string[] = [];
      for (const a of ACTIONS) {
        const allowed = mayDo(role, a.needs);
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
          const owners = API_OWNER.get(route);
          if (owners?.before && scope === 'admin') {
            const before = await h.request({ method: 'POST', url: owners.before, payload: owners.payload });
            expect(before.statusCode, before.body).toBeLessThan(300);
          }
          const res = await h.request({
            method: verb,
            url: owners?.url ?? url,
            apiKey,
            ...(verb === 'GET' || verb === 'DELETE' ? {} : { payload: owners?.payload ?? {} }),
          });
          const code =
            res.statusCode >= 400 ? res.json<{ error?: { code?: string } }>().error?.code : undefined;
          if (scope === 'ingest' && !API_INGEST.has(route)) {
            expect(code, `${scope} ${route}`).toBe('insufficient_scope');
          } else if (scope === 'admin' && API_OWNER.has(route)) {
            expect(code, `${scope} ${route}`).toBe('insufficient_role');
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
