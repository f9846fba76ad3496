import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { csrfOf, page, post } from '../dashboard/support.js';
import { person, personSession } from './support.js';

describe.each(ENGINES)('the audit log names people (%s)', (engine) => {
  let h: Harness;
  let ana: { accountId: string; email: string };
  beforeAll(async () => {
    h = await createHarness(engine);
    ana = await person(h, 'ana@example.com', 'admin');
  });
  afterAll(async () => h.close());

  const auditLog = async (apiKey = h.org.apiKey) => {
    const res = await h.request({ method: 'GET', url: '/v1/audit-log', apiKey });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ data: Array<Record<string, unknown>> }>().data;
  };

  it('names the person who changed something in the dashboard', async () => {
    const cookie = await personSession(h, 'ana@example.com');
    const shown = await page(h, cookie, '/dashboard/task-types/dev_bug_fix');
    const res = await post(h, cookie, '/dashboard/task-types/dev_bug_fix/override', {
      csrf_token: csrfOf(shown.body),
      baseline_minutes_override: '45',
      reason: 'measured',
    });
    expect(res.statusCode).toBe(303);
    const [entry] = (await auditLog()).filter((e) => e.action === 'task_type.override_set');
    expect(entry).toMatchObject({
      actor_key_id: null,
      actor_account_id: ana.accountId,
      actor_email: 'ana@example.com',
    });
  });

  it('names the key and the person who created it for a change through the API', async () => {
    const cookie = await personSession(h, 'ana@example.com');
    const settings = await page(h, cookie, '/dashboard/settings');
    const created = await post(h, cookie, '/dashboard/settings/keys', {
      csrf_token: csrfOf(settings.body),
      name: 'ana’s automation',
      scope: 'admin',
    });
    const apiKey = /tally_live_[A-Za-z0-9]{8}_[A-Za-z0-9]{48}/.exec(created.body)?.[0] ?? '';
    expect(apiKey).not.toBe('');
    const keyId = apiKey.split('_')[2] ?? '';
    const row = await h.ctx.db
      .selectFrom('api_keys')
      .select('created_by_account_id')
      .where('id', '=', keyId)
      .executeTakeFirstOrThrow();
    expect(row.created_by_account_id).toBe(ana.accountId);

    const changed = await h.request({
      method: 'POST',
      url: '/v1/task-types/support_ticket_reply/override',
      apiKey,
      payload: { baseline_minutes_override: 12 },
    });
    expect(changed.statusCode, changed.body).toBe(200);
    const entries = await auditLog();
    const byKey = entries.find((e) => e.target === 'task_type:support_ticket_reply');
    expect(byKey).toMatchObject({
      actor_key_id: keyId,
      actor_account_id: ana.accountId,
      actor_email: 'ana@example.com',
    });
    // Creating the key is recorded as hers too.
    const created2 = entries.find((e) => e.action === 'api_key.created');
    expect(created2).toMatchObject({ actor_account_id: ana.accountId });
  });

  it('records sign-ins and password changes in the organisation’s log', async () => {
    const cookie = await personSession(h, 'ana@example.com');
    const account = await page(h, cookie, '/dashboard/account');
    await post(h, cookie, '/dashboard/account/password', {
      csrf_token: csrfOf(account.body),
      current_password: 'correct horse battery staple',
      new_password: 'another fine passphrase',
    });
    const actions = (await auditLog()).map((e) => e.action);
    expect(actions).toContain('account.signed_in');
    expect(actions).toContain('account.password_changed');
  });
});
