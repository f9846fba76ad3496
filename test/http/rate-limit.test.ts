import { randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PLANS, type PlanTable } from '../../src/billing/plans.js';
import { RedisRateLimiter, type RateLimiter } from '../../src/http/rate-limit.js';
import { buildApp } from '../../src/app.js';
import { createApiKey } from '../../src/orgs/api-keys.js';
import { ENGINES } from '../support/engines.js';
import { expectError } from '../support/errors.js';
import { createHarness, type Harness } from '../support/harness.js';
import { tempFile } from '../support/temp.js';

const REDIS_URL = process.env.TALLY_TEST_REDIS_URL;
const TRACK = { agent_id: 'bot-1', task_type: 'support_ticket_reply', outcome: 'success' };

/** A small plan table, so running a window dry takes a handful of requests. */
const SMALL_PLANS: PlanTable = {
  free: { ...DEFAULT_PLANS.free, track_rate_per_second: 3, other_rate_per_second: 2 },
  pro: { ...DEFAULT_PLANS.pro, track_rate_per_second: 5, other_rate_per_second: 4 },
  enterprise: { ...DEFAULT_PLANS.enterprise, track_rate_per_second: 10, other_rate_per_second: 6 },
};

let plansFile: string;
beforeAll(() => {
  plansFile = tempFile('tally-plans-', 'plans.json', JSON.stringify(SMALL_PLANS));
});

function track(h: Harness, apiKey?: string) {
  return h.request({ method: 'POST', url: '/v1/track', payload: TRACK, ...(apiKey ? { apiKey } : {}) });
}

function statuses(responses: LightMyRequestResponse[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const res of responses) counts[res.statusCode] = (counts[res.statusCode] ?? 0) + 1;
  return counts;
}

function expectRateHeaders(res: LightMyRequestResponse, limit: number, remaining: number) {
  expect(res.headers['ratelimit-limit']).toBe(String(limit));
  expect(res.headers['ratelimit-remaining']).toBe(String(remaining));
  expect(res.headers['ratelimit-reset']).toBe('1');
}

describe.each(ENGINES)('rate limits at the default plan table (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, { plan: 'pro' });
  });
  afterAll(async () => h.close());

  it('lets 200 track requests of a Pro key through in one second and limits the 201st', async () => {
    const responses = await Promise.all(Array.from({ length: 200 }, () => track(h)));
    expect(statuses(responses)).toEqual({ 201: 200 });
    const remaining = responses.map((r) => Number(r.headers['ratelimit-remaining'])).sort((a, b) => a - b);
    expect(remaining).toEqual(Array.from({ length: 200 }, (_, i) => i));

    const limited = await track(h);
    expectError(limited, 429, 'rate_limited');
    expect(limited.headers['retry-after']).toBe('1');
    expectRateHeaders(limited, 200, 0);

    h.clock.advance(1000);
    const next = await track(h);
    expect(next.statusCode).toBe(201);
    expectRateHeaders(next, 200, 199);
  });

  it('limits a Free key at 60 track and 20 other requests per second', async () => {
    const free = await h.createOrg({ plan: 'free' });
    const tracked = await Promise.all(Array.from({ length: 61 }, () => track(h, free.apiKey)));
    expect(statuses(tracked)).toEqual({ 201: 60, 429: 1 });
    expect(tracked.every((r) => r.headers['ratelimit-limit'] === '60')).toBe(true);

    // The other endpoints have their own, smaller budget, untouched by the track calls.
    const listed = await Promise.all(
      Array.from({ length: 21 }, () =>
        h.request({ method: 'GET', url: '/v1/events?limit=1', apiKey: free.apiKey }),
      ),
    );
    expect(statuses(listed)).toEqual({ 200: 20, 429: 1 });
    expect(listed.every((r) => r.headers['ratelimit-limit'] === '20')).toBe(true);
  });
});

