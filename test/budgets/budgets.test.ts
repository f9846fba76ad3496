import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyRestatement } from '../../src/ledger/restatement.js';
import { createApiKey } from '../../src/orgs/api-keys.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness, type TestOrg } from '../support/harness.js';
import { unlimited } from '../reports/unlimited.js';
import { seed, type SeedEvent } from '../reports/seed.js';

const DAY = 86_400_000;
const NOW = '2026-11-20T12:00:00.000Z';

function event(iso: string, agentCost: number, agent = 'bot-1', extra: Partial<SeedEvent> = {}): SeedEvent {
  return {
    agent,
    taskType: 'support_ticket_reply',
    outcome: 'success',
    client: null,
    occurredAt: Date.parse(iso),
    agentCost,
    baselineMinutes: 60,
    ...extra,
  };
}

/**
 * bot-1: agent cost 1, 2, …, 7 on Nov 13 … 19 and 10 this morning (38 this month, 4 a day on
 * average, 10.5 days left: forecast 80); bot-2 on another client: 500 on Nov 19.
 */
async function seedSpend(h: Harness, org: TestOrg) {
  const week = [1, 2, 3, 4, 5, 6, 7].map((cost, i) =>
    event(new Date(Date.parse('2026-11-13T09:00:00Z') + i * DAY).toISOString(), cost, 'bot-1', {
      client: 'acme',
    }),
  );
  await seed(await h.orgCtx(org), [
    ...week,
    event('2026-11-20T08:00:00Z', 10, 'bot-1', { client: 'acme' }),
    event('2026-11-19T08:00:00Z', 500, 'bot-2', { client: 'globex', taskType: 'dev_code_review' }),
  ]);
}

