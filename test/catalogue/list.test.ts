import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILTIN_TASK_TYPES } from '../../src/catalogue/builtins.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { createCustom, setOverride } from './fixtures.js';

describe.each(ENGINES)('GET /v1/task-types (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine);
    expect((await createCustom(h, { key: 'zeta_task', category: 'dev' })).statusCode).toBe(201);
    expect((await createCustom(h, { key: 'alpha_task', category: 'dev', hourly_rate: 90 })).statusCode).toBe(
      201,
    );
    expect((await createCustom(h, { key: 'old_task', category: 'dev' })).statusCode).toBe(201);
    expect((await h.request({ method: 'DELETE', url: '/v1/task-types/old_task' })).statusCode).toBe(200);
    const res = await setOverride(h, 'dev_code_review', {
      baseline_minutes_override: 40,
      reason: 'measured',
    });
    expect(res.statusCode).toBe(200);
  });
  afterAll(async () => h.close());

  it('lists built-ins by key, then active customs by key', async () => {
    const res = await h.request({ method: 'GET', url: '/v1/task-types' });
    expect(res.statusCode).toBe(200);
    const keys = (res.json().data as { key: string }[]).map((t) => t.key);
    const builtinKeys = BUILTIN_TASK_TYPES.map((b) => b.key).sort();
    expect(keys).toEqual([...builtinKeys, 'alpha_task', 'zeta_task']);
    expect(builtinKeys).toHaveLength(50);
  });

  it('shows built-ins with their override and the original value', async () => {
    const data = (await h.request({ method: 'GET', url: '/v1/task-types?category=dev' })).json().data;
    expect(data.find((t: { key: string }) => t.key === 'dev_bug_fix')).toEqual({
      key: 'dev_bug_fix',
      display_name: 'Fix a small bug with a test',
      category: 'dev',
      kind: 'builtin',
      status: 'active',
      default_baseline_minutes: 90,
      effective_baseline_minutes: 90,
      baseline_source: 'Tally default estimate',
      hourly_rate: null,
      override: null,
      created_at: null,
      assumption_history: [],
    });
    expect(data.find((t: { key: string }) => t.key === 'dev_code_review')).toMatchObject({
      default_baseline_minutes: 30,
      effective_baseline_minutes: 40,
      override: {
        baseline_minutes_override: 40,
        original_baseline_minutes: 30,
        reason: 'measured',
        updated_at: '2026-11-20T12:00:00.000Z',
      },
    });
    expect(data.find((t: { key: string }) => t.key === 'alpha_task')).toMatchObject({
      kind: 'custom',
      status: 'active',
      hourly_rate: 90,
      baseline_source: null,
      created_at: '2026-11-20T12:00:00.000Z',
    });
  });

  it('filters by category', async () => {
    const data = (await h.request({ method: 'GET', url: '/v1/task-types?category=legal' })).json().data;
    expect(data).toHaveLength(6);
    expect(data.every((t: { category: string }) => t.category === 'legal')).toBe(true);
  });

  it('shows archived customs only with include_archived=true', async () => {
    const res = await h.request({ method: 'GET', url: '/v1/task-types?category=dev&include_archived=true' });
    const customs = (res.json().data as { key: string; kind: string; status: string }[]).filter(
      (t) => t.kind === 'custom',
    );
    expect(customs.map((t) => [t.key, t.status])).toEqual([
      ['alpha_task', 'active'],
      ['old_task', 'archived'],
      ['zeta_task', 'active'],
    ]);
  });

  it('rejects an unknown category', async () => {
    const res = await h.request({ method: 'GET', url: '/v1/task-types?category=marketing' });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.code).toBe('validation_error');
    expect(res.json().error.details[0].path).toBe('/querystring/category');
  });

  it('is open to the Free plan and shows no other organisation’s customs or overrides', async () => {
    const free = await h.createOrg({ plan: 'free' });
    const res = await h.request({ method: 'GET', url: '/v1/task-types', apiKey: free.apiKey });
    expect(res.statusCode).toBe(200);
    const data = res.json().data as { kind: string; override: unknown }[];
    expect(data).toHaveLength(50);
    expect(data.every((t) => t.kind === 'builtin' && t.override === null)).toBe(true);
  });

  it('needs authentication', async () => {
    const res = await h.request({ method: 'GET', url: '/v1/task-types', apiKey: null });
    expect(res.statusCode).toBe(401);
    expect(res.json().error.code).toBe('missing_authorization');
  });
});
