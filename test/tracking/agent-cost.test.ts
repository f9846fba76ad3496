import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { priceRun } from '../../src/pricing/price-run.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';

const base = { agent_id: 'coder', task_type: 'dev_bug_fix', outcome: 'success' };

describe.each(ENGINES)('agent cost (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine);
  });
  afterAll(async () => h.close());

  const track = (payload: object, apiKey?: string) =>
    h.request({ method: 'POST', url: '/v1/track', payload, ...(apiKey ? { apiKey } : {}) });

  it('provided: the given cost is subtracted as is', async () => {
    const res = await track({
      ...base,
      agent_cost: 1.25,
      model: 'gpt-4o',
      tokens_in: 1000,
      tokens_out: 1000,
    });
    expect(res.json()).toMatchObject({
      resolved_cost_source: 'provided',
      agent_cost: 1.25,
      cost_saved: 75,
      net_saved: 73.75,
    });
  });

  it('computed: model and tokens priced at occurred_at in the organisation currency', async () => {
    const occurredAt = '2026-11-19T08:00:00.000Z';
    const res = await track({
      ...base,
      model: 'openai:gpt-4o',
      tokens_in: 120_000,
      tokens_out: 30_000,
      occurred_at: occurredAt,
    });
    const expected = priceRun({
      model: 'openai:gpt-4o',
      tokensIn: 120_000,
      tokensOut: 30_000,
      at: new Date(occurredAt),
      currency: 'EUR',
      usdExchangeRate: null,
    });
    expect(expected).not.toBeNull();
    const body = res.json();
    expect(body.resolved_cost_source).toBe('computed');
    expect(body.agent_cost).toBe((expected?.agentCostMicros ?? 0) / 1e6);
    expect(Math.round(body.net_saved * 1e6)).toBe(
      Math.round(body.cost_saved * 1e6) - (expected?.agentCostMicros ?? 0),
    );

    const stored = await h.storage.db
      .selectFrom('events')
      .select('pricing')
      .where('id', '=', body.event_id)
      .executeTakeFirstOrThrow();
    expect(JSON.parse(stored.pricing ?? 'null')).toMatchObject({
      provider: 'openai',
      currency: 'EUR',
      exchange_rate_source: 'reference',
    });
  });

  it('computed: takes model and tokens from audit_sample when the top level lacks them', async () => {
    const res = await track({ ...base, audit_sample: { model: 'gpt-4o', tokens_in: 500, tokens_out: 200 } });
    expect(res.json().resolved_cost_source).toBe('computed');
    expect(res.json().agent_cost).toBeGreaterThan(0);
  });

  it("computed: uses the organisation's own USD exchange rate when set", async () => {
    const org = await h.createOrg({ currency: 'GBP' });
    await h.request({
      method: 'PATCH',
      url: '/v1/settings',
      apiKey: org.apiKey,
      payload: { usd_exchange_rate: 0.5 },
    });
    const res = await track({ ...base, model: 'gpt-4o', tokens_in: 1_000_000, tokens_out: 0 }, org.apiKey);
    const usd = priceRun({
      model: 'gpt-4o',
      tokensIn: 1_000_000,
      tokensOut: 0,
      at: h.clock.now(),
      currency: 'USD',
      usdExchangeRate: null,
    });
    expect(res.json()).toMatchObject({ currency: 'GBP', resolved_cost_source: 'computed' });
    expect(res.json().agent_cost).toBeCloseTo(((usd?.agentCostMicros ?? 0) / 1e6) * 0.5, 6);
  });

  it.each([
    ['an unknown model', { model: 'no-such-model-9000', tokens_in: 10, tokens_out: 10 }],
    ['a model without tokens_out', { model: 'gpt-4o', tokens_in: 10 }],
    ['tokens without a model', { tokens_in: 10, tokens_out: 10 }],
    ['nothing at all', {}],
  ])('none for %s: agent_cost null, never 0, net equals cost saved', async (_name, extra) => {
    const body = (await track({ ...base, ...extra })).json();
    expect(body).toMatchObject({ resolved_cost_source: 'none', agent_cost: null });
    expect(body.net_saved).toBe(body.cost_saved);
  });

  it('a provided cost above the savings gives a negative net', async () => {
    const body = (await track({ ...base, task_type: 'content_image_alt_text', agent_cost: 10 })).json();
    expect(body.cost_saved).toBe(1.66665);
    expect(body.net_saved).toBe(-8.33335);
  });
});
