import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PLANS } from '../../src/billing/plans.js';
import { monthEvents } from '../../src/billing/usage-counter.js';
import { setPlan } from '../../src/orgs/organizations.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness, type TestOrg } from '../support/harness.js';
import { tempFile } from '../support/temp.js';

/** A plan table with a Free cap of 3, through TALLY_PLANS_FILE. */
function plansFile(): string {
  return tempFile(
    'tally-plans-',
    'plans.json',
    JSON.stringify({ ...DEFAULT_PLANS, free: { ...DEFAULT_PLANS.free, included_events_per_month: 3 } }),
  );
}

const body = { agent_id: 'bot', task_type: 'ops_expense_review', outcome: 'success' };

describe.each(ENGINES)('Free plan monthly cap (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, {
      plan: 'free',
      now: '2026-11-30T23:59:00.000Z',
      env: { TALLY_PLANS_FILE: plansFile() },
    });
  });
  afterAll(async () => h.close());

  const track = (org: TestOrg, payload: object = body) =>
    h.request({ method: 'POST', url: '/v1/track', apiKey: org.apiKey, payload });

  it('refuses the event past the cap with 429 quota_exceeded, and counts by month of receipt', async () => {
    h.clock.set('2026-11-30T23:59:00.000Z');
    const org = await h.createOrg({ plan: 'free' });
    for (let i = 0; i < 3; i++) expect((await track(org)).statusCode).toBe(201);
    const refused = await track(org);
    expect(refused.statusCode).toBe(429);
    expect(refused.json().error.code).toBe('quota_exceeded');
    expect(refused.headers['retry-after']).toBeUndefined();

    // occurred_at in December does not help: the month counts by receipt.
    const future = await track(org, { ...body, occurred_at: '2026-12-01T10:00:00.000Z' });
    expect(future.json().error?.code).toBe('quota_exceeded');

    h.clock.set('2026-12-01T00:00:00.000Z');
    expect((await track(org)).statusCode).toBe(201);
  });

  it('checks business rules before the quota', async () => {
    h.clock.set('2026-11-30T23:59:00.000Z');
    const org = await h.createOrg({ plan: 'free' });
    for (let i = 0; i < 3; i++) await track(org);
    const unknown = await track(org, { ...body, task_type: 'nothing_like_it' });
    expect(unknown.json().error.code).toBe('unknown_task_type');
  });

  it('admits a batch up to the cap and refuses the rest one by one', async () => {
    h.clock.set('2026-11-15T10:00:00.000Z');
    const org = await h.createOrg({ plan: 'free' });
    const res = await h.request({
      method: 'POST',
      url: '/v1/track/batch',
      apiKey: org.apiKey,
      payload: { events: Array.from({ length: 5 }, (_, i) => ({ ...body, agent_id: `bot-${i}` })) },
    });
    expect(res.statusCode).toBe(207);
    expect(res.json().data.map((d: { status: number }) => d.status)).toEqual([201, 201, 201, 429, 429]);
    expect(res.json().data[3].error.code).toBe('quota_exceeded');
    expect(await monthEvents(h.storage.db, org.id, '2026-11')).toBe(3);
  });

  it('counts every shard of the month when a paid organisation moves to Free', async () => {
    h.clock.set('2026-11-15T10:00:00.000Z');
    const org = await h.createOrg({ plan: 'pro' });
    // Concurrent calls may be counted by concurrent transactions, in different counter rows.
    const calls = await Promise.all(Array.from({ length: 6 }, () => track(org)));
    expect(calls.every((r) => r.statusCode === 201)).toBe(true);
    expect(await monthEvents(h.storage.db, org.id, '2026-11')).toBe(6);
    await setPlan({ ctx: h.ctx, id: org.id, plan: 'free' });
    const refused = await track(org);
    expect(refused.statusCode).toBe(429);
    expect(refused.json().error.code).toBe('quota_exceeded');
    expect(await monthEvents(h.storage.db, org.id, '2026-11')).toBe(6);
    const usage = await h.request({ method: 'GET', url: '/v1/reports/usage', apiKey: org.apiKey });
    expect(usage.json()).toMatchObject({ plan: 'free', events_this_month: 6, lifetime_events: 6 });
  });

  it('does not cap paid plans', async () => {
    const org = await h.createOrg({ plan: 'pro' });
    for (let i = 0; i < 5; i++) expect((await track(org)).statusCode).toBe(201);
  });
});
