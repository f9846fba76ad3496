import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { createCustom, setOverride } from './fixtures.js';

describe.each(ENGINES)('POST and DELETE /v1/task-types/{key}/override (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine);
    expect((await createCustom(h, { key: 'own_type' })).statusCode).toBe(201);
  });
  afterAll(async () => h.close());

  it('sets an override and replaces it on a second call', async () => {
    const first = await setOverride(h, 'legal_nda_review', {
      baseline_minutes_override: 25,
      reason: 'time study',
    });
    expect(first.statusCode).toBe(200);
    expect(first.json()).toMatchObject({
      key: 'legal_nda_review',
      kind: 'builtin',
      default_baseline_minutes: 20,
      effective_baseline_minutes: 25,
      override: { baseline_minutes_override: 25, original_baseline_minutes: 20, reason: 'time study' },
    });
    h.clock.advance(60_000);
    const second = await setOverride(h, 'legal_nda_review', { baseline_minutes_override: 22.5 });
    expect(second.statusCode).toBe(200);
    expect(second.json().override).toEqual({
      baseline_minutes_override: 22.5,
      original_baseline_minutes: 20,
      reason: null,
      updated_at: '2026-11-20T12:01:00.000Z',
    });
    expect(second.json().effective_baseline_minutes).toBe(22.5);
  });

  it('removes an override, then answers 404 when none is left', async () => {
    const removed = await h.request({ method: 'DELETE', url: '/v1/task-types/legal_nda_review/override' });
    expect(removed.statusCode).toBe(200);
    expect(removed.json()).toMatchObject({ override: null, effective_baseline_minutes: 20 });
    const again = await h.request({ method: 'DELETE', url: '/v1/task-types/legal_nda_review/override' });
    expect(again.statusCode).toBe(404);
    expect(again.json().error.code).toBe('not_found');
  });

  it('answers 404 for an unknown key and 422 on /params/key for a custom key', async () => {
    const unknown = await setOverride(h, 'no_such_type', { baseline_minutes_override: 5 });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error.code).toBe('not_found');
    const custom = await setOverride(h, 'own_type', { baseline_minutes_override: 5 });
    expect(custom.statusCode).toBe(422);
    expect(custom.json().error.details[0].path).toBe('/params/key');
    const removeUnknown = await h.request({ method: 'DELETE', url: '/v1/task-types/no_such_type/override' });
    expect(removeUnknown.statusCode).toBe(404);
  });

  it.each([
    [{ baseline_minutes_override: 0 }, '/body/baseline_minutes_override'],
    [{ baseline_minutes_override: 525601 }, '/body/baseline_minutes_override'],
    [{ reason: 'no number' }, '/body/baseline_minutes_override'],
    [{ baseline_minutes_override: 5, reason: 'x'.repeat(1001) }, '/body/reason'],
    [{ baseline_minutes_override: 5, extra: true }, '/body/extra'],
  ])('rejects an invalid body %j', async (payload, path) => {
    const res = await setOverride(h, 'dev_bug_fix', payload);
    expect(res.statusCode).toBe(422);
    expect(res.json().error.details.map((d: { path: string }) => d.path)).toContain(path);
  });

  it("does not reach another organisation's custom type or override", async () => {
    const other = await h.createOrg();
    const res = await setOverride(h, 'own_type', { baseline_minutes_override: 5 }, other);
    expect(res.statusCode).toBe(404);
    expect((await setOverride(h, 'dev_bug_fix', { baseline_minutes_override: 99 }, other)).statusCode).toBe(
      200,
    );
    const mine = await h.request({ method: 'GET', url: '/v1/task-types?category=dev' });
    const bugFix = mine.json().data.find((t: { key: string }) => t.key === 'dev_bug_fix');
    expect(bugFix.override).toBeNull();
    const remove = await h.request({ method: 'DELETE', url: '/v1/task-types/dev_bug_fix/override' });
    expect(remove.statusCode).toBe(404);
  });

  it('answers 403 on the Free plan and 401 without a key', async () => {
    const free = await h.createOrg({ plan: 'free' });
    const set = await setOverride(h, 'dev_bug_fix', { baseline_minutes_override: 5 }, free);
    expect(set.statusCode).toBe(403);
    expect(set.json().error.code).toBe('plan_upgrade_required');
    const del = await h.request({
      method: 'DELETE',
      url: '/v1/task-types/dev_bug_fix/override',
      apiKey: free.apiKey,
    });
    expect(del.statusCode).toBe(403);
    const anon = await h.request({
      method: 'POST',
      url: '/v1/task-types/dev_bug_fix/override',
      payload: { baseline_minutes_override: 5 },
      apiKey: null,
    });
    expect(anon.statusCode).toBe(401);
  });
});
