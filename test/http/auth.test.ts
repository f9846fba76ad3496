import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { organizationOfKey, revokeApiKey } from '../../src/orgs/api-keys.js';
import { ENGINES } from '../support/engines.js';
import { expectError, REQUEST_ID } from '../support/errors.js';
import { createHarness, type Harness } from '../support/harness.js';

const TRACK = { agent_id: 'bot-1', task_type: 'support_ticket_reply', outcome: 'success' };
const KEY_SHAPE = /^tally_live_([A-Za-z0-9]{8})_([A-Za-z0-9]{48})$/;

describe.each(ENGINES)('authentication (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine);
  });
  afterAll(async () => h.close());

  it('accepts the organisation key and marks every response with X-Request-Id', async () => {
    const res = await h.request({ method: 'POST', url: '/v1/track', payload: TRACK });
    expect(res.statusCode).toBe(201);
    expect(res.headers['x-request-id']).toMatch(REQUEST_ID);
    const health = await h.request({ method: 'GET', url: '/healthz', apiKey: null });
    expect(health.statusCode).toBe(200);
    expect(health.headers['x-request-id']).toMatch(REQUEST_ID);
    expect(health.headers['x-request-id']).not.toBe(res.headers['x-request-id']);
  });

  it('issues keys of the shape tally_live_<8>_<48> whose id is the 8-character part', async () => {
    const other = await h.createOrg();
    for (const org of [h.org, other]) {
      const match = KEY_SHAPE.exec(org.apiKey);
      expect(match?.[1]).toBe(org.keyId);
    }
    expect(other.apiKey).not.toBe(h.org.apiKey);
  });

  it('answers 401 missing_authorization without an Authorization header', async () => {
    const res = await h.request({ method: 'POST', url: '/v1/track', payload: TRACK, apiKey: null });
    expectError(res, 401, 'missing_authorization');
  });

  it('answers 401 missing_authorization for an empty Authorization header', async () => {
    const res = await h.request({
      method: 'GET',
      url: '/v1/events',
      apiKey: null,
      headers: { authorization: '' },
    });
    expectError(res, 401, 'missing_authorization');
  });

  it.each([
    ['Basic credentials', `Basic ${Buffer.from('user:pass').toString('base64')}`],
    ['a garbage bearer token', 'Bearer garbage'],
    ['the key without the Bearer scheme', 'KEY'],
    ['a bearer with two tokens', 'Bearer KEY extra'],
    ['a well-shaped unknown key', `Bearer tally_live_ABCDEFGH_${'x'.repeat(48)}`],
    ['a test-mode prefix', 'Bearer tally_test_ABCDEFGH_' + 'x'.repeat(48)],
    ['a key with a 47-character secret', 'Bearer tally_live_ABCDEFGH_' + 'x'.repeat(47)],
    ['a key with a non-alphanumeric secret', 'Bearer tally_live_ABCDEFGH_' + '-'.repeat(48)],
  ])('answers 401 invalid_api_key for %s', async (_name, header) => {
    const value = header.replace('KEY', h.org.apiKey);
    const res = await h.request({
      method: 'GET',
      url: '/v1/events',
      apiKey: null,
      headers: { authorization: value },
    });
    expectError(res, 401, 'invalid_api_key');
  });

  it('answers 401 invalid_api_key for the right key id with a wrong secret', async () => {
    const match = KEY_SHAPE.exec(h.org.apiKey);
    const secret = match?.[2] ?? '';
    const flipped = (secret[0] === 'a' ? 'b' : 'a') + secret.slice(1);
    const forged = `tally_live_${h.org.keyId}_${flipped}`;
    const res = await h.request({ method: 'POST', url: '/v1/track', payload: TRACK, apiKey: forged });
    const error = expectError(res, 401, 'invalid_api_key');
    // The same answer as an unknown key: nothing tells an attacker the key id exists.
    const unknown = await h.request({
      method: 'POST',
      url: '/v1/track',
      payload: TRACK,
      apiKey: `tally_live_ZZZZZZZZ_${secret}`,
    });
    expect(expectError(unknown, 401, 'invalid_api_key').message).toBe(error.message);
  });

  it('accepts the scheme case-insensitively, as RFC 7235 asks', async () => {
    const res = await h.request({
      method: 'GET',
      url: '/v1/events',
      apiKey: null,
      headers: { authorization: `bearer ${h.org.apiKey}` },
    });
    expect(res.statusCode).toBe(200);
  });

  it('answers 401 key_revoked once the key is revoked, and other keys keep working', async () => {
    const org = await h.createOrg();
    const before = await h.request({ method: 'GET', url: '/v1/events', apiKey: org.apiKey });
    expect(before.statusCode).toBe(200);
    await revokeApiKey({ ctx: h.ctx, orgId: org.id, keyId: org.keyId });
    const res = await h.request({ method: 'POST', url: '/v1/track', payload: TRACK, apiKey: org.apiKey });
    expectError(res, 401, 'key_revoked');
    // A revoked key with a wrong secret is still just unknown: revocation is not revealed.
    const forged = org.apiKey.slice(0, -1) + (org.apiKey.endsWith('a') ? 'b' : 'a');
    expectError(
      await h.request({ method: 'GET', url: '/v1/events', apiKey: forged }),
      401,
      'invalid_api_key',
    );
    expect((await h.request({ method: 'GET', url: '/v1/events' })).statusCode).toBe(200);
  });

  it('revokes a key only within its organisation, with an audit entry', async () => {
    const [org, other] = [await h.createOrg(), await h.createOrg()];
    await expect(revokeApiKey({ ctx: h.ctx, orgId: other.id, keyId: org.keyId })).rejects.toMatchObject({
      code: 'not_found',
    });
    const stillWorks = await h.request({ method: 'GET', url: '/v1/events', apiKey: org.apiKey });
    expect(stillWorks.statusCode).toBe(200);

    expect(await organizationOfKey({ ctx: h.ctx, keyId: org.keyId })).toBe(org.id);
    const revoked = await revokeApiKey({ ctx: h.ctx, orgId: org.id, keyId: org.keyId, actorKeyId: null });
    expect(revoked).toMatchObject({ id: org.keyId, revoked_at: h.clock.now().toISOString() });
    // Revoking again changes nothing and records nothing more.
    await revokeApiKey({ ctx: h.ctx, orgId: org.id, keyId: org.keyId });
    const entries = await h.storage.db
      .selectFrom('audit_log')
      .selectAll()
      .where('org_id', 'in', [org.id, other.id])
      .execute();
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      org_id: org.id,
      action: 'api_key.revoked',
      target: `api_key:${org.keyId}`,
      actor_key_id: null,
    });
    expect(JSON.parse(entries[0]?.before ?? 'null')).toMatchObject({ revoked_at: null });
    expect(JSON.parse(entries[0]?.after ?? 'null')).toMatchObject({ revoked_at: revoked.revoked_at });
  });

  it('stores keys only as SHA-256 hashes', async () => {
    const org = await h.createOrg();
    const row = await h.storage.db
      .selectFrom('api_keys')
      .selectAll()
      .where('id', '=', org.keyId)
      .executeTakeFirstOrThrow();
    expect(row.key_hash).toMatch(/^[0-9a-f]{64}$/);
    const secret = KEY_SHAPE.exec(org.apiKey)?.[2] ?? '';
    expect(secret).toHaveLength(48);
    for (const value of Object.values(row)) {
      expect(String(value)).not.toContain(secret);
    }
  });

  it("does not let a key of one organisation read another organisation's event", async () => {
    const orgA = await h.createOrg();
    const orgB = await h.createOrg();
    const created = await h.request({
      method: 'POST',
      url: '/v1/track',
      payload: TRACK,
      apiKey: orgB.apiKey,
    });
    expect(created.statusCode).toBe(201);
    const eventId = created.json<{ event_id: string }>().event_id;

    expect(
      (await h.request({ method: 'GET', url: `/v1/events/${eventId}`, apiKey: orgB.apiKey })).statusCode,
    ).toBe(200);
    const res = await h.request({ method: 'GET', url: `/v1/events/${eventId}`, apiKey: orgA.apiKey });
    expectError(res, 404, 'not_found');
    const list = await h.request({ method: 'GET', url: '/v1/events', apiKey: orgA.apiKey });
    expect(list.json<{ data: unknown[] }>().data).toEqual([]);
  });

  it('answers a 401 before looking at the body or the route method', async () => {
    const res = await h.request({
      method: 'POST',
      url: '/v1/track',
      apiKey: null,
      headers: { 'content-type': 'application/json' },
      payload: '{not json',
    });
    expectError(res, 401, 'missing_authorization');
  });
});
