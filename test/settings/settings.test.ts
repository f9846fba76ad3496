import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';

describe.each(ENGINES)('GET/PATCH /v1/settings (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine);
  });
  afterAll(async () => h.close());

  const patch = (payload: object, apiKey?: string) =>
    h.request({ method: 'PATCH', url: '/v1/settings', payload, ...(apiKey ? { apiKey } : {}) });

  it('shows the defaults of a new organisation', async () => {
    const org = await h.createOrg({ plan: 'free' });
    const res = await h.request({ method: 'GET', url: '/v1/settings', apiKey: org.apiKey });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      organization_id: org.id,
      plan: 'free',
      name: 'Acme',
      currency: 'EUR',
      default_hourly_rate: 50,
      category_hourly_rates: {},
      outcome_credit: { success: 1, needs_review: 0.5, failure: 0 },
      fallback_baseline_minutes: null,
      usd_exchange_rate: null,
      admin_emails: [],
      fte_hours_per_month: 160,
      alert_emails: [],
      // The first versions: the default rate and the credits, from the beginning.
      assumption_history: [
        ['default_hourly_rate', null, 50],
        ['outcome_credit', 'success', 1],
        ['outcome_credit', 'needs_review', 0.5],
        ['outcome_credit', 'failure', 0],
      ].map(([kind, key, value]) => ({
        id: expect.stringMatching(/^asv_[0-9A-Z]{26}$/),
        kind,
        key,
        value,
        effective_from: null,
        recorded_at: '2026-11-20T12:00:00.000Z',
        actor_key_id: null,
        reason: null,
        restatement_id: null,
        status: 'in_force',
      })),
    });
  });

  it('keeps the FTE hours and the admins who opted in to alert e-mails; only admins may opt in', async () => {
    const org = await h.createOrg();
    const res = await patch(
      {
        admin_emails: ['ops@acme.test', 'cfo@acme.test'],
        alert_emails: ['cfo@acme.test'],
        fte_hours_per_month: 140,
      },
      org.apiKey,
    );
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ fte_hours_per_month: 140, alert_emails: ['cfo@acme.test'] });
    const outsider = await patch({ name: 'Renamed', alert_emails: ['someone@else.test'] }, org.apiKey);
    expect(outsider.statusCode).toBe(422);
    expect(outsider.json().error.details[0].path).toBe('/body/alert_emails/0');
    for (const fte of [0, 745, -1]) {
      expect((await patch({ fte_hours_per_month: fte }, org.apiKey)).statusCode).toBe(422);
    }
    // The refused PATCH changed nothing, not even the name it carried.
    const after = (await h.request({ method: 'GET', url: '/v1/settings', apiKey: org.apiKey })).json();
    expect(after).toMatchObject({ name: 'Acme', fte_hours_per_month: 140, alert_emails: ['cfo@acme.test'] });
  });

  it('changes settings for events tracked afterwards; stored events keep their values', async () => {
    const org = await h.createOrg();
    const track = (outcome: string) =>
      h.request({
        method: 'POST',
        url: '/v1/track',
        apiKey: org.apiKey,
        payload: { agent_id: 'a', task_type: 'research_fact_check', outcome },
      });
    const before = (await track('needs_review')).json();
    expect(before).toMatchObject({ hours_saved: 0.125, cost_saved: 6.25, resolved_hourly_rate: 50 });

    const res = await patch(
      {
        default_hourly_rate: 80,
        outcome_credit: { needs_review: 0.8 },
        name: 'Acme Research',
        admin_emails: ['ops@acme.test'],
      },
      org.apiKey,
    );
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      name: 'Acme Research',
      default_hourly_rate: 80,
      outcome_credit: { success: 1, needs_review: 0.8, failure: 0 },
      admin_emails: ['ops@acme.test'],
    });

    const after = (await track('needs_review')).json();
    expect(after).toMatchObject({ hours_saved: 0.2, cost_saved: 16, resolved_hourly_rate: 80 });
    const stored = await h.request({
      method: 'GET',
      url: `/v1/events/${before.event_id}`,
      apiKey: org.apiKey,
    });
    expect(stored.json()).toEqual(before);
  });

  it('changes the currency only while the organisation has no events', async () => {
    const org = await h.createOrg();
    expect((await patch({ currency: 'USD' }, org.apiKey)).json().currency).toBe('USD');
    await h.request({
      method: 'POST',
      url: '/v1/track',
      apiKey: org.apiKey,
      payload: { agent_id: 'a', task_type: 'dev_unit_tests', outcome: 'success' },
    });
    const res = await patch({ currency: 'EUR' }, org.apiKey);
    expect(res.statusCode).toBe(422);
    expect(res.json().error.details[0].path).toBe('/body/currency');
    expect((await patch({ currency: 'USD' }, org.apiKey)).statusCode).toBe(200);
  });

  it.each([
    [{ outcome_credit: { success: 1.5 } }, '/body/outcome_credit/success'],
    [{ default_hourly_rate: -1 }, '/body/default_hourly_rate'],
    [{ category_hourly_rates: { space: 10 } }, '/body/category_hourly_rates/space'],
    [{ currency: 'euro' }, '/body/currency'],
    [{ admin_emails: ['not-an-email'] }, '/body/admin_emails/0'],
    [{ fallback_baseline_minutes: 0 }, '/body/fallback_baseline_minutes'],
    [{ plan: 'enterprise' }, '/body/plan'],
  ])('rejects %j', async (payload, path) => {
    const res = await patch(payload);
    expect(res.statusCode).toBe(422);
    expect(res.json().error.details.map((d: { path: string }) => d.path)).toContain(path);
  });

  it('needs a key and touches only the own organisation', async () => {
    expect((await h.request({ method: 'GET', url: '/v1/settings', apiKey: null })).statusCode).toBe(401);
    const other = await h.createOrg();
    await patch({ name: 'Changed' }, other.apiKey);
    expect((await h.request({ method: 'GET', url: '/v1/settings' })).json().name).toBe('Acme');
  });
});
