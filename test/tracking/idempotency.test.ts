import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { monthEvents, usageMonth } from '../../src/billing/usage-counter.js';
import { createApiKey } from '../../src/orgs/api-keys.js';
import { claimIdempotencyKey } from '../../src/tracking/idempotency.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness, type TestOrg } from '../support/harness.js';

const body = { agent_id: 'bot-1', task_type: 'dev_code_review', outcome: 'success' };
const HOUR = 60 * 60 * 1000;

describe.each(ENGINES)('Idempotency-Key on POST /v1/track (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine);
  });
  afterAll(async () => h.close());

  const track = (key: string | null, org: TestOrg = h.org, payload: object = body) =>
    h.request({
      method: 'POST',
      url: '/v1/track',
      apiKey: org.apiKey,
      payload,
      headers: key === null ? {} : { 'idempotency-key': key },
    });

  async function eventCount(orgId: string): Promise<number> {
    const row = await h.storage.db
      .selectFrom('events')
      .select(sql<number>`count(*)`.as('n'))
      .where('org_id', '=', orgId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Events counted this month, over every shard of the counter. */
  async function usage(orgId: string): Promise<number> {
    return monthEvents(h.storage.db, orgId, usageMonth(h.clock.now()));
  }

  it('answers a repeat with the original body, 201 and Idempotent-Replayed, creating nothing', async () => {
    const org = await h.createOrg();
    const first = await track('run-1', org);
    expect(first.statusCode).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    h.clock.advance(5_000);
    const again = await track('run-1', org, { ...body, outcome: 'failure' });
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toEqual(first.json());
    expect(await eventCount(org.id)).toBe(1);
    expect(await usage(org.id)).toBe(1);
  });

  it('is scoped to the organisation, not the API key', async () => {
    const org = await h.createOrg();
    const second = await createApiKey({ ctx: h.ctx, orgId: org.id, name: 'second' });
    const first = await track('shared', org);
    const viaOtherKey = await track('shared', { ...org, apiKey: second.api_key });
    expect(viaOtherKey.headers['idempotent-replayed']).toBe('true');
    expect(viaOtherKey.json().event_id).toBe(first.json().event_id);

    const stranger = await h.createOrg();
    const elsewhere = await track('shared', stranger);
    expect(elsewhere.headers['idempotent-replayed']).toBeUndefined();
    expect(elsewhere.json().event_id).not.toBe(first.json().event_id);
  });

  it('creates a new event for every call without the header', async () => {
    const org = await h.createOrg();
    const a = await track(null, org);
    const b = await track(null, org);
    expect(a.json().event_id).not.toBe(b.json().event_id);
    expect(await eventCount(org.id)).toBe(2);
  });

  it('holds the key for 24 hours, then frees it', async () => {
    const org = await h.createOrg();
    const first = await track('daily', org);
    h.clock.advance(24 * HOUR - 1);
    expect((await track('daily', org)).json().event_id).toBe(first.json().event_id);
    h.clock.advance(1);
    const fresh = await track('daily', org);
    expect(fresh.headers['idempotent-replayed']).toBeUndefined();
    expect(fresh.json().event_id).not.toBe(first.json().event_id);
    // The key now belongs to the new event for the next 24 hours.
    expect((await track('daily', org)).json().event_id).toBe(fresh.json().event_id);
  });

  it('frees the key when the first call failed, so a corrected retry succeeds', async () => {
    const org = await h.createOrg();
    const failed = await track('fix-me', org, { ...body, task_type: 'no_such_type' });
    expect(failed.statusCode).toBe(422);
    const retried = await track('fix-me', org);
    expect(retried.statusCode).toBe(201);
    expect(retried.headers['idempotent-replayed']).toBeUndefined();
  });

  it('creates exactly one event for many simultaneous first calls with one key', async () => {
    const org = await h.createOrg();
    const responses = await Promise.all(Array.from({ length: 40 }, () => track('burst', org)));
    expect(responses.map((r) => r.statusCode)).toEqual(Array(40).fill(201));
    const ids = new Set(responses.map((r) => r.json().event_id));
    expect(ids.size).toBe(1);
    expect(responses.filter((r) => r.headers['idempotent-replayed'] === 'true')).toHaveLength(39);
    expect(await eventCount(org.id)).toBe(1);
    expect(await usage(org.id)).toBe(1);
  });

  it('keeps organisations apart under a race: two organisations firing one key each get their own event', async () => {
    const [a, b] = [await h.createOrg(), await h.createOrg()];
    const fire = (org: TestOrg, agent: string) => track('shared-key', org, { ...body, agent_id: agent });
    const responses = await Promise.all(
      Array.from({ length: 30 }, (_, i) => (i % 2 === 0 ? fire(a, 'agent-of-a') : fire(b, 'agent-of-b'))),
    );
    expect(responses.map((r) => r.statusCode)).toEqual(Array(30).fill(201));
    for (const [org, agent, parity] of [
      [a, 'agent-of-a', 0],
      [b, 'agent-of-b', 1],
    ] as const) {
      const own = responses.filter((_r, i) => i % 2 === parity).map((r) => r.json());
      expect(new Set(own.map((e) => e.event_id)).size).toBe(1);
      expect(own.every((e) => e.agent_id === agent)).toBe(true);
      const fetched = await h.request({
        method: 'GET',
        url: `/v1/events/${own[0].event_id}`,
        apiKey: org.apiKey,
      });
      expect(fetched.statusCode).toBe(200);
      expect(await eventCount(org.id)).toBe(1);
    }
  });

  it('a claim that loses a race sees the holder of its own organisation only', async () => {
    // The claim's fallback read runs when another transaction committed the key meanwhile; here
    // both organisations hold the key, and each losing claim must find its own event.
    const [a, b] = [await h.createOrg(), await h.createOrg()];
    const now = h.clock.now().getTime();
    const db = h.storage.db;
    expect(await claimIdempotencyKey(db, a.id, 'raced', 'evt_a', now)).toBeNull();
    expect(await claimIdempotencyKey(db, b.id, 'raced', 'evt_b', now)).toBeNull();
    expect(await claimIdempotencyKey(db, b.id, 'raced', 'evt_b2', now)).toBe('evt_b');
    expect(await claimIdempotencyKey(db, a.id, 'raced', 'evt_a2', now)).toBe('evt_a');
  });

  it('replays the original even when the Free plan cap is reached, without counting it', async () => {
    const org = await h.createOrg({ plan: 'free' });
    const first = await track('before-cap', org);
    expect(first.statusCode).toBe(201);
    await h.storage.db
      .updateTable('usage_monthly')
      .set({ events: h.config.plans.free.included_events_per_month })
      .where('org_id', '=', org.id)
      .execute();
    const capped = await track(null, org);
    expect(capped.statusCode).toBe(429);
    expect(capped.json().error.code).toBe('quota_exceeded');
    const replay = await track('before-cap', org);
    expect(replay.statusCode).toBe(201);
    expect(replay.json()).toEqual(first.json());
    expect(await usage(org.id)).toBe(h.config.plans.free.included_events_per_month);
  });
});
