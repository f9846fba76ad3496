import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, listApiKeys } from '../../src/orgs/api-keys.js';
import { ENGINES } from '../support/engines.js';
import { expectError } from '../support/errors.js';
import { createHarness, type Harness } from '../support/harness.js';

const TRACK = { agent_id: 'bot-1', task_type: 'support_ticket_reply', outcome: 'success' };

describe.each(ENGINES)('key scopes (%s)', (engine) => {
  let h: Harness;
  let ingest: string;
  beforeAll(async () => {
    h = await createHarness(engine);
    ingest = (await createApiKey({ ctx: h.ctx, orgId: h.org.id, name: 'agent', scope: 'ingest' })).api_key;
  });
  afterAll(async () => h.close());

  it('lets an ingest key track, batch-track and list task types', async () => {
    const one = await h.request({ method: 'POST', url: '/v1/track', payload: TRACK, apiKey: ingest });
    expect(one.statusCode).toBe(201);
    const batch = await h.request({
      method: 'POST',
      url: '/v1/track/batch',
      payload: { events: [TRACK] },
      apiKey: ingest,
    });
    expect(batch.statusCode).toBe(207);
    const types = await h.request({ method: 'GET', url: '/v1/task-types', apiKey: ingest });
    expect(types.statusCode).toBe(200);
  });

  it.each([
    ['GET', '/v1/reports/time-saved'],
    ['GET', '/v1/reports/usage'],
    ['GET', '/v1/events'],
    ['GET', '/v1/settings'],
    ['PATCH', '/v1/settings'],
    ['GET', '/v1/webhooks'],
    ['POST', '/v1/task-types'],
    ['DELETE', '/v1/task-types/support_ticket_reply/override'],
    ['GET', '/v1/audit-log'],
  ] as const)('answers 403 insufficient_scope to an ingest key on %s %s', async (method, url) => {
    const res = await h.request({ method, url, apiKey: ingest, payload: method === 'GET' ? undefined : {} });
    expectError(res, 403, 'insufficient_scope');
    // Checked before the rate limit: a refused call spends nothing of the key's budget.
    expect(res.headers['ratelimit-limit']).toBeUndefined();
  });

  it('authenticates before it checks the scope', async () => {
    // Another last character (a random key ending in x stayed valid, and the test failed 1 time in ~60).
    const forged = ingest.slice(0, -1) + (ingest.endsWith('x') ? 'y' : 'x');
    const res = await h.request({ method: 'GET', url: '/v1/events', apiKey: forged });
    expectError(res, 401, 'invalid_api_key');
  });

  it('keeps admin keys (and keys made before scopes) unrestricted', async () => {
    const res = await h.request({ method: 'GET', url: '/v1/events' });
    expect(res.statusCode).toBe(200);
  });

  it('lists each key with its scope', async () => {
    const keys = await listApiKeys({ ctx: h.ctx, orgId: h.org.id });
    expect(keys.find((k) => k.id === h.org.keyId)?.scope).toBe('admin');
    expect(keys.filter((k) => k.scope === 'ingest')).toHaveLength(1);
  });

  it('refuses an unknown scope', async () => {
    await expect(createApiKey({ ctx: h.ctx, orgId: h.org.id, scope: 'root' })).rejects.toMatchObject({
      code: 'validation_error',
    });
  });
});
