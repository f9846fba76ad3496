import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness, type TestOrg } from '../support/harness.js';
import { createCustom, setOverride } from './fixtures.js';

/** POST /v1/track picks the baseline layer by layer (DESIGN §4); each case gets its own org. */
describe.each(ENGINES)('baseline and hourly rate resolution through POST /v1/track (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine);
  });
  afterAll(async () => h.close());

  const trackAs = (org: TestOrg, payload: Record<string, unknown>) =>
    h.request({
      method: 'POST',
      url: '/v1/track',
      apiKey: org.apiKey,
      payload: { agent_id: 'bot-1', outcome: 'success', ...payload },
    });
  const patchSettings = (org: TestOrg, payload: Record<string, unknown>) =>
    h.request({ method: 'PATCH', url: '/v1/settings', apiKey: org.apiKey, payload });
  const resolved = (body: { resolved_baseline_minutes: number; resolved_baseline_source: string }) => [
    body.resolved_baseline_source,
    body.resolved_baseline_minutes,
  ];

  it('request: human_baseline_minutes wins over override, custom and unknown types', async () => {
    const org = await h.createOrg();
    await setOverride(h, 'dev_code_review', { baseline_minutes_override: 40 }, org);
    await createCustom(h, { key: 'own_type', default_baseline_minutes: 18 }, org);
    for (const task_type of ['dev_code_review', 'own_type', 'support_ticket_reply', 'not_in_catalogue']) {
      const res = await trackAs(org, { task_type, human_baseline_minutes: 11 });
      expect(res.statusCode).toBe(201);
      expect(resolved(res.json())).toEqual(['request', 11]);
    }
  });

  it('override, custom and builtin layers', async () => {
    const org = await h.createOrg();
    await setOverride(h, 'dev_code_review', { baseline_minutes_override: 40 }, org);
    await createCustom(h, { key: 'own_type', default_baseline_minutes: 18 }, org);
    expect(resolved((await trackAs(org, { task_type: 'dev_code_review' })).json())).toEqual(['override', 40]);
    expect(resolved((await trackAs(org, { task_type: 'own_type' })).json())).toEqual(['custom', 18]);
    expect(resolved((await trackAs(org, { task_type: 'dev_bug_fix' })).json())).toEqual(['builtin', 90]);
  });

  it('unknown types fail until a fallback is set, then resolve with source fallback', async () => {
    const org = await h.createOrg();
    const unknown = await trackAs(org, { task_type: 'not_in_catalogue' });
    expect(unknown.statusCode).toBe(422);
    expect(unknown.json().error.code).toBe('unknown_task_type');
    expect((await patchSettings(org, { fallback_baseline_minutes: 7 })).statusCode).toBe(200);
    const res = await trackAs(org, { task_type: 'not_in_catalogue' });
    expect(res.statusCode).toBe(201);
    expect(resolved(res.json())).toEqual(['fallback', 7]);
    expect(res.json().resolved_hourly_rate).toBe(50);
  });

  it('an archived custom type is unknown_task_type unless the request brings its baseline', async () => {
    const org = await h.createOrg();
    await createCustom(h, { key: 'retired' }, org);
    await h.request({ method: 'DELETE', url: '/v1/task-types/retired', apiKey: org.apiKey });
    const res = await trackAs(org, { task_type: 'retired' });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.code).toBe('unknown_task_type');
    const withBaseline = await trackAs(org, { task_type: 'retired', human_baseline_minutes: 9 });
    expect(withBaseline.statusCode).toBe(201);
    expect(resolved(withBaseline.json())).toEqual(['request', 9]);
  });

  it('an archived custom type stays unknown_task_type even with a fallback baseline set (spec §3)', async () => {
    const org = await h.createOrg();
    await createCustom(h, { key: 'retired_too' }, org);
    await h.request({ method: 'DELETE', url: '/v1/task-types/retired_too', apiKey: org.apiKey });
    expect((await patchSettings(org, { fallback_baseline_minutes: 7 })).statusCode).toBe(200);
    const res = await trackAs(org, { task_type: 'retired_too' });
    expect(res.statusCode).toBe(422);
    expect(res.json().error).toMatchObject({
      code: 'unknown_task_type',
      details: [{ message: 'is archived' }],
    });
    expect(resolved((await trackAs(org, { task_type: 'never_created' })).json())).toEqual(['fallback', 7]);
  });

  it("does not use another organisation's custom type or override", async () => {
    const owner = await h.createOrg();
    const stranger = await h.createOrg();
    await createCustom(h, { key: 'owned_type' }, owner);
    await setOverride(h, 'dev_code_review', { baseline_minutes_override: 40 }, owner);
    expect((await trackAs(stranger, { task_type: 'owned_type' })).json().error.code).toBe(
      'unknown_task_type',
    );
    expect(resolved((await trackAs(stranger, { task_type: 'dev_code_review' })).json())).toEqual([
      'builtin',
      30,
    ]);
  });

  it('hourly rate: custom type rate, then category rate, then default rate', async () => {
    const org = await h.createOrg();
    await createCustom(
      h,
      { key: 'priced_dev', category: 'dev', default_baseline_minutes: 20, hourly_rate: 90 },
      org,
    );
    await createCustom(h, { key: 'unpriced_dev', category: 'dev', default_baseline_minutes: 20 }, org);
    expect((await patchSettings(org, { category_hourly_rates: { dev: 120 } })).statusCode).toBe(200);

    const custom = (await trackAs(org, { task_type: 'priced_dev' })).json();
    expect(custom).toMatchObject({ resolved_hourly_rate: 90, hours_saved: 0.333333, cost_saved: 29.99997 });

    const category = (await trackAs(org, { task_type: 'unpriced_dev' })).json();
    expect(category).toMatchObject({
      resolved_hourly_rate: 120,
      hours_saved: 0.333333,
      cost_saved: 39.99996,
    });

    const builtin = (await trackAs(org, { task_type: 'dev_bug_fix', outcome: 'needs_review' })).json();
    expect(builtin).toMatchObject({ resolved_hourly_rate: 120, hours_saved: 0.75, cost_saved: 90 });

    const defaultRate = (await trackAs(org, { task_type: 'support_ticket_reply' })).json();
    expect(defaultRate).toMatchObject({
      resolved_hourly_rate: 50,
      hours_saved: 0.133333,
      cost_saved: 6.66665,
    });
  });

  it('an override changes later events only; stored events keep their values', async () => {
    const org = await h.createOrg();
    const before = await trackAs(org, { task_type: 'dev_code_review' });
    expect(resolved(before.json())).toEqual(['builtin', 30]);
    await setOverride(h, 'dev_code_review', { baseline_minutes_override: 45 }, org);

    const stored = await h.request({
      method: 'GET',
      url: `/v1/events/${before.json().event_id}`,
      apiKey: org.apiKey,
    });
    expect(stored.json()).toEqual(before.json());
    expect(stored.json()).toMatchObject({ hours_saved: 0.5, cost_saved: 25 });

    const after = (await trackAs(org, { task_type: 'dev_code_review' })).json();
    expect(resolved(after)).toEqual(['override', 45]);
    expect(after).toMatchObject({ hours_saved: 0.75, cost_saved: 37.5 });

    await h.request({ method: 'DELETE', url: '/v1/task-types/dev_code_review/override', apiKey: org.apiKey });
    expect(resolved((await trackAs(org, { task_type: 'dev_code_review' })).json())).toEqual(['builtin', 30]);
  });

  // On PostgreSQL the overrides come with the API key's lookup, one query for the keys of
  // requests arriving together (orgs/api-keys.ts): each organisation must get its own, exactly.
  it('calls of several organisations at once each resolve with their own overrides, to the last digit', async () => {
    const [a, b, c] = [await h.createOrg(), await h.createOrg(), await h.createOrg()];
    const exact = 0.1 + 0.2; // 0.30000000000000004: 17 significant digits
    await setOverride(h, 'dev_code_review', { baseline_minutes_override: exact }, a);
    await setOverride(h, 'dev_bug_fix', { baseline_minutes_override: 12.345678901234567 }, a);
    await setOverride(h, 'dev_code_review', { baseline_minutes_override: 41 }, b);
    const calls = [a, b, c].flatMap((org) =>
      ['dev_code_review', 'dev_bug_fix'].map(async (task_type) =>
        resolved((await trackAs(org, { task_type })).json()),
      ),
    );
    expect(await Promise.all(calls)).toEqual([
      ['override', exact],
      ['override', 12.345678901234567],
      ['override', 41],
      ['builtin', 90],
      ['builtin', 30],
      ['builtin', 90],
    ]);
  });
});
