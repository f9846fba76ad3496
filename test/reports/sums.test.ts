import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OrgCtx } from '../../src/context.js';
import type { StoredEvent } from '../../src/tracking/events.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { expectedRows, type Dim, type SortMetric } from './reference.js';
import { unlimited } from './unlimited.js';
import { lcg, seed, type SeedEvent } from './seed.js';

const NOW = Date.parse('2026-11-20T12:00:00.000Z');
const DAY = 86_400_000;
const AGENTS = ['bot-a', 'bot-b', 'bot-c', 'bot-d', 'bot-e', 'bot-f'];
const TYPES = ['support_ticket_reply', 'dev_code_review', 'legal_nda_review', 'data_sql_query'];
const CLIENTS = ['acme', 'globex', 'initech', null];
const OUTCOMES = ['success', 'failure', 'needs_review'] as const;

function pick<T>(rand: () => number, list: readonly T[]): T {
  return list[Math.floor(rand() * list.length)] as T;
}

function dataset(): SeedEvent[] {
  const rand = lcg(42);
  const events: SeedEvent[] = [];
  for (let i = 0; i < 240; i++) {
    // Mostly within 90 days, a few in the 24 hours ahead (not yet happened).
    const offset = i % 40 === 0 ? rand() * DAY : -rand() * 90 * DAY;
    events.push({
      agent: pick(rand, AGENTS),
      taskType: pick(rand, TYPES),
      outcome: pick(rand, OUTCOMES),
      client: pick(rand, CLIENTS),
      occurredAt: Math.round(NOW + offset),
      agentCost: rand() < 0.3 ? null : Math.round(rand() * 500) / 100,
      ...(rand() < 0.5 ? { baselineMinutes: Math.round(rand() * 9000) / 100 + 0.01 } : {}),
      metadata: { team: pick(rand, ['red', 'blue']), tier: pick(rand, [1, 2, 3]) },
    });
  }
  return events;
}

const PERIOD_FROM: Record<string, (now: number, earliest: number) => number> = {
  '24h': (now) => now - DAY,
  '7d': (now) => now - 7 * DAY,
  '30d': (now) => now - 30 * DAY,
  '90d': (now) => now - 90 * DAY,
  ytd: (now) => Date.UTC(new Date(now).getUTCFullYear(), 0, 1),
  all: (now, earliest) => Math.min(earliest, now),
};

const GROUP_BYS: Dim[][] = [
  ['agent'],
  ['task_type'],
  ['client'],
  ['day'],
  ['week'],
  ['month'],
  ['agent', 'task_type'],
  ['client', 'month'],
  ['task_type', 'week', 'agent'],
];

