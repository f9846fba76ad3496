import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { createCustom, track } from './fixtures.js';

describe.each(ENGINES)('DELETE /v1/task-types/{key} (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine);
  });
  afterAll(async () => h.close());

  it('archives a custom type; stored events keep working, new tracks are unknown_task_type', async () => {
    expect((await createCustom(h, { key: 'soon_gone', default_baseline_minutes: 12 })).statusCode).toBe(201);
    const tracked = await track(h, { task_type: 'soon_gone' });
    expect(tracked.statusCode).toBe(201);

    const res = await h.request({ method: 'DELETE', url: '/v1/task-types/soon_gone' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ key: 'soon_gone', kind: 'custom', status: 'archived' });

    const stored = await h.request({ method: 'GET', url: `/v1/events/${tracked.json().event_id}` });
    expect(stored.json()).toEqual(tracked.json());
    const after = await track(h, { task_type: 'soon_gone' });
    expect(after.statusCode).toBe(422);
    expect(after.json().error.code).toBe('unknown_task_type');
  });

  it('answers an archived type again, idempotently, with one audit row', async () => {
    const again = await h.request({ method: 'DELETE', url: '/v1/task-types/soon_gone' });
    expect(again.statusCode).toBe(200);
    expect(again.json().status).toBe('archived');
    const audit = (await h.request({ method: 'GET', url: '/v1/audit-log' })).json().data;
    const archived = audit.filter((e: { action: string }) => e.action === 'task_type.archived');
    expect(archived).toHaveLength(1);
  });

  it('rejects a built-in with 409 cannot_archive_builtin and an unknown key with 404', async () => {
    const builtin = await h.request({ method: 'DELETE', url: '/v1/task-types/dev_code_review' });
    expect(builtin.statusCode).toBe(409);
    expect(builtin.json().error.code).toBe('cannot_archive_builtin');
    const unknown = await h.request({ method: 'DELETE', url: '/v1/task-types/never_made' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error.code).toBe('not_found');
  });

  it("cannot archive another organisation's custom type", async () => {
    expect((await createCustom(h, { key: 'mine_only' })).statusCode).toBe(201);
    const other = await h.createOrg();
    const res = await h.request({ method: 'DELETE', url: '/v1/task-types/mine_only', apiKey: other.apiKey });
    expect(res.statusCode).toBe(404);
    const list = await h.request({ method: 'GET', url: '/v1/task-types?category=ops' });
    const mine = list.json().data.find((t: { key: string }) => t.key === 'mine_only');
    expect(mine.status).toBe('active');
  });

  it('answers 403 on the Free plan and 401 without a key', async () => {
    const free = await h.createOrg({ plan: 'free' });
    const res = await h.request({ method: 'DELETE', url: '/v1/task-types/mine_only', apiKey: free.apiKey });
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe('plan_upgrade_required');
    const anon = await h.request({ method: 'DELETE', url: '/v1/task-types/mine_only', apiKey: null });
    expect(anon.statusCode).toBe(401);
  });
});
