import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { MemoryRateLimiter, type RateLimiter } from '../../src/http/rate-limit.js';
import { buildApp } from '../../src/app.js';
import { openStorage } from '../../src/storage/db.js';
import { createTestStorage, ENGINES } from '../support/engines.js';
import { expectError } from '../support/errors.js';
import { createHarness, type Harness } from '../support/harness.js';

const TRACK = { agent_id: 'bot-1', task_type: 'support_ticket_reply', outcome: 'success' };
const OVERSIZED = JSON.stringify({ ...TRACK, metadata: { blob: 'x'.repeat(70 * 1024) } });
const JSON_HEADERS = { 'content-type': 'application/json' };

/** A limiter whose budget is always spent: every request is over the rate. */
const exhaustedLimiter: RateLimiter = {
  consume: async (_bucket, limit) => ({ granted: 0, limit, remaining: 0, resetSeconds: 1 }),
  close: async () => undefined,
};

describe.each(ENGINES)('HTTP error mapping (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine);
  });
  afterAll(async () => h.close());

  it('answers 400 invalid_json for a body that is not JSON', async () => {
    const res = await h.request({
      method: 'POST',
      url: '/v1/track',
      headers: JSON_HEADERS,
      payload: '{"agent_id": ',
    });
    expectError(res, 400, 'invalid_json');
  });

  it('answers 400 invalid_json for an empty JSON body', async () => {
    const res = await h.request({ method: 'POST', url: '/v1/track', headers: JSON_HEADERS, payload: '' });
    expectError(res, 400, 'invalid_json');
  });

  it('answers 415 unsupported_media_type for Content-Type: text/plain', async () => {
    const res = await h.request({
      method: 'POST',
      url: '/v1/track',
      headers: { 'content-type': 'text/plain' },
      payload: JSON.stringify(TRACK),
    });
    expectError(res, 415, 'unsupported_media_type');
  });

  it('answers 413 payload_too_large for a body over 64 KiB', async () => {
    const res = await h.request({
      method: 'POST',
      url: '/v1/track',
      headers: JSON_HEADERS,
      payload: OVERSIZED,
    });
    expectError(res, 413, 'payload_too_large');
  });

  it('accepts a body just under 64 KiB as far as the size check goes', async () => {
    // metadata itself is capped at 16 KiB, so this passes the size check and fails validation.
    const body = JSON.stringify({ ...TRACK, metadata: { blob: 'x'.repeat(60 * 1024) } });
    expect(Buffer.byteLength(body)).toBeLessThan(64 * 1024);
    const res = await h.request({ method: 'POST', url: '/v1/track', headers: JSON_HEADERS, payload: body });
    expect(res.statusCode).not.toBe(413);
  });

  it('answers 404 not_found in the error shape for an unknown route', async () => {
    const res = await h.request({ method: 'GET', url: '/v1/nothing-here?x=1' });
    const error = expectError(res, 404, 'not_found');
    expect(error.message).toContain('/v1/nothing-here');
    expect(error.message).not.toContain('x=1');
  });

  it('answers 404 not_found for an unknown event id', async () => {
    expectError(
      await h.request({ method: 'GET', url: '/v1/events/evt_01KNOWN0000000000000000000' }),
      404,
      'not_found',
    );
  });

  it('answers 422 validation_error naming an unknown body field', async () => {
    const res = await h.request({ method: 'POST', url: '/v1/track', payload: { ...TRACK, colour: 'red' } });
    const error = expectError(res, 422, 'validation_error');
    expect(error.details).toContainEqual({ path: '/body/colour', message: expect.any(String) });
  });

  it('answers 422 naming every bad field, including a missing one', async () => {
    const res = await h.request({
      method: 'POST',
      url: '/v1/track',
      payload: { agent_id: 'bot-1', outcome: 'maybe', tokens_in: 1.5 },
    });
    const error = expectError(res, 422, 'validation_error');
    const paths = (error.details as { path: string }[]).map((d) => d.path);
    expect(paths).toEqual(expect.arrayContaining(['/body/task_type', '/body/outcome', '/body/tokens_in']));
  });

  it('answers 422 for a JSON body that is not an object', async () => {
    const res = await h.request({
      method: 'POST',
      url: '/v1/track',
      headers: JSON_HEADERS,
      payload: '[1,2]',
    });
    expectError(res, 422, 'validation_error');
  });

  it('answers 422 naming /headers/idempotency-key for a bad Idempotency-Key', async () => {
    const res = await h.request({
      method: 'POST',
      url: '/v1/track',
      payload: TRACK,
      headers: { 'idempotency-key': 'k'.repeat(256) },
    });
    const error = expectError(res, 422, 'validation_error');
    expect(error.details).toContainEqual({ path: '/headers/idempotency-key', message: expect.any(String) });
  });

  describe('order of checks (DESIGN §2)', () => {
    it('authenticates before reading the body: a bad key with an oversized body is 401', async () => {
      const res = await h.request({
        method: 'POST',
        url: '/v1/track',
        apiKey: 'garbage',
        headers: JSON_HEADERS,
        payload: OVERSIZED,
      });
      expectError(res, 401, 'invalid_api_key');
    });

    it('authenticates before the media type: no key with text/plain is 401', async () => {
      const res = await h.request({
        method: 'POST',
        url: '/v1/track',
        apiKey: null,
        headers: { 'content-type': 'text/plain' },
        payload: 'hello',
      });
      expectError(res, 401, 'missing_authorization');
    });

    it('answers a body shorter than its Content-Length with 400 invalid_json', async () => {
      const res = await h.request({
        method: 'POST',
        url: '/v1/track',
        headers: { ...JSON_HEADERS, 'content-length': '500' },
        payload: '{"agent_id":"a"}',
      });
      expectError(res, 400, 'invalid_json');
    });

    it('checks size, media type and JSON before validation', async () => {
      const res = await h.request({
        method: 'POST',
        url: '/v1/track',
        headers: { ...JSON_HEADERS, 'idempotency-key': 'k'.repeat(300) },
        payload: '{oops',
      });
      expectError(res, 400, 'invalid_json');
    });

    it('rate-limits before reading the body: over the rate with invalid JSON is 429', async () => {
      const limited = await createHarness(engine, { rateLimiter: exhaustedLimiter });
      try {
        const res = await limited.request({
          method: 'POST',
          url: '/v1/track',
          headers: JSON_HEADERS,
          payload: '{oops',
        });
        expectError(res, 429, 'rate_limited');
        expect(res.headers['retry-after']).toBe('1');
        const oversized = await limited.request({
          method: 'POST',
          url: '/v1/track',
          headers: JSON_HEADERS,
          payload: OVERSIZED,
        });
        expectError(oversized, 429, 'rate_limited');
      } finally {
        await limited.close();
      }
    });

    it('plan-gates before reading the body: Free on POST /v1/task-types is 403 whatever the body', async () => {
      const free = await h.createOrg({ plan: 'free' });
      const pro = await h.createOrg({ plan: 'pro' });
      const send = (apiKey: string, payload: string) =>
        h.request({ method: 'POST', url: '/v1/task-types', apiKey, headers: JSON_HEADERS, payload });
      const error = expectError(await send(free.apiKey, '{oops'), 403, 'plan_upgrade_required');
      expect(error.message).toContain('Pro');
      expectError(await send(free.apiKey, OVERSIZED), 403, 'plan_upgrade_required');
      // Past the gate the body is read and checked as usual.
      expectError(await send(pro.apiKey, '{oops'), 400, 'invalid_json');
      expect((await send(pro.apiKey, '{}')).json().error.code).toBe('validation_error');
    });
  });

  it('answers 500 internal_error without leaking the cause', async () => {
    const broken = await createHarness(engine);
    try {
      // A broken schema is a bug, not an outage: it must be a 500, and say nothing about why.
      await sql`DROP TABLE events`.execute(broken.storage.db);
      const res = await broken.request({ method: 'GET', url: '/v1/events' });
      const error = expectError(res, 500, 'internal_error');
      expect(res.body).not.toMatch(/events|relation|table|sql|stack/i);
      expect(error.message).toBe('Something went wrong on our side.');
    } finally {
      await broken.close();
    }
  });
});

