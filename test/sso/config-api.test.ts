import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newSecretKey, SecretBox, secretKeyId } from '../../src/crypto/secret-box.js';
import { loadConfig } from '../../src/config.js';
import { resealSsoSecrets } from '../../src/sso/secret.js';
import { parseSecretKey } from '../../src/crypto/secret-box.js';
import { createApiKey } from '../../src/orgs/api-keys.js';
import { loadSsoConnection, passwordsAllowed } from '../../src/sso/connections.js';
import { ENGINES } from '../support/engines.js';
import { expectError } from '../support/errors.js';
import { createHarness, type Harness, type TestOrg } from '../support/harness.js';
import { TEST_SECRET_KEY } from '../support/secret-key.js';

const SECRET = 'client-secret-that-must-never-come-back-9f2c';

const body = {
  issuer: 'https://login.example.com/tenant',
  client_id: 'tally-dashboard',
  client_secret: SECRET,
  allowed_domains: ['Example.com', '@corp.example.org'],
  default_role: 'analyst',
  passwords_allowed: false,
};

describe.each(ENGINES)('single sign-on configuration API (%s)', (engine) => {
  let h: Harness;
  let ent: TestOrg;
  beforeAll(async () => {
    h = await createHarness(engine, { env: { TALLY_PUBLIC_URL: 'https://tally.example.net' } });
    ent = await h.createOrg({ plan: 'enterprise' });
  });
  afterAll(async () => h.close());

  it('is an Enterprise feature: a Pro organisation is refused every verb', async () => {
    for (const method of ['GET', 'PUT', 'DELETE'] as const) {
      const res = await h.request({ method, url: '/v1/sso', ...(method === 'PUT' ? { payload: body } : {}) });
      expectError(res, 403, 'plan_upgrade_required');
    }
    expect(await h.storage.db.selectFrom('sso_connections').selectAll().execute()).toEqual([]);
  });

  it('answers not_found before anything is configured', async () => {
    expectError(await h.request({ method: 'GET', url: '/v1/sso', apiKey: ent.apiKey }), 404, 'not_found');
    expectError(await h.request({ method: 'DELETE', url: '/v1/sso', apiKey: ent.apiKey }), 404, 'not_found');
  });

  it('requires the client secret the first time', async () => {
    const { client_secret: _omitted, ...withoutSecret } = body;
    const res = await h.request({
      method: 'PUT',
      url: '/v1/sso',
      apiKey: ent.apiKey,
      payload: withoutSecret,
    });
    const error = expectError(res, 422, 'validation_error');
    expect(error.details).toEqual([{ path: '/body/client_secret', message: expect.any(String) }]);
  });

  it('stores the configuration, returns it without the secret, and seals the secret at rest', async () => {
    const res = await h.request({ method: 'PUT', url: '/v1/sso', apiKey: ent.apiKey, payload: body });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).not.toContain(SECRET);
    expect(res.json()).toEqual({
      organization_id: ent.id,
      issuer: 'https://login.example.com/tenant',
      client_id: 'tally-dashboard',
      client_secret_set: true,
      allowed_domains: ['corp.example.org', 'example.com'],
      default_role: 'analyst',
      passwords_allowed: false,
      enabled: true,
      redirect_uri: 'https://tally.example.net/dashboard/sso/callback',
      start_url: `https://tally.example.net/dashboard/sso/${ent.id}/start`,
      created_at: '2026-11-20T12:00:00.000Z',
      updated_at: '2026-11-20T12:00:00.000Z',
    });
    const got = await h.request({ method: 'GET', url: '/v1/sso', apiKey: ent.apiKey });
    expect(got.json()).toEqual(res.json());
    expect(got.body).not.toContain(SECRET);

    // At rest: sealed with the configured key, bound to this organisation's row.
    const row = await h.storage.db.selectFrom('sso_connections').selectAll().executeTakeFirstOrThrow();
    expect(row.client_secret).not.toContain(SECRET);
    expect(row.client_secret.startsWith('tsb1.')).toBe(true);
    const key = parseSecretKey(TEST_SECRET_KEY);
    if (key === null) return expect.fail('the test key does not parse');
    const box = new SecretBox(key);
    expect(row.secret_key_id).toBe(box.keyId);
    expect(box.open(row.client_secret, `sso_connections.client_secret:${ent.id}`)).toBe(SECRET);
    expect(() => box.open(row.client_secret, `sso_connections.client_secret:${h.org.id}`)).toThrow();
    expect((await loadSsoConnection(h.ctx, ent.id))?.clientSecret).toBe(SECRET);

    // Nor does the audit log hold it, sealed or not.
    const audit = await h.storage.db
      .selectFrom('audit_log')
      .selectAll()
      .where('org_id', '=', ent.id)
      .execute();
    expect(audit.map((a) => a.action)).toEqual(['sso.configured']);
    expect(JSON.stringify(audit)).not.toContain(SECRET);
    expect(JSON.stringify(audit)).not.toContain(row.client_secret);
  });

  it('keeps the stored secret when a later PUT omits it, and replaces it when given', async () => {
    const { client_secret: _omitted, ...rest } = body;
    const kept = await h.request({
      method: 'PUT',
      url: '/v1/sso',
      apiKey: ent.apiKey,
      payload: { ...rest, default_role: 'admin', enabled: false },
    });
    expect(kept.statusCode, kept.body).toBe(200);
    expect(kept.json()).toMatchObject({ default_role: 'admin', enabled: false, passwords_allowed: false });
    expect((await loadSsoConnection(h.ctx, ent.id))?.clientSecret).toBe(SECRET);
    const replaced = await h.request({
      method: 'PUT',
      url: '/v1/sso',
      apiKey: ent.apiKey,
      payload: { ...body, client_secret: 'another-secret', enabled: true },
    });
    expect(replaced.statusCode).toBe(200);
    expect(replaced.body).not.toContain('another-secret');
    expect((await loadSsoConnection(h.ctx, ent.id))?.clientSecret).toBe('another-secret');
  });

  it('refuses an issuer that is not https (loopback http aside), bad domains and an owner default role', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ issuer: 'http://login.example.com' }, '/body/issuer'],
      [{ issuer: 'not a url' }, '/body/issuer'],
      [{ issuer: 'https://login.example.com/?tenant=1' }, '/body/issuer'],
      [{ allowed_domains: ['example'] }, '/body/allowed_domains/0'],
      [{ allowed_domains: ['ok.example.com', 'a b.com'] }, '/body/allowed_domains/1'],
      [{ allowed_domains: [] }, '/body/allowed_domains'],
      [{ default_role: 'owner' }, '/body/default_role'],
      [{ client_secret: '' }, '/body/client_secret'],
      [{ surprise: true }, '/body'],
    ];
    for (const [change, path] of cases) {
      const res = await h.request({
        method: 'PUT',
        url: '/v1/sso',
        apiKey: ent.apiKey,
        payload: { ...body, ...change },
      });
      const error = expectError(res, 422, 'validation_error');
      expect(JSON.stringify(error.details), JSON.stringify(change)).toContain(path);
    }
    const loopback = await h.request({
      method: 'PUT',
      url: '/v1/sso',
      apiKey: ent.apiKey,
      payload: { ...body, issuer: 'http://127.0.0.1:4000/oidc' },
    });
    expect(loopback.statusCode).toBe(200);
  });

  it('an ingest key may not read it', async () => {
    const ingest = await createApiKey({ ctx: h.ctx, orgId: ent.id, name: 'agent', scope: 'ingest' });
    const res = await h.request({ method: 'GET', url: '/v1/sso', apiKey: ingest.api_key });
    expectError(res, 403, 'insufficient_scope');
  });

  it('passwordsAllowed: false only while enabled, passwords off and the plan Enterprise', async () => {
    const put = (change: Record<string, unknown>) =>
      h.request({ method: 'PUT', url: '/v1/sso', apiKey: ent.apiKey, payload: { ...body, ...change } });
    expect((await put({ passwords_allowed: false, enabled: true })).statusCode).toBe(200);
    expect(await passwordsAllowed(h.ctx, ent.id)).toBe(false);
    expect(await passwordsAllowed(h.ctx, h.org.id)).toBe(true);
    expect((await put({ passwords_allowed: true })).statusCode).toBe(200);
    expect(await passwordsAllowed(h.ctx, ent.id)).toBe(true);
    expect((await put({ passwords_allowed: false, enabled: false })).statusCode).toBe(200);
    expect(await passwordsAllowed(h.ctx, ent.id)).toBe(true);
    expect((await put({ passwords_allowed: false, enabled: true })).statusCode).toBe(200);
    await h.storage.db.updateTable('organizations').set({ plan: 'pro' }).where('id', '=', ent.id).execute();
    expect(await passwordsAllowed(h.ctx, ent.id)).toBe(true);
    await h.storage.db
      .updateTable('organizations')
      .set({ plan: 'enterprise' })
      .where('id', '=', ent.id)
      .execute();
    expect(await passwordsAllowed(h.ctx, ent.id)).toBe(false);
  });

  it('tally secrets rotate seals the client secret again with the new key', async () => {
    const next = newSecretKey();
    const rotating = {
      ...h.ctx,
      config: loadConfig({ TALLY_SECRET_KEY: next, TALLY_SECRET_KEY_PREVIOUS: TEST_SECRET_KEY }),
    };
    expect(await resealSsoSecrets(rotating)).toEqual({ sealed: 1, unreadable: [] });
    const row = await h.storage.db.selectFrom('sso_connections').selectAll().executeTakeFirstOrThrow();
    expect(row.secret_key_id).toBe(secretKeyId(Buffer.from(next, 'base64')));
    const onlyNew = { ...h.ctx, config: loadConfig({ TALLY_SECRET_KEY: next }) };
    expect((await loadSsoConnection(onlyNew, ent.id))?.clientSecret).toBe(SECRET);
    expect(await resealSsoSecrets(onlyNew)).toEqual({ sealed: 0, unreadable: [] });
    const lost = { ...h.ctx, config: loadConfig({ TALLY_SECRET_KEY: newSecretKey() }) };
    expect(await resealSsoSecrets(lost)).toEqual({ sealed: 0, unreadable: [`sso:${ent.id}`] });
    // Back to the harness's key, for the tests after this one.
    expect(
      await resealSsoSecrets({
        ...h.ctx,
        config: loadConfig({ TALLY_SECRET_KEY: TEST_SECRET_KEY, TALLY_SECRET_KEY_PREVIOUS: next }),
      }),
    ).toEqual({ sealed: 1, unreadable: [] });
  });

  it('DELETE removes it (and audits it); passwords are allowed again', async () => {
    const res = await h.request({ method: 'DELETE', url: '/v1/sso', apiKey: ent.apiKey });
    expect(res.statusCode).toBe(204);
    expectError(await h.request({ method: 'GET', url: '/v1/sso', apiKey: ent.apiKey }), 404, 'not_found');
    expect(await passwordsAllowed(h.ctx, ent.id)).toBe(true);
    const removed = await h.storage.db
      .selectFrom('audit_log')
      .select('action')
      .where('org_id', '=', ent.id)
      .where('action', '=', 'sso.removed')
      .execute();
    expect(removed).toHaveLength(1);
  });
});
