import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';

describe.each(ENGINES)('POST /v1/track happy paths (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine);
  });
  afterAll(async () => h.close());

  it('stores a built-in task and computes savings', async () => {
    const res = await h.request({
      method: 'POST',
      url: '/v1/track',
      payload: { agent_id: 'bot-1', task_type: 'support_ticket_reply', outcome: 'success' },
    });
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body.event_id).toMatch(/^evt_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(body).toMatchObject({
      agent_id: 'bot-1',
      task_type: 'support_ticket_reply',
      outcome: 'success',
      resolved_baseline_minutes: 8,
      resolved_baseline_source: 'builtin',
      resolved_hourly_rate: 50,
      currency: 'EUR',
      agent_duration_seconds: null,
      hours_saved: 0.133333,
      cost_saved: 6.66665,
      agent_cost: null,
      resolved_cost_source: 'none',
      net_saved: 6.66665,
      occurred_at: '2026-11-20T12:00:00.000Z',
      received_at: '2026-11-20T12:00:00.000Z',
      model: null,
      tokens_in: null,
      tokens_out: null,
      metadata: null,
    });
    expect(res.headers['x-request-id']).toMatch(/^req_/);
    expect(res.headers['ratelimit-limit']).toBe('200');

    const fetched = await h.request({ method: 'GET', url: `/v1/events/${body.event_id}` });
    expect(fetched.statusCode).toBe(200);
    expect(fetched.json()).toEqual(body);
  });
});