describe.each(ENGINES)('report rows are exact sums of tracked events (%s)', (engine) => {
  let h: Harness;
  let ctx: OrgCtx;
  let events: StoredEvent[];
  let earliest: number;

  beforeAll(async () => {
    h = await createHarness(engine, { now: new Date(NOW).toISOString(), rateLimiter: unlimited });
    ctx = await h.orgCtx();
    events = await seed(ctx, dataset());
    earliest = Math.min(...events.map((e) => Date.parse(e.occurred_at)));
  });
  afterAll(async () => h.close());

  async function check(
    url: string,
    opts: { period: string; groupBy: Dim[]; sort: SortMetric; top?: number },
    keep: (e: StoredEvent) => boolean = () => true,
  ) {
    const now = h.clock.now().getTime();
    const from = PERIOD_FROM[opts.period]?.(now, earliest) ?? 0;
    const expected = expectedRows(events.filter(keep), { ...opts, from, to: now });
    const res = await h.request({ method: 'GET', url });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.meta).toEqual({
      period: opts.period,
      range: { from: new Date(from).toISOString(), to: new Date(now).toISOString() },
      group_by: opts.groupBy,
      sort: opts.sort,
      total_groups: expected.totalGroups,
    });
    expect(body.currency).toBe('EUR');
    expect(body.rows).toEqual(expected.rows);
    return body;
  }

  for (const at of ['2026-11-20T12:00:00.000Z', '2026-11-21T00:00:00.000Z']) {
    it(`every period × group_by matches, now = ${at}`, async () => {
      h.clock.set(at);
      for (const period of Object.keys(PERIOD_FROM)) {
        for (const groupBy of GROUP_BYS) {
          await check(`/v1/reports/time-saved?period=${period}&group_by=${groupBy.join(',')}`, {
            period,
            groupBy,
            sort: 'hours_saved',
          });
        }
      }
      h.clock.set(new Date(NOW));
    });
  }

  it('cost-saved sorts by cost_saved by default; every sort key and top work', async () => {
    await check('/v1/reports/cost-saved?period=90d&group_by=task_type', {
      period: '90d',
      groupBy: ['task_type'],
      sort: 'cost_saved',
    });
    for (const sort of ['events', 'hours_saved', 'cost_saved', 'agent_cost', 'net_saved'] as const) {
      await check(`/v1/reports/cost-saved?period=all&group_by=agent,client&sort=${sort}&top=5`, {
        period: 'all',
        groupBy: ['agent', 'client'],
        sort,
        top: 5,
      });
    }
  });

  it('filters: agent, task type, client, outcome and metadata', async () => {
    const base = { period: '90d', sort: 'hours_saved' as const };
    await check(
      '/v1/reports/time-saved?period=90d&agent_id=bot-b',
      { ...base, groupBy: ['agent'] },
      (e) => e.agent_id === 'bot-b',
    );
    await check(
      '/v1/reports/time-saved?period=90d&agent_id=bot-b&group_by=task_type',
      { ...base, groupBy: ['task_type'] },
      (e) => e.agent_id === 'bot-b',
    );
    await check(
      '/v1/reports/time-saved?period=90d&task_type=dev_code_review&group_by=week',
      { ...base, groupBy: ['week'] },
      (e) => e.task_type === 'dev_code_review',
    );
    await check(
      '/v1/reports/time-saved?period=30d&client_id=acme&group_by=client,day',
      { ...base, period: '30d', groupBy: ['client', 'day'] },
      (e) => e.metadata?.client_id === 'acme',
    );
    await check(
      '/v1/reports/time-saved?period=90d&outcome=needs_review&group_by=agent',
      { ...base, groupBy: ['agent'] },
      (e) => e.outcome === 'needs_review',
    );
    await check(
      '/v1/reports/time-saved?period=90d&metadata.team=red&metadata.tier=2&group_by=month',
      { ...base, groupBy: ['month'] },
      (e) => e.metadata?.team === 'red' && e.metadata.tier === 2,
    );
  });

  it('leaderboard ranks agents by the metric', async () => {
    const res = await h.request({
      method: 'GET',
      url: '/v1/reports/leaderboard?period=90d&metric=events&top=3',
    });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    const expected = expectedRows(events, {
      groupBy: ['agent'],
      from: NOW - 90 * DAY,
      to: NOW,
      sort: 'events',
      top: 3,
    });
    expect(body.meta).toMatchObject({
      group_by: ['agent'],
      sort: 'events',
      total_groups: expected.totalGroups,
    });
    expect(body.rows).toEqual(expected.rows.map((row, i) => ({ rank: i + 1, ...row })));
  });

  it('an event shows in the very next report after its 201, and net = cost − agent cost on every row', async () => {
    const url = '/v1/reports/cost-saved?period=24h&group_by=agent';
    const before = (await h.request({ method: 'GET', url })).json();
    const created = await h.request({
      method: 'POST',
      url: '/v1/track',
      payload: { agent_id: 'fresh-bot', task_type: 'dev_bug_fix', outcome: 'success', agent_cost: 0.1 },
    });
    expect(created.statusCode).toBe(201);
    events.push(created.json());
    const after = (await h.request({ method: 'GET', url })).json();
    expect(after.meta.total_groups).toBe(before.meta.total_groups + 1);
    expect(after.rows).toContainEqual({
      group: { agent_id: 'fresh-bot' },
      events: 1,
      hours_saved: 1.5,
      cost_saved: 75,
      agent_cost: 0.1,
      net_saved: 74.9,
      review_hours: 0,
      review_cost: 0,
    });
    for (const row of after.rows) {
      expect(Math.round(row.net_saved * 1e6)).toBe(
        Math.round(row.cost_saved * 1e6) - Math.round(row.agent_cost * 1e6),
      );
    }
  });
});
