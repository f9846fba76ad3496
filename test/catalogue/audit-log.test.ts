import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { createCustom, setOverride } from './fixtures.js';

describe.each(ENGINES)('GET /v1/audit-log (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine);
  });
  afterAll(async () => h.close());

  it('records every task type change with the acting key, newest first', async () => {
    await createCustom(h, { key: 'audited' });
    h.clock.advance(1000);
    await setOverride(h, 'dev_code_review', { baseline_minutes_override: 40, reason: 'first study' });
    h.clock.advance(1000);
    await setOverride(h, 'dev_code_review', { baseline_minutes_override: 35, reason: 'second study' });
    h.clock.advance(1000);
    await h.request({ method: 'DELETE', url: '/v1/task-types/dev_code_review/override' });
    h.clock.advance(1000);
    await h.request({ method: 'DELETE', url: '/v1/task-types/audited' });

    const res = await h.request({ method: 'GET', url: '/v1/audit-log' });
    expect(res.statusCode).toBe(200);
    const { data, next_cursor: nextCursor } = res.json();
    expect(nextCursor).toBeNull();
    expect(data.map((e: { action: string }) => e.action)).toEqual([
      'task_type.archived',
      'task_type.override_removed',
      'task_type.override_set',
      'task_type.override_set',
      'task_type.created',
    ]);
    expect(data.every((e: { actor_key_id: string }) => e.actor_key_id === h.org.keyId)).toBe(true);

    const [archived, removed, secondSet, firstSet, created] = data;
    expect(created).toMatchObject({
      target: 'task_type:audited',
      before: null,
      after: { key: 'audited', status: 'active' },
      at: '2026-11-20T12:00:00.000Z',
    });
    expect(created.id).toMatch(/^aud_/);
    expect(firstSet).toMatchObject({
      before: null,
      reason: 'first study',
      target: 'task_type:dev_code_review',
    });
    expect(secondSet).toMatchObject({
      before: { baseline_minutes_override: 40, original_baseline_minutes: 30, reason: 'first study' },
      after: { baseline_minutes_override: 35, original_baseline_minutes: 30, reason: 'second study' },
      reason: 'second study',
    });
    expect(removed).toMatchObject({ before: { baseline_minutes_override: 35 }, after: null });
    expect(archived).toMatchObject({ before: { status: 'active' }, after: { status: 'archived' } });
  });

  it('pages with limit and cursor', async () => {
    const first = (await h.request({ method: 'GET', url: '/v1/audit-log?limit=2' })).json();
    expect(first.data).toHaveLength(2);
    expect(first.next_cursor).toBe(first.data[1].id);
    const second = (
      await h.request({ method: 'GET', url: `/v1/audit-log?limit=2&cursor=${first.next_cursor}` })
    ).json();
    expect(second.data.map((e: { action: string }) => e.action)).toEqual([
      'task_type.override_set',
      'task_type.override_set',
    ]);
    const third = (
      await h.request({ method: 'GET', url: `/v1/audit-log?limit=2&cursor=${second.next_cursor}` })
    ).json();
    expect(third.data.map((e: { action: string }) => e.action)).toEqual(['task_type.created']);
    expect(third.next_cursor).toBeNull();
  });

  it('writes no audit row for a rejected change', async () => {
    const before = (await h.request({ method: 'GET', url: '/v1/audit-log' })).json().data.length;
    await createCustom(h, { key: 'audited' });
    await h.request({ method: 'DELETE', url: '/v1/task-types/dev_code_review' });
    await h.request({ method: 'DELETE', url: '/v1/task-types/dev_code_review/override' });
    const after = (await h.request({ method: 'GET', url: '/v1/audit-log' })).json().data.length;
    expect(after).toBe(before);
  });

  it('rejects an invalid limit', async () => {
    const res = await h.request({ method: 'GET', url: '/v1/audit-log?limit=0' });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.details[0].path).toBe('/querystring/limit');
  });

  it("shows only the organisation's own entries", async () => {
    const other = await h.createOrg();
    const res = await h.request({ method: 'GET', url: '/v1/audit-log', apiKey: other.apiKey });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toEqual([]);
  });

  it('answers 403 on the Free plan and 401 without a key', async () => {
    const free = await h.createOrg({ plan: 'free' });
    const res = await h.request({ method: 'GET', url: '/v1/audit-log', apiKey: free.apiKey });
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe('plan_upgrade_required');
    expect((await h.request({ method: 'GET', url: '/v1/audit-log', apiKey: null })).statusCode).toBe(401);
  });
});
