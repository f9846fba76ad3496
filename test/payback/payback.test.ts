import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness, type TestOrg } from '../support/harness.js';
import { unlimited } from '../reports/unlimited.js';
import { seed, type SeedEvent } from '../reports/seed.js';

const DAY = 86_400_000;
const NOW = '2026-11-20T12:00:00.000Z';

function events(iso: string, count: number, minutes: number, agentCost: number): SeedEvent[] {
  return Array.from({ length: count }, () => ({
    agent: 'bot-1',
    taskType: 'support_ticket_reply',
    outcome: 'success' as const,
    client: null,
    occurredAt: Date.parse(iso),
    agentCost,
    baselineMinutes: minutes,
  }));
}

/**
 * The worked example of docs/budgets-and-forecasts.md, at €50 an hour:
 * - September: 10 events of 288 minutes (€240 saved each), agent cost €40 each;
 * - October 10: 20 events of 120 minutes (€100), €20 each;
 * - every day from October 23 to November 19, and this morning: one event of €100 / €20.
 */
async function seedExample(h: Harness, org: TestOrg) {
  const daily: SeedEvent[] = [];
  for (let t = Date.parse('2026-10-23T09:00:00Z'); t < Date.parse(NOW); t += DAY) {
    daily.push(...events(new Date(t).toISOString(), 1, 120, 20));
  }
  await seed(await h.orgCtx(org), [
    ...events('2026-09-15T09:00:00Z', 10, 288, 40),
    ...events('2026-10-10T09:00:00Z', 20, 120, 20),
    ...daily,
  ]);
}

