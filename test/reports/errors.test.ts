import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { unlimited } from './unlimited.js';

const INVALID: Array<[string, string]> = [
  ['/v1/reports/time-saved?period=1y', '/querystring/period'],
  ['/v1/reports/time-saved?group_by=agent,planet', '/querystring/group_by'],
  ['/v1/reports/time-saved?group_by=day,day', '/querystring/group_by'],
  ['/v1/reports/time-saved?group_by=agent,', '/querystring/group_by'],
  ['/v1/reports/time-saved?sort=speed', '/querystring/sort'],
  ['/v1/reports/cost-saved?top=0', '/querystring/top'],
  ['/v1/reports/cost-saved?top=10001', '/querystring/top'],
  ['/v1/reports/cost-saved?top=two', '/querystring/top'],
  ['/v1/reports/cost-saved?format=xml', '/querystring/format'],
  ['/v1/reports/cost-saved?outcome=maybe', '/querystring/outcome'],
  ['/v1/reports/cost-saved?colour=red', '/querystring/colour'],
  ['/v1/reports/cost-saved?metadata.bad%20key=x', '/querystring/metadata.bad key'],
  ['/v1/reports/leaderboard?metric=speed', '/querystring/metric'],
  ['/v1/reports/leaderboard?group_by=agent', '/querystring/group_by'],
  ['/v1/reports/export?format=json', '/querystring/format'],
  ['/v1/reports/usage?period=7d', '/querystring/period'],
];

describe.each(ENGINES)('report errors and gates (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, { rateLimiter: unlimited });
  });
  afterAll(async () => h.close());

  it.each(INVALID)('%s → 422 naming %s', async (url, path) => {
    const res = await h.request({ method: 'GET', url });
    expect(res.statusCode).toBe(422);
    const { error } = res.json();
    expect(error.code).toBe('validation_error');
    expect(error.details.map((d: { path: string }) => d.path)).toContain(path);
  });

  it('Free plan: 403 plan_upgrade_required on every report but usage', async () => {
    const free = await h.createOrg({ plan: 'free' });
    for (const path of ['time-saved', 'cost-saved', 'leaderboard', 'export']) {
      const res = await h.request({
        method: 'GET',
        url: `/v1/reports/${path}?format=csv`,
        apiKey: free.apiKey,
      });
      expect(res.statusCode).toBe(403);
      expect(res.json().error.code).toBe('plan_upgrade_required');
    }
    const usage = await h.request({ method: 'GET', url: '/v1/reports/usage', apiKey: free.apiKey });
    expect(usage.statusCode).toBe(200);
    expect(usage.json().plan).toBe('free');
  });

  it('needs a key, in CSV mode too, and never shows another organisation', async () => {
    const none = await h.request({ method: 'GET', url: '/v1/reports/export', apiKey: null });
    expect(none.statusCode).toBe(401);
    expect(none.json().error.code).toBe('missing_authorization');
    const other = await h.createOrg({ plan: 'pro' });
    await h.request({
      method: 'POST',
      url: '/v1/track',
      apiKey: other.apiKey,
      payload: { agent_id: 'theirs', task_type: 'dev_bug_fix', outcome: 'success' },
    });
    const mine = await h.request({ method: 'GET', url: '/v1/reports/time-saved?period=all&format=csv' });
    expect(mine.statusCode).toBe(200);
    expect(mine.body).not.toContain('theirs');
  });
});