describe.each(ENGINES)('/v1/budgets (%s)', (engine) => {
  let h: Harness;
  let org: TestOrg;
  beforeAll(async () => {
    h = await createHarness(engine, { now: NOW, rateLimiter: unlimited });
    org = await h.createOrg();
    await seedSpend(h, org);
  });
  afterAll(async () => h.close());

  const call = (
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
    url: string,
    payload?: object,
    key = org.apiKey,
  ) => h.request({ method, url, apiKey: key, ...(payload ? { payload } : {}) });
  const create = async (payload: object) => {
    const res = await call('POST', '/v1/budgets', payload);
    expect(res.statusCode, res.body).toBe(201);
    return res.json();
  };

  it('creates a budget with the default thresholds and shows its month: spend, forecast, run-out date', async () => {
    const b = await create({ name: 'bot-1 November', scope: 'agent', scope_value: 'bot-1', amount: 60 });
    expect(b).toMatchObject({
      id: expect.stringMatching(/^bud_[0-9A-Z]{26}$/),
      name: 'bot-1 November',
      scope: 'agent',
      scope_value: 'bot-1',
      amount: 60,
      currency: 'EUR',
      thresholds: [50, 80, 100],
      created_at: NOW,
    });
    // 38 spent; 38 + 2 (today's rest) + 4 a day reaches 60 on the 25th.
    expect(b.status).toEqual({
      month: '2026-11',
      state: 'at_risk',
      spend: 38,
      percent_used: 63.3,
      thresholds_crossed: [50],
      forecast: 80,
      forecast_low: 48.5,
      forecast_high: 111.5,
      run_out_date: '2026-11-25',
      method: {
        name: 'run_rate',
        description:
          'The month so far, plus the daily average of the last 7 complete days (2026-11-13 to 2026-11-19) times the 10.5 days left in the month.',
      },
    });
  });

  it('says when a budget was used up, and when one is on track', async () => {
    const spent = await create({ name: 'small', scope: 'client', scope_value: 'acme', amount: 30 });
    // Cumulative spend by day: 1, 3, 6, 10, 15, 21, 28 (the 19th), 38 (today).
    expect(spent.status).toMatchObject({
      state: 'exhausted',
      spend: 38,
      percent_used: 126.7,
      thresholds_crossed: [50, 80, 100],
      run_out_date: '2026-11-20',
    });
    const roomy = await create({
      name: 'roomy',
      scope: 'agent',
      scope_value: 'bot-1',
      amount: 100,
      thresholds: [90, 25],
    });
    expect(roomy.thresholds).toEqual([25, 90]);
    expect(roomy.status).toMatchObject({
      state: 'on_track',
      spend: 38,
      thresholds_crossed: [25],
      run_out_date: null,
    });
  });

  it('counts the whole organisation or one task type by scope', async () => {
    const all = await create({ name: 'all', scope: 'org', amount: 1000 });
    expect(all.scope_value).toBeNull();
    expect(all.status.spend).toBe(538);
    const review = await create({
      name: 'reviews',
      scope: 'task_type',
      scope_value: 'dev_code_review',
      amount: 400,
    });
    expect(review.status).toMatchObject({ spend: 500, state: 'exhausted', run_out_date: '2026-11-19' });
  });

  it('lists newest first in pages, reads, changes and deletes a budget', async () => {
    const page = await call('GET', '/v1/budgets?limit=2');
    expect(page.statusCode).toBe(200);
    const first = page.json();
    expect(first.data).toHaveLength(2);
    expect(first.next_cursor).toBe(first.data[1].id);
    const rest = (await call('GET', `/v1/budgets?limit=100&cursor=${first.next_cursor}`)).json();
    const ids = [...first.data, ...rest.data].map((b: { id: string }) => b.id);
    expect(ids).toEqual([...ids].sort().reverse());
    expect(rest.next_cursor).toBeNull();

    const id = ids[0];
    const one = await call('GET', `/v1/budgets/${id}`);
    expect(one.json().id).toBe(id);
    const changed = await call('PATCH', `/v1/budgets/${id}`, { amount: 2000, thresholds: [100] });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json()).toMatchObject({ amount: 2000, thresholds: [100], status: { state: 'on_track' } });
    const toOrg = await call('PATCH', `/v1/budgets/${id}`, { scope: 'org' });
    expect(toOrg.json()).toMatchObject({ scope: 'org', scope_value: null });
    const toAgent = await call('PATCH', `/v1/budgets/${id}`, { scope: 'agent' });
    expect(toAgent.statusCode).toBe(422);
    expect(toAgent.json().error.details[0].path).toBe('/body/scope_value');

    expect((await call('DELETE', `/v1/budgets/${id}`)).statusCode).toBe(204);
    expect((await call('GET', `/v1/budgets/${id}`)).statusCode).toBe(404);
    expect((await call('DELETE', `/v1/budgets/${id}`)).statusCode).toBe(404);

    const audit = (await call('GET', '/v1/audit-log?limit=100')).json();
    const actions = audit.data.filter((a: { target: string }) => a.target === `budget:${id}`);
    // One clock instant: the entries' order within it is not defined.
    expect(actions.map((a: { action: string }) => a.action).sort()).toEqual([
      'budget.created',
      'budget.deleted',
      'budget.updated',
      'budget.updated',
    ]);
  });

  it('refuses what does not make a budget, in the one error shape', async () => {
    const bad: Array<[object, string]> = [
      [{ name: 'x', scope: 'org', scope_value: 'bot-1', amount: 5 }, '/body/scope_value'],
      [{ name: 'x', scope: 'agent', amount: 5 }, '/body/scope_value'],
      [{ name: 'x', scope: 'client', scope_value: null, amount: 5 }, '/body/scope_value'],
      [{ name: 'x', scope: 'org', amount: 0 }, '/body/amount'],
      [{ name: 'x', scope: 'org', amount: 1e10 }, '/body/amount'],
      [{ name: 'x', scope: 'org', amount: 5, thresholds: [50, 50] }, '/body/thresholds'],
      [{ name: 'x', scope: 'org', amount: 5, thresholds: [0] }, '/body/thresholds/0'],
      [{ name: 'x', scope: 'org', amount: 5, thresholds: [] }, '/body/thresholds'],
      [{ name: '   ', scope: 'org', amount: 5 }, '/body/name'],
      [{ name: 'x', scope: 'team', amount: 5 }, '/body/scope'],
      [{ name: 'x', scope: 'org', amount: 5, colour: 'red' }, '/body/colour'],
    ];
    for (const [payload, path] of bad) {
      const res = await call('POST', '/v1/budgets', payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(422);
      const error = res.json().error;
      expect(error.code).toBe('validation_error');
      expect(
        error.details.map((d: { path: string }) => d.path),
        JSON.stringify(payload),
      ).toContain(path);
    }
  });

  it('keeps organisations apart, and is for admin keys on Pro and above', async () => {
    const own = await create({ name: 'mine', scope: 'org', amount: 10 });
    const other = await h.createOrg();
    expect((await call('GET', `/v1/budgets/${own.id}`, undefined, other.apiKey)).statusCode).toBe(404);
    expect((await call('PATCH', `/v1/budgets/${own.id}`, { amount: 1 }, other.apiKey)).statusCode).toBe(404);
    expect((await call('GET', '/v1/budgets', undefined, other.apiKey)).json().data).toEqual([]);

    const free = await h.createOrg({ plan: 'free' });
    const gated = await call('POST', '/v1/budgets', { name: 'x', scope: 'org', amount: 5 }, free.apiKey);
    expect(gated.statusCode).toBe(403);
    expect(gated.json().error.code).toBe('plan_upgrade_required');

    const ingest = await createApiKey({ ctx: h.ctx, orgId: org.id, scope: 'ingest' });
    const refused = await call('GET', '/v1/budgets', undefined, ingest.api_key);
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.code).toBe('insufficient_scope');
  });

  it("counts the spend with the events' adjustments: a restated agent cost moves the state", async () => {
    const other = await h.createOrg();
    const ctx = await h.orgCtx(other);
    await seed(ctx, [event('2026-11-19T08:00:00Z', 500, 'bot-9')]);
    const created = await call(
      'POST',
      '/v1/budgets',
      { name: 'restated', scope: 'agent', scope_value: 'bot-9', amount: 600 },
      other.apiKey,
    );
    expect(created.statusCode, created.body).toBe(201);
    const id = (created.json() as { id: string }).id;
    const status = async () =>
      (await call('GET', `/v1/budgets/${id}`, undefined, other.apiKey)).json().status;
    // Its forecast reaches the amount; its spend does not yet.
    expect(await status()).toMatchObject({ state: 'at_risk', spend: 500, thresholds_crossed: [50, 80] });
    // A restatement of the run's agent cost (an adjustment of +200).
    await applyRestatement(ctx, {
      restatementId: `rst_budget_${engine}`,
      orgId: other.id,
      reason: 'the model was priced too low',
      reprice: (e) => (e.agent_id === 'bot-9' ? { agentCostMicros: 700_000_000 } : null),
    });
    expect(await status()).toMatchObject({
      state: 'exhausted',
      spend: 700,
      thresholds_crossed: [50, 80, 100],
      run_out_date: '2026-11-19',
    });
  });
});
