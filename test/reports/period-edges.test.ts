import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { seed } from './seed.js';
import { unlimited } from './unlimited.js';

const DAY = 86_400_000;

/** For each period: its start instant at `now`. */
const STARTS: Record<string, (now: number) => number> = {
  '24h': (now) => now - DAY,
  '7d': (now) => now - 7 * DAY,
  '30d': (now) => now - 30 * DAY,
  '90d': (now) => now - 90 * DAY,
  ytd: (now) => Date.UTC(new Date(now).getUTCFullYear(), 0, 1),
};

describe.each(ENGINES)('period edges (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, { rateLimiter: unlimited });
  });
  afterAll(async () => h.close());

  // Mid-day, exactly midnight, and a ytd whose January 1 is within tracking's 90-day window.
  for (const at of ['2026-02-15T10:17:03.123Z', '2026-03-01T00:00:00.000Z']) {
    for (const [period, startOf] of Object.entries(STARTS)) {
      it(`${period} at ${at}: from and now are inside, from − 1 ms and now + 1 ms outside`, async () => {
        const now = Date.parse(at);
        const from = startOf(now);
        const org = await h.createOrg({ plan: 'pro' });
        const ctx = await h.orgCtx(org);
        const edge = (agent: string, occurredAt: number) => ({
          agent,
          taskType: 'dev_bug_fix',
          outcome: 'success' as const,
          client: null,
          occurredAt,
          agentCost: null,
        });
        // Each event is tracked while it is inside tracking's own window, then time moves on.
        for (const [agent, t] of [
          ['before-from', from - 1],
          ['at-from', from],
          ['middle', from + Math.floor((now - from) / 2)],
        ] as const) {
          if (from < now - 89 * DAY) h.clock.set(new Date(t + 3_600_000));
          else h.clock.set(new Date(now));
          await seed(ctx, [edge(agent, t)]);
        }
        h.clock.set(new Date(now));
        await seed(ctx, [edge('at-now', now), edge('after-now', now + 1)]);

        for (const url of [
          `/v1/reports/time-saved?period=${period}&group_by=agent`,
          `/v1/reports/time-saved?period=${period}&group_by=agent,task_type`,
        ]) {
          const res = await h.request({ method: 'GET', url, apiKey: org.apiKey });
          expect(res.statusCode).toBe(200);
          const body = res.json();
          expect(body.meta.range).toEqual({ from: new Date(from).toISOString(), to: at });
          const agents = body.rows.map((r: { group: { agent_id: string } }) => r.group.agent_id).sort();
          expect(agents).toEqual(['at-from', 'at-now', 'middle']);
        }
        // The future event appears once its time has come.
        h.clock.set(new Date(now + 1));
        const later = await h.request({
          method: 'GET',
          url: `/v1/reports/time-saved?period=${period}`,
          apiKey: org.apiKey,
        });
        expect(later.json().rows.map((r: { group: { agent_id: string } }) => r.group.agent_id)).toContain(
          'after-now',
        );
      });
    }
  }

  it('all starts at the earliest event, or now when there is none', async () => {
    h.clock.set('2026-11-20T12:00:00.000Z');
    const org = await h.createOrg({ plan: 'pro' });
    const empty = await h.request({
      method: 'GET',
      url: '/v1/reports/time-saved?period=all',
      apiKey: org.apiKey,
    });
    expect(empty.json().meta).toMatchObject({
      range: { from: '2026-11-20T12:00:00.000Z', to: '2026-11-20T12:00:00.000Z' },
      total_groups: 0,
    });
    expect(empty.json().rows).toEqual([]);
    const ctx = await h.orgCtx(org);
    const first = Date.parse('2026-09-01T08:30:00.000Z');
    await seed(ctx, [
      {
        agent: 'x',
        taskType: 'dev_bug_fix',
        outcome: 'success',
        client: null,
        occurredAt: first,
        agentCost: null,
      },
      {
        agent: 'y',
        taskType: 'dev_bug_fix',
        outcome: 'success',
        client: null,
        occurredAt: first + DAY * 30,
        agentCost: null,
      },
    ]);
    const res = await h.request({
      method: 'GET',
      url: '/v1/reports/time-saved?period=all',
      apiKey: org.apiKey,
    });
    expect(res.json().meta.range.from).toBe('2026-09-01T08:30:00.000Z');
    expect(res.json().meta.total_groups).toBe(2);
  });
});
