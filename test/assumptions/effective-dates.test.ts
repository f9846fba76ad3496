import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness, type TestOrg } from '../support/harness.js';
import { unlimited } from '../reports/unlimited.js';

const NOW = '2026-11-20T12:00:00.000Z';

describe.each(ENGINES)('assumptions with effective dates (%s)', (engine) => {
  let h: Harness;
  let org: TestOrg;
  beforeAll(async () => {
    h = await createHarness(engine, { now: NOW, rateLimiter: unlimited });
    org = await h.createOrg({ plan: 'pro' });
  });
  afterAll(async () => h.close());

  const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) =>
    h.request({ method, url, apiKey: org.apiKey, ...(payload ? { payload } : {}) });
  const track = async (taskType: string, occurredAt: string, extra: object = {}) => {
    const res = await call('POST', '/v1/track', {
      agent_id: 'bot',
      task_type: taskType,
      outcome: 'success',
      occurred_at: occurredAt,
      ...extra,
    });
    expect(res.statusCode, res.body).toBe(201);
    return res.json();
  };
  const storedPricing = async (eventId: string) => {
    const row = await h.storage.db
      .selectFrom('events')
      .select(['pricing', 'hours_saved_micros', 'cost_saved_micros'])
      .where('id', '=', eventId)
      .executeTakeFirstOrThrow();
    return { ...row, pricing: JSON.parse(row.pricing ?? 'null') };
  };

  it('prices a back-dated event with the values in force at its occurred_at, and names their versions', async () => {
    h.clock.set(NOW);
    // Scheduled for the 25th: a baseline override and a new default rate.
    const override = await call('POST', '/v1/task-types/dev_code_review/override', {
      baseline_minutes_override: 45,
      reason: 'time study',
      effective_from: '2026-11-25',
    });
    expect(override.statusCode, override.body).toBe(200);
    // Not in force yet: today's record is unchanged, the history shows it scheduled.
    expect(override.json()).toMatchObject({
      effective_baseline_minutes: 30,
      override: null,
      assumption_history: [
        {
          kind: 'baseline_override',
          key: 'dev_code_review',
          value: 45,
          effective_from: '2026-11-25T00:00:00.000Z',
          reason: 'time study',
          status: 'scheduled',
        },
      ],
    });
    const overrideVersion = override.json().assumption_history[0].id;
    const rate = await call('PATCH', '/v1/settings', {
      default_hourly_rate: 80,
      effective_from: '2026-11-25T00:00:00Z',
    });
    expect(rate.statusCode, rate.body).toBe(200);
    expect(rate.json().default_hourly_rate).toBe(50);

    const before = await track('dev_code_review', '2026-11-19T09:00:00Z');
    expect(before).toMatchObject({
      resolved_baseline_minutes: 30,
      resolved_baseline_source: 'builtin',
      resolved_hourly_rate: 50,
    });

    h.clock.set('2026-11-26T12:00:00.000Z');
    const backDated = await track('dev_code_review', '2026-11-24T23:59:59Z');
    expect(backDated).toMatchObject({
      resolved_baseline_minutes: 30,
      resolved_baseline_source: 'builtin',
      resolved_hourly_rate: 50,
      hours_saved: 0.5,
      cost_saved: 25,
    });
    const after = await track('dev_code_review', '2026-11-25T00:00:00Z');
    expect(after).toMatchObject({
      resolved_baseline_minutes: 45,
      resolved_baseline_source: 'override',
      resolved_hourly_rate: 80,
      hours_saved: 0.75,
      cost_saved: 60,
    });

    const history = (await call('GET', '/v1/assumptions/history?kind=default_hourly_rate')).json().data;
    const [newRate, firstRate] = history;
    expect(history.map((v: { value: number; status: string }) => [v.value, v.status])).toEqual([
      [80, 'in_force'],
      [50, 'superseded'],
    ]);
    const credit = (await call('GET', '/v1/assumptions/history?kind=outcome_credit&key=success')).json()
      .data[0];
    expect((await storedPricing(after.event_id)).pricing).toEqual({
      assumptions: { baseline: overrideVersion, hourly_rate: newRate.id, outcome_credit: credit.id },
    });
    expect((await storedPricing(backDated.event_id)).pricing).toEqual({
      assumptions: { baseline: null, hourly_rate: firstRate.id, outcome_credit: credit.id },
    });

    // Once in force, the settings and the task type show the new values.
    expect((await call('GET', '/v1/settings')).json().default_hourly_rate).toBe(80);
    const type = (await call('GET', '/v1/task-types?category=dev'))
      .json()
      .data.find((t: { key: string }) => t.key === 'dev_code_review');
    expect(type).toMatchObject({
      effective_baseline_minutes: 45,
      override: { baseline_minutes_override: 45, reason: 'time study' },
    });
    expect(type.assumption_history[0].status).toBe('in_force');
  });

  it('changes nothing stored with a change effective now or later', async () => {
    h.clock.set('2026-11-27T12:00:00.000Z');
    const first = await track('support_ticket_reply', '2026-11-27T10:00:00Z');
    const stored = await storedPricing(first.event_id);
    for (const effective of [undefined, '2026-11-27T12:00:00.000Z', '2026-12-01']) {
      const res = await call('PATCH', '/v1/settings', {
        category_hourly_rates: { support: 99 },
        outcome_credit: { success: 0.5 },
        ...(effective ? { effective_from: effective } : {}),
      });
      expect(res.statusCode, res.body).toBe(200);
      expect(await storedPricing(first.event_id)).toEqual(stored);
      expect((await call('GET', `/v1/events/${first.event_id}`)).json()).toEqual(first);
    }
    // A new event at the same instant gets the values now in force.
    // 8 minutes × credit 0.5 ÷ 60 at 99 an hour.
    expect(await track('support_ticket_reply', '2026-11-27T12:00:00Z')).toMatchObject({
      resolved_hourly_rate: 99,
      hours_saved: 0.066667,
      cost_saved: 6.600033,
    });
  });

  it('refuses a past date on the ordinary routes, pointing at the restatement routes', async () => {
    h.clock.set('2026-11-27T12:00:00.000Z');
    const refusals = [
      await call('PATCH', '/v1/settings', { default_hourly_rate: 10, effective_from: '2026-11-01' }),
      await call('PATCH', '/v1/settings', {
        fallback_baseline_minutes: 5,
        effective_from: '2026-11-27T11:59:59.999Z',
      }),
      await call('POST', '/v1/task-types/dev_bug_fix/override', {
        baseline_minutes_override: 10,
        effective_from: '2026-11-26T00:00:00+02:00',
      }),
      await call('DELETE', '/v1/task-types/dev_code_review/override?effective_from=2026-11-01'),
    ];
    for (const res of refusals) {
      expect(res.statusCode, res.body).toBe(422);
      expect(res.json().error.code).toBe('validation_error');
      expect(res.json().error.details[0].path).toMatch(/\/(body|querystring)\/effective_from$/);
      expect(res.json().error.message).toContain('/v1/restatements/preview');
    }
    // Nothing was recorded.
    expect((await call('GET', '/v1/settings')).json()).toMatchObject({
      default_hourly_rate: 80,
      fallback_baseline_minutes: null,
    });
    const bad = await call('PATCH', '/v1/settings', {
      default_hourly_rate: 10,
      effective_from: '2026-11-30T10:00:00',
    });
    expect(bad.statusCode).toBe(422);
    expect(bad.json().error.details[0].path).toBe('/body/effective_from');
  });

  it('lists the history newest first, by kind and key, in pages, and records each change in the audit log', async () => {
    const all = (await call('GET', '/v1/assumptions/history?limit=100')).json();
    const revisions = all.data.map((v: { recorded_at: string }) => v.recorded_at);
    expect([...revisions].sort().reverse()).toEqual(revisions);
    const page1 = (await call('GET', '/v1/assumptions/history?limit=2')).json();
    const page2 = (await call('GET', `/v1/assumptions/history?limit=2&cursor=${page1.next_cursor}`)).json();
    expect([...page1.data, ...page2.data]).toEqual(all.data.slice(0, 4));
    const support = (
      await call('GET', '/v1/assumptions/history?kind=category_hourly_rate&key=support')
    ).json().data;
    // A change to the value already in force at its date records no version (the same rate on
    // December 1st was already in force then).
    expect(
      support.map((v: { value: number; effective_from: string | null; status: string }) => [
        v.value,
        v.effective_from,
        v.status,
      ]),
    ).toEqual([[99, '2026-11-27T12:00:00.000Z', 'in_force']]);
    const audit = (await call('GET', '/v1/audit-log?limit=100')).json().data;
    expect(
      audit.find((a: { target: string }) => a.target === 'assumption:default_hourly_rate'),
    ).toMatchObject({
      action: 'assumption.changed',
      before: { value: 50 },
      after: { value: 80, effective_from: '2026-11-25T00:00:00.000Z' },
    });
    const invalid = await call('GET', '/v1/assumptions/history?kind=nope');
    expect(invalid.statusCode).toBe(422);
  });
});