describe.each(ENGINES)('rate limits with a small plan table (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, { plan: 'pro', env: { TALLY_PLANS_FILE: plansFile } });
  });
  afterAll(async () => h.close());

  it('counts down RateLimit-Remaining on every authenticated response, errors included', async () => {
    h.clock.advance(1000);
    expectRateHeaders(await track(h), 5, 4);
    const invalid = await h.request({
      method: 'POST',
      url: '/v1/track',
      payload: { ...TRACK, outcome: 'maybe' },
    });
    expectError(invalid, 422, 'validation_error');
    expectRateHeaders(invalid, 5, 3);
    const unknown = await h.request({ method: 'GET', url: '/v1/events/evt_01KNOWN0000000000000000000' });
    expectError(unknown, 404, 'not_found');
    expectRateHeaders(unknown, 4, 3);
    expectRateHeaders(await h.request({ method: 'GET', url: '/v1/settings' }), 4, 2);
  });

  it('gives each API key its own budget, even within one organisation', async () => {
    h.clock.advance(1000);
    const second = await createApiKey({ ctx: h.ctx, orgId: h.org.id });
    for (let i = 0; i < 5; i++) expect((await track(h)).statusCode).toBe(201);
    expectError(await track(h), 429, 'rate_limited');
    const other = await track(h, second.api_key);
    expect(other.statusCode).toBe(201);
    expectRateHeaders(other, 5, 4);
  });

  it('opens a new window when the clock moves into the next second, not before', async () => {
    h.clock.advance(1000 - (h.clock.now().getTime() % 1000));
    for (let i = 0; i < 5; i++) expect((await track(h)).statusCode).toBe(201);
    h.clock.advance(999);
    expectError(await track(h), 429, 'rate_limited');
    h.clock.advance(1);
    expect((await track(h)).statusCode).toBe(201);
  });

  it('does not rate-limit unauthenticated requests or let them spend a key budget', async () => {
    h.clock.advance(1000);
    for (let i = 0; i < 10; i++) {
      const res = await h.request({ method: 'POST', url: '/v1/track', payload: TRACK, apiKey: 'nope' });
      expectError(res, 401, 'invalid_api_key');
      expect(res.headers['ratelimit-limit']).toBeUndefined();
    }
    expectRateHeaders(await track(h), 5, 4);
  });

  it('follows the plan: set-plan to enterprise raises the limit at once', async () => {
    h.clock.advance(1000);
    const org = await h.createOrg({ plan: 'free' });
    expectRateHeaders(await track(h, org.apiKey), 3, 2);
    await h.storage.db
      .updateTable('organizations')
      .set({ plan: 'enterprise' })
      .where('id', '=', org.id)
      .execute();
    expectRateHeaders(await track(h, org.apiKey), 10, 8);
  });

  it('counts each event of a batch toward the track rate and admits a batch partly', async () => {
    h.clock.advance(1000);
    const res = await h.request({
      method: 'POST',
      url: '/v1/track/batch',
      payload: { events: Array.from({ length: 7 }, () => TRACK) },
    });
    expect(res.statusCode).toBe(207);
    const data = res.json<{ data: { status: number; error?: { code: string } }[] }>().data;
    expect(data.map((d) => d.status)).toEqual([201, 201, 201, 201, 201, 429, 429]);
    expect(data[6]?.error?.code).toBe('rate_limited');
    expectError(await track(h), 429, 'rate_limited');
    const again = await h.request({ method: 'POST', url: '/v1/track/batch', payload: { events: [TRACK] } });
    expectError(again, 429, 'rate_limited');
    expect(again.headers['retry-after']).toBe('1');
  });
});

describe.each(ENGINES)('a failing rate limiter (%s)', (engine) => {
  /** `withHeaders`: the Redis limiter fails open itself, with the headers of a window of one request. */
  async function expectFailOpen(rateLimiter: RateLimiter, withHeaders = false) {
    const h = await createHarness(engine, { env: { TALLY_PLANS_FILE: plansFile }, rateLimiter });
    try {
      // Well over the Pro track rate of 5: an unavailable limiter must not take tracking down.
      const responses = await Promise.all(Array.from({ length: 8 }, () => track(h)));
      expect(statuses(responses)).toEqual({ 201: 8 });
      expect(responses[0]?.headers['ratelimit-limit']).toBe(withHeaders ? '5' : undefined);
      expect((await h.request({ method: 'GET', url: '/v1/events?limit=1' })).statusCode).toBe(200);
    } finally {
      await h.close();
      await rateLimiter.close();
    }
  }

  it('lets requests through when the limiter throws', async () => {
    await expectFailOpen({
      consume: async () => {
        throw new Error('limiter down');
      },
      close: async () => undefined,
    });
  });

  it('lets requests through when Redis cannot be reached', async () => {
    await expectFailOpen(
      new RedisRateLimiter('redis://127.0.0.1:1', {
        prefix: `tally:test:${randomBytes(6).toString('hex')}:`,
      }),
      true,
    );
  });
});

describe.skipIf(!REDIS_URL)('rate limits shared through Redis', () => {
  describe.each(ENGINES)('%s', (engine) => {
    it('limits one API key together across two app instances', async () => {
      const url = REDIS_URL ?? '';
      const prefix = `tally:test:${randomBytes(6).toString('hex')}:`;
      // A loaded machine can stall past the default 300 ms, and the limiter then fails open: this
      // test is about the shared window, not the timeout (redis-outage.test.ts covers that).
      const limiterA = new RedisRateLimiter(url, { prefix, timeoutMs: 10_000 });
      const limiterB = new RedisRateLimiter(url, { prefix, timeoutMs: 10_000 });
      const h = await createHarness(engine, { env: { TALLY_PLANS_FILE: plansFile }, rateLimiter: limiterA });
      // A second instance of the service on the same database, with its own Redis connection.
      const appB = await buildApp(
        { storage: h.storage, config: h.config, clock: h.clock, rateLimiter: limiterB },
        { logger: false },
      );
      const trackOn = (which: 'A' | 'B') =>
        which === 'A'
          ? track(h)
          : appB.inject({
              method: 'POST',
              url: '/v1/track',
              headers: { authorization: `Bearer ${h.org.apiKey}` },
              payload: TRACK,
            });
      try {
        const order = ['A', 'B', 'A', 'B', 'A', 'B', 'A'] as const;
        const responses: LightMyRequestResponse[] = [];
        for (const which of order) responses.push(await trackOn(which));
        expect(responses.map((r) => r.statusCode)).toEqual([201, 201, 201, 201, 201, 429, 429]);
        expect(responses.map((r) => r.headers['ratelimit-remaining'])).toEqual([
          '4',
          '3',
          '2',
          '1',
          '0',
          '0',
          '0',
        ]);

        // Another key has its own window in Redis too.
        const other = await h.createOrg();
        expect((await track(h, other.apiKey)).statusCode).toBe(201);

        h.clock.advance(1000);
        expect((await trackOn('B')).statusCode).toBe(201);
        expect((await trackOn('A')).statusCode).toBe(201);
      } finally {
        await appB.close();
        await h.close();
        await limiterA.close();
        await limiterB.close();
      }
    });
  });
});
