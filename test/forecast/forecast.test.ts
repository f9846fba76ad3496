import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.js';
import { createHarness, pausedStageOptions, type Harness, type TestOrg } from '../support/harness.js';
import { unlimited } from '../reports/unlimited.js';
import { seed, type SeedEvent } from '../reports/seed.js';

const DAY = 86_400_000;
/** A Friday, noon: 10.5 days are left in November. */
const NOW = Date.parse('2026-11-20T12:00:00.000Z');
const at = (iso: string) => Date.parse(iso);

/** One event: 60 baseline minutes at the default €50 an hour saves exactly €50. */
function event(occurredAt: number, agentCost: number, agent = 'bot-1'): SeedEvent {
  return {
    agent,
    taskType: 'support_ticket_reply',
    outcome: 'success',
    client: null,
    occurredAt,
    agentCost,
    baselineMinutes: 60,
  };
}

describe.each(ENGINES)('GET /v1/reports/forecast (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, { now: new Date(NOW).toISOString(), rateLimiter: unlimited });
  });
  afterAll(async () => h.close());

  const forecast = async (org: TestOrg, query = '') => {
    const res = await h.request({ method: 'GET', url: `/v1/reports/forecast${query}`, apiKey: org.apiKey });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };

  it('projects nothing without a complete day of history, and says so', async () => {
    const org = await h.createOrg();
    await seed(await h.orgCtx(org), [event(at('2026-11-20T08:00:00Z'), 3)]);
    const f = await forecast(org);
    expect(f.method).toMatchObject({ name: 'none', basis: { from: null, to: null, days: 0 } });
    expect(f.method.description).toMatch(/No complete day of history/);
    expect(f.month_to_date).toEqual({
      events: 1,
      hours_saved: 1,
      cost_saved: 50,
      agent_cost: 3,
      net_saved: 47,
    });
    expect(f.forecast).toEqual(f.month_to_date);
    expect(f.low).toEqual(f.month_to_date);
    expect(f.high).toEqual(f.month_to_date);
    expect(f.days_left).toBe(10.5);
    expect(f.rest_of_month).toHaveLength(11);
  });

  it('applies the daily average of the last 7 complete days to the days left, with a band', async () => {
    const org = await h.createOrg();
    // Nov 13..19 (the 7 complete days before today): agent cost 1, 2, …, 7 a day (average 4);
    // today, before noon: one event of 10. One event a day saves €50.
    const days = [1, 2, 3, 4, 5, 6, 7].map((cost, i) => event(at('2026-11-13T09:00:00Z') + i * DAY, cost));
    await seed(await h.orgCtx(org), [...days, event(at('2026-11-20T08:00:00Z'), 10)]);
    const f = await forecast(org);
    expect(f.month).toBe('2026-11');
    expect(f.method.name).toBe('run_rate');
    expect(f.method.basis).toEqual({ from: '2026-11-13', to: '2026-11-19', days: 7 });
    expect(f.method.description).toBe(
      'The month so far, plus the daily average of the last 7 complete days (2026-11-13 to 2026-11-19) times the 10.5 days left in the month.',
    );
    expect(f.basis_days.map((d: { agent_cost: number }) => d.agent_cost)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    // Month so far: 28 + 10 = 38 over 8 events (€400 saved).
    expect(f.month_to_date).toEqual({
      events: 8,
      hours_saved: 8,
      cost_saved: 400,
      agent_cost: 38,
      net_saved: 362,
    });
    // 38 + 4 × 10.5 = 80; saved 400 + 50 × 10.5 = 925; events 8 + 1 (today's half, rounded) + 10.
    expect(f.forecast).toEqual({
      events: 19,
      hours_saved: 18.5,
      cost_saved: 925,
      agent_cost: 80,
      net_saved: 845,
    });
    // Lowest day 1, highest 7: 38 + 10.5 and 38 + 73.5.
    expect(f.low.agent_cost).toBe(48.5);
    expect(f.high.agent_cost).toBe(111.5);
    // Net saved per day was 49 … 43: 362 + 43 × 10.5 and 362 + 49 × 10.5.
    expect(f.low.net_saved).toBe(813.5);
    expect(f.high.net_saved).toBe(876.5);
    expect(f.rest_of_month[0]).toEqual({
      day: '2026-11-20',
      events: 1,
      hours_saved: 0.5,
      cost_saved: 25,
      agent_cost: 2,
      net_saved: 23,
    });
    const restCost = f.rest_of_month.reduce((s: number, d: { agent_cost: number }) => s + d.agent_cost, 0);
    expect(restCost + f.month_to_date.agent_cost).toBe(f.forecast.agent_cost);
  });

  it('averages the complete days there are when fewer than 7', async () => {
    const org = await h.createOrg();
    await seed(await h.orgCtx(org), [
      event(at('2026-11-18T10:00:00Z'), 2),
      event(at('2026-11-19T10:00:00Z'), 4),
    ]);
    const f = await forecast(org);
    expect(f.method).toMatchObject({
      name: 'run_rate',
      basis: { from: '2026-11-18', to: '2026-11-19', days: 2 },
    });
    expect(f.method.description).toContain('the 2 days of history there are');
    // 6 + 3 × 10.5
    expect(f.forecast.agent_cost).toBe(37.5);
  });

  it('uses a weekday profile once there are 4 complete weeks of history', async () => {
    const org = await h.createOrg();
    // The 28 days before today (Oct 23 … Nov 19): weekdays cost 5, weekends 1, plus the week's
    // number 0 … 3, so each weekday averages 6.5 and each weekend day 2.5.
    const start = at('2026-10-23T10:00:00Z');
    const costOn = (i: number) => {
      const weekday = new Date(start + i * DAY).getUTCDay();
      return (weekday === 0 || weekday === 6 ? 1 : 5) + Math.floor(i / 7);
    };
    const events = Array.from({ length: 28 }, (_, i) => event(start + i * DAY, costOn(i)));
    await seed(await h.orgCtx(org), events);
    const f = await forecast(org);
    expect(f.method.name).toBe('weekday_profile');
    expect(f.method.basis).toEqual({ from: '2026-10-23', to: '2026-11-19', days: 28 });
    expect(f.method.description).toMatch(/same weekday over the last 4 complete weeks/);
    // November so far: the basis days from Nov 1 (index 9) on.
    let monthToDate = 0;
    for (let i = 9; i < 28; i++) monthToDate += costOn(i);
    expect(f.month_to_date.agent_cost).toBe(monthToDate);
    // Left: half of Friday the 20th (6.5 / 2), 6 weekdays (6.5 each), 4 weekend days (2.5 each).
    expect(f.forecast.agent_cost).toBe(monthToDate + 3.25 + 6 * 6.5 + 4 * 2.5);
    // The band takes each weekday's lowest (week 0) and highest (week 3) figure.
    expect(f.low.agent_cost).toBe(monthToDate + 2.5 + 6 * 5 + 4 * 1);
    expect(f.high.agent_cost).toBe(monthToDate + 4 + 6 * 8 + 4 * 4);
    const saturday = f.rest_of_month.find((d: { day: string }) => d.day === '2026-11-21');
    expect(saturday.agent_cost).toBe(2.5);
  });

  it('takes the report filters and leaves other agents out', async () => {
    const org = await h.createOrg();
    await seed(await h.orgCtx(org), [
      event(at('2026-11-19T10:00:00Z'), 2, 'bot-a'),
      event(at('2026-11-19T11:00:00Z'), 100, 'bot-b'),
    ]);
    const f = await forecast(org, '?agent_id=bot-a');
    expect(f.filters).toMatchObject({ agent_id: 'bot-a', task_type: null, client_id: null });
    expect(f.month_to_date.agent_cost).toBe(2);
    expect(f.forecast.agent_cost).toBe(2 + 2 * 10.5);
    const all = await forecast(org);
    expect(all.month_to_date.agent_cost).toBe(102);
  });

  it('is for Pro and above, and refuses parameters it does not take', async () => {
    const free = await h.createOrg({ plan: 'free' });
    const gated = await h.request({ method: 'GET', url: '/v1/reports/forecast', apiKey: free.apiKey });
    expect(gated.statusCode).toBe(403);
    expect(gated.json().error.code).toBe('plan_upgrade_required');
    for (const query of ['?period=7d', '?group_by=day', '?outcome=great', '?agent_id=']) {
      const res = await h.request({ method: 'GET', url: `/v1/reports/forecast${query}` });
      expect(res.statusCode, query).toBe(422);
      expect(res.json().error.code).toBe('validation_error');
    }
  });
});

describe.each(ENGINES)('the forecast reads the events not folded yet (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, pausedStageOptions(NOW));
  });
  afterAll(async () => h.close());

  it('counts an event right after its 201, before the folding stage has run', async () => {
    const res = await h.request({
      method: 'POST',
      url: '/v1/track',
      payload: {
        agent_id: 'bot',
        task_type: 'support_ticket_reply',
        outcome: 'success',
        agent_cost: 1.25,
        occurred_at: '2026-11-19T10:00:00.000Z',
      },
    });
    expect(res.statusCode).toBe(201);
    const f = (await h.request({ method: 'GET', url: '/v1/reports/forecast' })).json();
    expect(f.month_to_date.agent_cost).toBe(1.25);
    expect(f.forecast.agent_cost).toBe(1.25 + 1.25 * 10.5);
  });
});