describe.each(ENGINES)('payback, ROI and fixed costs (%s)', (engine) => {
  let h: Harness;
  let org: TestOrg;
  let oneOffId = '';
  beforeAll(async () => {
    h = await createHarness(engine, { now: NOW, rateLimiter: unlimited });
    org = await h.createOrg();
    await seedExample(h, org);
  });
  afterAll(async () => h.close());

  const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) =>
    h.request({ method, url, apiKey: org.apiKey, ...(payload ? { payload } : {}) });
  const payback = async (query = '') => {
    const res = await call('GET', `/v1/reports/payback${query}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };

  it('keeps fixed costs: monthly from a start month, one-off on a date', async () => {
    const oneOff = await call('POST', '/v1/fixed-costs', {
      name: 'Building the agents',
      kind: 'one_off',
      amount: 6000,
      date: '2026-09-01',
    });
    expect(oneOff.statusCode, oneOff.body).toBe(201);
    oneOffId = oneOff.json().id;
    expect(oneOff.json()).toMatchObject({
      id: expect.stringMatching(/^fc_[0-9A-Z]{26}$/),
      kind: 'one_off',
      amount: 6000,
      currency: 'EUR',
      date: '2026-09-01',
      start_month: null,
      end_month: null,
    });
    const licence = await call('POST', '/v1/fixed-costs', {
      name: 'Platform licence',
      kind: 'monthly',
      amount: 300,
      start_month: '2026-09',
    });
    expect(licence.statusCode, licence.body).toBe(201);
    expect(licence.json()).toMatchObject({
      kind: 'monthly',
      start_month: '2026-09',
      end_month: null,
      date: null,
    });
    const list = (await call('GET', '/v1/fixed-costs')).json();
    // Created at one clock instant: their order within it is not defined.
    expect(list.data.map((c: { name: string }) => c.name).sort()).toEqual([
      'Building the agents',
      'Platform licence',
    ]);
  });

  it('refuses fixed costs that do not add up', async () => {
    const bad: Array<[object, string]> = [
      [{ name: 'x', kind: 'monthly', amount: 5 }, '/body/start_month'],
      [{ name: 'x', kind: 'monthly', amount: 5, start_month: '2026-09', date: '2026-09-01' }, '/body/date'],
      [
        { name: 'x', kind: 'monthly', amount: 5, start_month: '2026-09', end_month: '2026-08' },
        '/body/end_month',
      ],
      [{ name: 'x', kind: 'one_off', amount: 5 }, '/body/date'],
      [{ name: 'x', kind: 'one_off', amount: 5, date: '2026-02-30' }, '/body/date'],
      [
        { name: 'x', kind: 'one_off', amount: 5, date: '2026-09-01', start_month: '2026-09' },
        '/body/start_month',
      ],
      [{ name: 'x', kind: 'monthly', amount: 5, start_month: '2026-13' }, '/body/start_month'],
      [{ name: 'x', kind: 'monthly', amount: -5, start_month: '2026-09' }, '/body/amount'],
      [{ name: 'x', kind: 'yearly', amount: 5 }, '/body/kind'],
    ];
    for (const [payload, path] of bad) {
      const res = await call('POST', '/v1/fixed-costs', payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(422);
      expect(
        res.json().error.details.map((d: { path: string }) => d.path),
        JSON.stringify(payload),
      ).toContain(path);
    }
  });

  it('adds up cumulative net saved after fixed costs by month and forecasts the payback month', async () => {
    const p = await payback();
    expect(p.fte_hours_per_month).toBe(160);
    const months = p.months.map((m: Record<string, unknown>) => [
      m.month,
      m.complete,
      m.net_saved,
      m.fixed_costs,
      m.net_after_fixed_costs,
      m.cumulative_net_after_fixed_costs,
      m.fte_freed,
    ]);
    expect(months).toEqual([
      // 2,400 − 400 saved; the one-off 6,000 and the licence 300.
      ['2026-09', true, 2000, 6300, -4300, -4300, 0.3],
      // 2,900 − 580; 58 hours ÷ 160 = 0.3625.
      ['2026-10', true, 2320, 300, 2020, -2280, 0.36],
      // Up to now: 2,000 − 400, and 19.5 of 30 days of the licence.
      ['2026-11', false, 1600, 195, 1405, -875, 0.25],
    ]);
    // Each day left nets €80 (the weekday profile of 4 uniform weeks): November ends at
    // −875 + 840 − 105 = −140, December adds 31 × 80 − 300.
    expect(p.payback).toEqual({
      status: 'forecast',
      month: '2026-12',
      description:
        "Not yet (-875.00 EUR so far): at the rate of this month's forecast, cumulative net saved after fixed costs turns positive in 2026-12.",
      forecast_months: [
        {
          month: '2026-11',
          net_saved: 2440,
          fixed_costs: 300,
          net_after_fixed_costs: 2140,
          cumulative_net_after_fixed_costs: -140,
        },
        {
          month: '2026-12',
          net_saved: 2480,
          fixed_costs: 300,
          net_after_fixed_costs: 2180,
          cumulative_net_after_fixed_costs: 2040,
        },
      ],
    });
    // All time: saved 7,300, agent cost 1,380, fixed 6,795.
    expect(p.period).toMatchObject({
      period: 'all',
      cost_saved: 7300,
      agent_cost: 1380,
      net_saved: 5920,
      fixed_costs: 6795,
      net_after_fixed_costs: -875,
      roi_multiple: 5.29,
      roi_percent: -10.7,
    });
    // 40 hours so far + 2 a day for 10.5 days.
    expect(p.this_month).toEqual({ month: '2026-11', hours_saved_forecast: 61, fte_freed_forecast: 0.38 });
  });

  it('counts monthly costs pro rata in a shorter window', async () => {
    const p = await payback('?period=30d');
    // 10.5 of October's 31 days, then 19.5 of November's 30.
    const fixed = Math.round((300 * 10.5 * 1e6) / 31) / 1e6 + 195;
    expect(p.period).toMatchObject({ period: '30d', cost_saved: 2900, agent_cost: 580, fixed_costs: fixed });
    const expected = Math.round(((2900 - 580 - fixed) / (580 + fixed)) * 1000) / 10;
    expect(p.period.roi_percent).toBe(expected);
  });

  it('says when it has paid back, from the first month of the last positive run', async () => {
    const changed = await call('PATCH', `/v1/fixed-costs/${oneOffId}`, { amount: 5000 });
    expect(changed.statusCode, changed.body).toBe(200);
    const p = await payback();
    expect(
      p.months.map((m: { cumulative_net_after_fixed_costs: number }) => m.cumulative_net_after_fixed_costs),
    ).toEqual([-3300, -1280, 125]);
    expect(p.payback).toMatchObject({ status: 'reached', month: '2026-11', forecast_months: [] });
    expect(p.payback.description).toBe(
      'Paid back: cumulative net saved after fixed costs turned positive in 2026-11 and stands at 125.00 EUR.',
    );
    // Cheaper still: positive from September on.
    await call('PATCH', `/v1/fixed-costs/${oneOffId}`, { amount: 1000 });
    expect((await payback()).payback).toMatchObject({ status: 'reached', month: '2026-09' });
    // A new investment this month pushes it below zero again: not paid back any more.
    const more = await call('POST', '/v1/fixed-costs', {
      name: 'v2',
      kind: 'one_off',
      amount: 9000,
      date: '2026-11-02',
    });
    expect(more.statusCode).toBe(201);
    const again = await payback();
    expect(again.payback.status).toBe('forecast');
    await call('DELETE', `/v1/fixed-costs/${more.json().id}`);
    expect((await call('GET', `/v1/fixed-costs/${more.json().id}`)).statusCode).toBe(404);
  });

  it('uses the FTE hours of the settings, and is for Pro and above', async () => {
    const patched = await call('PATCH', '/v1/settings', { fte_hours_per_month: 116 });
    expect(patched.statusCode).toBe(200);
    const p = await payback();
    expect(p.fte_hours_per_month).toBe(116);
    // 58 ÷ 116
    expect(p.months[1].fte_freed).toBe(0.5);
    const free = await h.createOrg({ plan: 'free' });
    for (const url of ['/v1/reports/payback', '/v1/fixed-costs']) {
      const res = await h.request({ method: 'GET', url, apiKey: free.apiKey });
      expect(res.statusCode).toBe(403);
    }
    expect((await call('GET', '/v1/reports/payback?period=1y')).statusCode).toBe(422);
  });

  it('answers an organisation with nothing yet', async () => {
    const empty = await h.createOrg();
    const res = await h.request({ method: 'GET', url: '/v1/reports/payback', apiKey: empty.apiKey });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      months: [],
      payback: { status: 'not_forecast', month: null },
      period: { roi_percent: null, roi_multiple: null },
    });
  });
});
