import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAccountSession } from '../../src/accounts/sessions.js';
import { addMembership, createAccount } from '../../src/accounts/store.js';
import type { Role } from '../../src/accounts/roles.js';
import { SESSION_COOKIE } from '../../src/dashboard/security.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness, type TestOrg } from '../support/harness.js';
import { csrfOf, page, post } from '../dashboard/support.js';

const FIELDS = {
  issuer: 'https://login.example.com',
  client_id: 'tally',
  client_secret: 'a-secret-of-the-owner',
  allowed_domains: 'example.com',
  default_role: 'analyst',
  enabled: '1',
  passwords_allowed: '1',
};

describe.each(ENGINES)('who may see and change single sign-on (%s)', (engine) => {
  let h: Harness;
  let org: TestOrg;
  const cookies = new Map<Role, string>();

  beforeAll(async () => {
    h = await createHarness(engine);
    org = await h.createOrg({ plan: 'enterprise' });
    for (const role of ['owner', 'admin', 'analyst'] as const) {
      const account = await createAccount({ ctx: h.ctx, email: `${role}@example.com` });
      await addMembership({ ctx: h.ctx, orgId: org.id, accountId: account.id, role });
      const opened = await openAccountSession({
        ctx: h.ctx,
        accountId: account.id,
        orgId: org.id,
        method: 'password',
      });
      cookies.set(role, `${SESSION_COOKIE}=${opened.token}`);
    }
  });
  afterAll(async () => h.close());

  const cookie = (role: Role) => cookies.get(role) ?? '';

  it('an owner sets it up from the dashboard; the audit log names the owner', async () => {
    const form = await page(h, cookie('owner'), '/dashboard/settings/sso');
    expect(form.statusCode).toBe(200);
    expect(form.body).toContain('Save single sign-on');
    const saved = await post(h, cookie('owner'), '/dashboard/settings/sso', {
      ...FIELDS,
      csrf_token: csrfOf(form.body),
    });
    expect(saved.statusCode, saved.body).toBe(303);
    const row = await h.storage.db
      .selectFrom('audit_log')
      .select(['actor_account_id', 'action'])
      .where('org_id', '=', org.id)
      .where('action', '=', 'sso.configured')
      .executeTakeFirstOrThrow();
    const owner = await h.storage.db
      .selectFrom('accounts')
      .select('id')
      .where('email', '=', 'owner@example.com')
      .executeTakeFirstOrThrow();
    expect(row.actor_account_id).toBe(owner.id);
  });

  it('an owner’s invalid form is answered on the page, nothing saved', async () => {
    const form = await page(h, cookie('owner'), '/dashboard/settings/sso');
    const res = await post(h, cookie('owner'), '/dashboard/settings/sso', {
      ...FIELDS,
      issuer: 'http://login.example.com',
      csrf_token: csrfOf(form.body),
    });
    expect(res.statusCode).toBe(422);
    expect(res.body).toContain('Not saved: issuer must be an https:// URL');
  });

  it('an admin sees it read only and may not change or remove it', async () => {
    const view = await page(h, cookie('admin'), '/dashboard/settings/sso');
    expect(view.statusCode).toBe(200);
    expect(view.body).toContain('Only an owner can change single sign-on.');
    expect(view.body).toContain('https://login.example.com');
    expect(view.body).not.toContain('Save single sign-on');
    expect(view.body).not.toContain('a-secret-of-the-owner');
    const csrf = csrfOf(view.body);
    const changed = await post(h, cookie('admin'), '/dashboard/settings/sso', {
      ...FIELDS,
      csrf_token: csrf,
    });
    expect(changed.statusCode).toBe(403);
    const removed = await post(h, cookie('admin'), '/dashboard/settings/sso/remove', { csrf_token: csrf });
    expect(removed.statusCode).toBe(403);
    expect(await h.storage.db.selectFrom('sso_connections').selectAll().execute()).toHaveLength(1);
  });

  it('an analyst sees neither the configuration nor a form', async () => {
    const view = await page(h, cookie('analyst'), '/dashboard/settings/sso');
    expect(view.statusCode).toBe(200);
    expect(view.body).toContain('set up by the organisation’s owners');
    expect(view.body).not.toContain('login.example.com');
    const changed = await post(h, cookie('analyst'), '/dashboard/settings/sso', {
      ...FIELDS,
      csrf_token: csrfOf(view.body),
    });
    expect(changed.statusCode).toBe(403);
  });

  it('an admin API key may change it (automation); the owner removes it from the dashboard', async () => {
    const put = await h.request({
      method: 'PUT',
      url: '/v1/sso',
      apiKey: org.apiKey,
      payload: {
        issuer: 'https://login.example.com',
        client_id: 'tally-2',
        allowed_domains: ['example.com'],
      },
    });
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json()).toMatchObject({ client_id: 'tally-2' });
    const view = await page(h, cookie('owner'), '/dashboard/settings/sso');
    const removed = await post(h, cookie('owner'), '/dashboard/settings/sso/remove', {
      csrf_token: csrfOf(view.body),
    });
    expect(removed.statusCode).toBe(303);
    expect(await h.storage.db.selectFrom('sso_connections').selectAll().execute()).toHaveLength(0);
  });

  it('a Pro organisation’s page explains the plan instead', async () => {
    await h.storage.db.updateTable('organizations').set({ plan: 'pro' }).where('id', '=', org.id).execute();
    const view = await page(h, cookie('owner'), '/dashboard/settings/sso');
    expect(view.statusCode).toBe(200);
    expect(view.body).toContain('Single sign-on needs the Enterprise plan');
    expect(view.body).toContain('--plan enterprise');
    expect(view.body).not.toContain('Save single sign-on');
  });
});
