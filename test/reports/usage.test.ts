import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { unlimited } from './unlimited.js';
import { tempFile } from '../support/temp.js';

const PLANS = {
  free: {
    track_rate_per_second: 60,
    other_rate_per_second: 20,
    included_events_per_month: 3,
    hard_cap: true,
    overage_tiers: [],
  },
  pro: {
    track_rate_per_second: 200,
    other_rate_per_second: 50,
    included_events_per_month: 2,
    hard_cap: false,
    overage_tiers: [
      { up_to: 10, unit_price_eur: 0.5 },
      { up_to: null, unit_price_eur: 0.25 },
    ],
  },
  enterprise: {
    track_rate_per_second: 1000,
    other_rate_per_second: 100,
    included_events_per_month: 5,
    hard_cap: false,
    overage_tiers: [],
  },
};

describe.each(ENGINES)('GET /v1/reports/usage (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    const file = tempFile('tally-plans-', 'plans.json', JSON.stringify(PLANS));
    h = await createHarness(engine, {
      now: '2026-10-31T23:00:00.000Z',
      env: { TALLY_PLANS_FILE: file },
      rateLimiter: unlimited,
    });
  });
  afterAll(async () => h.close());

  const track = (occurred_at?: string) =>
    h.request({
      method: 'POST',
      url: '/v1/track',
      payload: {
        agent_id: 'a',
        task_type: 'dev_bug_fix',
        outcome: 'success',
        ...(occurred_at ? { occurred_at } : {}),
      },
    });

  it('counts the calendar month by receipt, with overage, lifetime and the projection', async () => {
    expect((await track()).statusCode).toBe(201); // October
    h.clock.set('2026-11-01T06:00:00.000Z');
    // Dated in October but received in November: counts for November.
    for (let i = 0; i < 3; i++) expect((await track('2026-10-30T10:00:00.000Z')).statusCode).toBe(201);
    const res = await h.request({ method: 'GET', url: '/v1/reports/usage' });
    expect(res.statusCode).toBe(200);
    // 3 events in the first 6 h count as one day: 3 × 30 = 90 projected, 88 overage:
    // 10 × €0.50 + 78 × €0.25 = €24.50.
    expect(res.json()).toEqual({
      plan: 'pro',
      currency: 'EUR',
      month: '2026-11',
      events_this_month: 3,
      events_included_in_plan: 2,
      overage_events: 1,
      lifetime_events: 4,
      projected_overage_eur: 24.5,
    });
  });

  it('is null when no overage is forecast or the plan has no overage pricing', async () => {
    h.clock.set('2026-11-20T00:00:00.000Z');
    const enterprise = await h.createOrg({ plan: 'enterprise' });
    const res = await h.request({ method: 'GET', url: '/v1/reports/usage', apiKey: enterprise.apiKey });
    expect(res.json()).toMatchObject({
      events_this_month: 0,
      overage_events: 0,
      lifetime_events: 0,
      projected_overage_eur: null,
    });
    const free = await h.createOrg({ plan: 'free' });
    const freeUsage = await h.request({ method: 'GET', url: '/v1/reports/usage', apiKey: free.apiKey });
    expect(freeUsage.json()).toMatchObject({
      plan: 'free',
      events_included_in_plan: 3,
      projected_overage_eur: null,
    });
  });

  it('sums every shard of the month, and every month for the lifetime count', async () => {
    h.clock.set('2026-11-20T00:00:00.000Z');
    const org = await h.createOrg({ plan: 'enterprise' });
    await h.storage.db
      .insertInto('usage_monthly')
      .values([
        { org_id: org.id, month: '2026-09', shard: 0, events: 1_000_000 },
        { org_id: org.id, month: '2026-10', shard: 3, events: 7 },
        { org_id: org.id, month: '2026-11', shard: 0, events: 4 },
        { org_id: org.id, month: '2026-11', shard: 1, events: 5 },
        { org_id: org.id, month: '2026-11', shard: 7, events: 6 },
        { org_id: org.id, month: '2026-12', shard: 0, events: 2 },
      ])
      .execute();
    const res = await h.request({ method: 'GET', url: '/v1/reports/usage', apiKey: org.apiKey });
    expect(res.json()).toMatchObject({
      events_this_month: 15,
      overage_events: 10,
      lifetime_events: 1_000_024,
    });
  });
});
