import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness, type TestOrg } from '../support/harness.js';

/**
 * Tracking commits concurrent calls of several organisations in one transaction; each
 * organisation's reports must hold only its own events.
 */
describe.each(ENGINES)('reports of organisations tracking at the same moment (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, { now: '2026-11-20T12:00:00.000Z' });
  });
  afterAll(async () => h.close());

  it('keeps every organisation apart although their events share a batch', async () => {
    const orgs: TestOrg[] = [await h.createOrg(), await h.createOrg(), await h.createOrg()];
    const occurredAt = '2026-11-10T08:00:00.000Z'; // a whole day inside 30d: served from rollups
    const calls = orgs.flatMap((org, i) =>
      Array.from({ length: 4 + i }, () =>
        h.request({
          method: 'POST',
          url: '/v1/track',
          apiKey: org.apiKey,
          payload: {
            agent_id: 'shared-agent',
            task_type: 'dev_code_review',
            outcome: 'success',
            occurred_at: occurredAt,
            metadata: { client_id: 'same-client' },
          },
        }),
      ),
    );
    expect((await Promise.all(calls)).every((r) => r.statusCode === 201)).toBe(true);

    for (const [i, org] of orgs.entries()) {
      for (const groupBy of ['agent', 'task_type', 'client', 'day']) {
        const res = await h.request({
          method: 'GET',
          url: `/v1/reports/time-saved?period=30d&group_by=${groupBy}`,
          apiKey: org.apiKey,
        });
        expect(res.statusCode).toBe(200);
        expect(res.json().rows).toHaveLength(1);
        expect(res.json().rows[0]).toMatchObject({
          events: 4 + i,
          hours_saved: (4 + i) * 0.5,
          cost_saved: (4 + i) * 25,
        });
      }
    }
  });
});