describe.each(ENGINES)('database unreachable (%s)', (engine) => {
  it('answers 503 service_unavailable with Retry-After', async () => {
    const config = loadConfig({ TALLY_LOG_LEVEL: 'silent' });
    const clock = new ManualClock('2026-11-20T12:00:00.000Z');
    // PostgreSQL: nothing listens on port 1, so every connection is refused. SQLite has no
    // server; the nearest outage is a database closed under the running app.
    const storage =
      engine === 'postgres'
        ? openStorage('postgres://postgres@127.0.0.1:1/test', { poolSize: 1 })
        : await createTestStorage('sqlite');
    if (engine === 'sqlite') await storage.close();
    const app = await buildApp(
      { storage, config, clock, rateLimiter: new MemoryRateLimiter() },
      { logger: false },
    );
    try {
      const key = `tally_live_ABCDEFGH_${'x'.repeat(48)}`;
      const res = await app.inject({
        method: 'POST',
        url: '/v1/track',
        headers: { authorization: `Bearer ${key}` },
        payload: TRACK,
      });
      const error = expectError(res, 503, 'service_unavailable');
      expect(res.headers['retry-after']).toMatch(/^\d+$/);
      expect(error.message).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|destroyed/);
    } finally {
      await app.close();
      if (engine === 'postgres') await storage.close();
    }
  });
});
