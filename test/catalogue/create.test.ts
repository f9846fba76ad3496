import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { createCustom, customBody } from './fixtures.js';

describe.each(ENGINES)('POST /v1/task-types (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine);
  });
  afterAll(async () => h.close());

  it('creates a custom task type and answers 201 with the record', async () => {
    const res = await createCustom(h, {
      key: 'kyc_check',
      display_name: 'KYC check',
      category: 'legal',
      default_baseline_minutes: 35.5,
      baseline_source: 'Time study 2026-10',
      hourly_rate: 75.5,
    });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toEqual({
      key: 'kyc_check',
      display_name: 'KYC check',
      category: 'legal',
      kind: 'custom',
      status: 'active',
      default_baseline_minutes: 35.5,
      effective_baseline_minutes: 35.5,
      baseline_source: 'Time study 2026-10',
      hourly_rate: 75.5,
      override: null,
      created_at: '2026-11-20T12:00:00.000Z',
      // A new type's baseline and rate apply from the beginning (effective_from null).
      assumption_history: [
        expect.objectContaining({
          kind: 'custom_baseline',
          key: 'kyc_check',
          value: 35.5,
          effective_from: null,
          status: 'in_force',
        }),
        expect.objectContaining({
          kind: 'custom_hourly_rate',
          key: 'kyc_check',
          value: 75.5,
          effective_from: null,
          status: 'in_force',
        }),
      ],
    });
  });

  it('accepts an explicit null hourly rate', async () => {
    const res = await createCustom(h, { key: 'null_rate', hourly_rate: null });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ hourly_rate: null, baseline_source: null });
  });

  it.each([
    ['a built-in key', { key: 'dev_code_review' }],
    ['an existing custom key', { key: 'kyc_check' }],
  ])('rejects %s with validation_error on /body/key', async (_name, overrides) => {
    const res = await createCustom(h, overrides);
    expect(res.statusCode).toBe(422);
    expect(res.json().error.code).toBe('validation_error');
    expect(res.json().error.details).toEqual([{ path: '/body/key', message: expect.any(String) }]);
  });

  it('never reuses the key of an archived custom type', async () => {
    expect((await createCustom(h, { key: 'retired' })).statusCode).toBe(201);
    expect((await h.request({ method: 'DELETE', url: '/v1/task-types/retired' })).statusCode).toBe(200);
    const res = await createCustom(h, { key: 'retired' });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.details[0].path).toBe('/body/key');
  });

  it.each([
    ['key', { key: 'Bad-Key' }, '/body/key'],
    ['key', { key: `a${'b'.repeat(64)}` }, '/body/key'],
    ['category', { category: 'marketing' }, '/body/category'],
    ['baseline', { default_baseline_minutes: 0 }, '/body/default_baseline_minutes'],
    ['baseline', { default_baseline_minutes: 525601 }, '/body/default_baseline_minutes'],
    ['baseline type', { default_baseline_minutes: '10' }, '/body/default_baseline_minutes'],
    ['display name', { display_name: '' }, '/body/display_name'],
    ['blank display name', { display_name: '   ' }, '/body/display_name'],
    ['baseline source', { baseline_source: 'x'.repeat(501) }, '/body/baseline_source'],
    ['hourly rate', { hourly_rate: -1 }, '/body/hourly_rate'],
    ['unknown field', { colour: 'red' }, '/body/colour'],
  ])('rejects an invalid %s', async (_name, overrides, path) => {
    const res = await createCustom(h, { key: 'fresh_key', ...overrides });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.code).toBe('validation_error');
    expect(res.json().error.details.map((d: { path: string }) => d.path)).toContain(path);
  });

  it('requires key, display_name, category and default_baseline_minutes', async () => {
    const res = await h.request({ method: 'POST', url: '/v1/task-types', payload: {} });
    expect(res.statusCode).toBe(422);
    const paths = res.json().error.details.map((d: { path: string }) => d.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        '/body/key',
        '/body/display_name',
        '/body/category',
        '/body/default_baseline_minutes',
      ]),
    );
  });

  it('keeps custom keys per organisation', async () => {
    const other = await h.createOrg();
    const res = await createCustom(h, { key: 'kyc_check' }, other);
    expect(res.statusCode).toBe(201);
  });

  it('answers 403 plan_upgrade_required on the Free plan', async () => {
    const free = await h.createOrg({ plan: 'free' });
    const res = await createCustom(h, { key: 'free_try' }, free);
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe('plan_upgrade_required');
    const list = await h.request({ method: 'GET', url: '/v1/task-types', apiKey: free.apiKey });
    expect(list.json().data).toHaveLength(50);
  });

  it('needs authentication', async () => {
    const res = await h.request({
      method: 'POST',
      url: '/v1/task-types',
      payload: customBody(),
      apiKey: null,
    });
    expect(res.statusCode).toBe(401);
    const bad = await h.request({
      method: 'POST',
      url: '/v1/task-types',
      payload: customBody(),
      apiKey: 'nope',
    });
    expect(bad.json().error.code).toBe('invalid_api_key');
  });
});
