import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hours } from '../../src/dashboard/format.js';
import { GROUP_KEY, type Dimension } from '../../src/reports/params.js';
import type { EventRow } from '../../src/storage/schema.js';
import { foldOnce } from '../../src/fold/pass.js';
import { tailState } from '../../src/fold/tail.js';
import { digestPayload } from '../../src/webhooks/digest-payload.js';
import { createWebhook } from '../../src/webhooks/subscriptions.js';
import { session } from '../dashboard/support.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness, type TestOrg } from '../support/harness.js';
import { parseCsv } from './csv-parse.js';
import { unlimited } from './unlimited.js';

/**
 * README "Limits": one event's money saved reaches 8.76e15 micro-units, so about 1,053 events at
 * the maxima in one rollup row pass 2^63. Such sums used to fail the folding stage for every
 * organisation (bigint out of range, SQLite's "integer overflow") and answer 500 in reports.
 */

const NOW = Date.parse('2026-11-20T12:00:00.000Z');
const DAY = 86_400_000;
// Both days lie inside every window below and are whole days in it (answered from rollups).
const BIG_DAY = Date.parse('2026-11-18T10:00:00.000Z');
const OTHER_DAY = Date.parse('2026-11-17T10:00:00.000Z');
const PAUSED = { foldInline: false, env: { TALLY_WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } };
const TWO_53 = 2n ** 53n;
/** The relative error README "Limits" allows beyond 2^53 micro-units (n additions × 3e-16; n < 3,000 here). */
const RELATIVE = 1e-12;

/** A track body at the documented maxima (cost saved 525,600 min × 1,000,000/h = 8.76e15 micros). */
function maxEvent(at: number, i: number, withAgentCost = true) {
  return {
    agent_id: 'big-agent',
    task_type: 'support_ticket_reply',
    outcome: 'success',
    occurred_at: new Date(at + i).toISOString(),
    human_baseline_minutes: 525_600,
    agent_duration_seconds: 31_622_400,
    // An odd number of micro-units: sums past 2^53 in doubles would round.
    ...(withAgentCost ? { agent_cost: 999_999_999.999999 } : {}),
  };
}

interface Exact {
  events: number;
  h: bigint;
  c: bigint;
  a: bigint;
}

function groupValue(dim: Dimension, e: EventRow): string | null {
  const day = new Date(Math.floor(Number(e.occurred_at) / DAY) * DAY);
  switch (dim) {
    case 'agent':
      return e.agent_id;
    case 'task_type':
      return e.task_type;
    case 'client':
      return e.client_id;
    case 'day':
      return day.toISOString().slice(0, 10);
    case 'week': {
      const monday = new Date(day.getTime() - ((day.getUTCDay() + 6) % 7) * DAY);
      return monday.toISOString().slice(0, 10);
    }
    case 'month':
      return day.toISOString().slice(0, 7);
  }
}

/** The exact sums (BigInt) of every group of `events` over [from, to). */
function exactGroups(events: readonly EventRow[], groupBy: readonly Dimension[], from: number, to: number) {
  const groups = new Map<string, Exact>();
  for (const e of events) {
    const at = Number(e.occurred_at);
    if (at < from || at >= to) continue;
    const key = JSON.stringify(Object.fromEntries(groupBy.map((d) => [GROUP_KEY[d], groupValue(d, e)])));
    const g = groups.get(key) ?? { events: 0, h: 0n, c: 0n, a: 0n };
    g.events += 1;
    g.h += BigInt(e.hours_saved_micros);
    g.c += BigInt(e.cost_saved_micros);
    g.a += BigInt(e.agent_cost_micros ?? 0);
    groups.set(key, g);
  }
  return groups;
}

/** A figure against its exact micro-unit sum: equal below 2^53, within RELATIVE of `scale` above. */
function expectFigure(served: number, exact: bigint, scale: bigint, what: string) {
  const want = Number(exact) / 1e6;
  const abs = (x: bigint) => (x < 0n ? -x : x);
  if (abs(scale) < TWO_53) expect(served, what).toBe(want);
  else expect(Math.abs(served - want), what).toBeLessThanOrEqual((Number(abs(scale)) / 1e6) * RELATIVE);
}

interface Figures {
  events: number;
  hours_saved: number;
  cost_saved: number;
  agent_cost: number;
  net_saved: number;
}

function expectRow(served: Figures, exact: Exact, what: string) {
  expect(served.events, what).toBe(exact.events);
  expectFigure(served.hours_saved, exact.h, exact.h, `${what} hours_saved`);
  expectFigure(served.cost_saved, exact.c, exact.c, `${what} cost_saved`);
  expectFigure(served.agent_cost, exact.a, exact.a, `${what} agent_cost`);
  expectFigure(served.net_saved, exact.c - exact.a, exact.c > exact.a ? exact.c : exact.a, `${what} net`);
}

const GROUP_BYS: Dimension[][] = [
  ['agent'],
  ['task_type'],
  ['client'],
  ['day'],
  ['week'],
  ['month'],
  ['agent', 'task_type'],
  ['agent', 'task_type', 'client'],
  ['task_type', 'day'],
  ['agent', 'week'],
];
const PERIODS = ['7d', '30d', 'all'] as const;

describe.each(ENGINES)('sums beyond 64-bit integers (%s)', (engine) => {
  let h: Harness;
  let big: TestOrg;
  let small: TestOrg;

  beforeAll(async () => {
    h = await createHarness(engine, {
      now: new Date(NOW).toISOString(),
      rateLimiter: unlimited,
      plan: 'enterprise',
      ...PAUSED,
    });
    big = await h.createOrg({ plan: 'enterprise', hourlyRate: 1_000_000 });
    small = await h.createOrg({ plan: 'pro' });
    await createWebhook({
      ctx: await h.orgCtx(small),
      input: { url: 'http://127.0.0.1:9/hook', event_types: ['event.created'] },
    });
  });
  afterAll(async () => h.close());

  async function trackBatch(org: TestOrg, events: object[]) {
    for (let i = 0; i < events.length; i += 500) {
      const res = await h.request({
        method: 'POST',
        url: '/v1/track/batch',
        apiKey: org.apiKey,
        payload: { events: events.slice(i, i + 500) },
      });
      expect(res.statusCode, res.body).toBe(207);
      const items = (res.json() as { data: Array<{ status: number }> }).data;
      expect(items.filter((d) => d.status !== 201)).toEqual([]);
    }
  }

  async function trackSmall(n: number) {
    for (let i = 0; i < n; i++) {
      const res = await h.request({
        method: 'POST',
        url: '/v1/track',
        apiKey: small.apiKey,
        payload: { agent_id: 'small-agent', task_type: 'support_ticket_reply', outcome: 'success' },
      });
      expect(res.statusCode, res.body).toBe(201);
    }
  }

  async function events(org: TestOrg): Promise<EventRow[]> {
    return h.ctx.db.selectFrom('events').selectAll().where('org_id', '=', org.id).execute();
  }

  /** Passes until the tail is empty (another test's transaction may hold PostgreSQL's xmin back). */
  async function foldAll(limit?: number) {
    for (let i = 0; i < 500; i++) {
      const result = await foldOnce(h.ctx, limit === undefined ? {} : { limit });
      if (!result.more && (await tailState(h.ctx.db, h.ctx.engine)).events === 0) return;
      if (!result.more) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error('the tail did not empty');
  }

  async function createdMessages(org: TestOrg): Promise<number> {
    const { rows } = await sql<{ n: unknown }>`
      SELECT COUNT(*) AS n FROM webhook_messages WHERE org_id = ${org.id} AND type = 'event.created'`.execute(
      h.ctx.db,
    );
    return Number(rows[0]?.n);
  }

  /** Every report endpoint, JSON and CSV, every grouping, and usage, against BigInt sums. */
  async function expectReports(what: string) {
    const stored = await events(big);
    const earliest = Math.min(...stored.map((e) => Number(e.occurred_at)));
    for (const period of PERIODS) {
      const windowFrom = period === 'all' ? earliest : NOW - { '7d': 7, '30d': 30 }[period] * DAY;
      for (const groupBy of GROUP_BYS) {
        const expected = exactGroups(stored, groupBy, windowFrom, NOW);
        for (const path of ['time-saved', 'cost-saved']) {
          const url = `/v1/reports/${path}?period=${period}&group_by=${groupBy.join(',')}`;
          const res = await h.request({ method: 'GET', url, apiKey: big.apiKey });
          expect(res.statusCode, `${what} ${url}: ${res.body}`).toBe(200);
          const rows = (res.json() as { rows: Array<Figures & { group: Record<string, string | null> }> })
            .rows;
          expect(rows.length, `${what} ${url}`).toBe(expected.size);
          for (const row of rows) {
            const exact = expected.get(JSON.stringify(row.group));
            expect(exact, `${what} ${url} ${JSON.stringify(row.group)}`).toBeDefined();
            expectRow(row, exact as Exact, `${what} ${url}`);
          }
          const csv = await h.request({ method: 'GET', url: `${url}&format=csv`, apiKey: big.apiKey });
          expect(csv.statusCode, `${what} ${url} csv: ${csv.body}`).toBe(200);
          expectCsv(csv.body, groupBy, expected, `${what} ${url} csv`);
        }
        const exportUrl = `/v1/reports/export?period=${period}&group_by=${groupBy.join(',')}`;
        const exported = await h.request({ method: 'GET', url: exportUrl, apiKey: big.apiKey });
        expect(exported.statusCode, `${what} ${exportUrl}: ${exported.body}`).toBe(200);
        expectCsv(exported.body, groupBy, expected, `${what} ${exportUrl}`);
      }
      const expected = exactGroups(stored, ['agent'], windowFrom, NOW);
      const board = await h.request({
        method: 'GET',
        url: `/v1/reports/leaderboard?period=${period}`,
        apiKey: big.apiKey,
      });
      expect(board.statusCode, `${what} leaderboard: ${board.body}`).toBe(200);
      for (const row of (board.json() as { rows: Array<Figures & { group: Record<string, string> }> }).rows)
        expectRow(row, expected.get(JSON.stringify(row.group)) as Exact, `${what} leaderboard`);
      const boardCsv = await h.request({
        method: 'GET',
        url: `/v1/reports/leaderboard?period=${period}&format=csv`,
        apiKey: big.apiKey,
      });
      expect(boardCsv.statusCode, `${what} leaderboard csv: ${boardCsv.body}`).toBe(200);
    }
    const usage = await h.request({ method: 'GET', url: '/v1/reports/usage', apiKey: big.apiKey });
    expect(usage.statusCode, usage.body).toBe(200);
    expect((usage.json() as { lifetime_events: number }).lifetime_events).toBe(stored.length);

    // The dashboard's overview: its cards sum the time series.
    const cookie = await session(h, big.apiKey);
    const page = await h.app.inject({ method: 'GET', url: '/dashboard?period=30d', headers: { cookie } });
    expect(page.statusCode, `${what} dashboard`).toBe(200);
    const totalHours = stored.reduce((sum, e) => sum + BigInt(e.hours_saved_micros), 0n);
    expect(page.body).toContain(hours(Number(totalHours) / 1e6));
    for (const url of [
      '/dashboard/reports?period=30d',
      '/dashboard/reports/export?period=30d',
      '/dashboard/usage',
      '/dashboard/events',
    ]) {
      const other = await h.app.inject({ method: 'GET', url, headers: { cookie } });
      expect(other.statusCode, `${what} ${url}`).toBe(200);
    }

    // The weekly digest of the week of the events.
    const digest = await digestPayload({
      db: h.ctx.db,
      orgId: big.id,
      currency: 'EUR',
      from: new Date(NOW - 7 * DAY),
      to: new Date(NOW),
    });
    const week = exactGroups(stored, ['agent'], NOW - 7 * DAY, NOW);
    expectRow(digest.totals, week.get(JSON.stringify({ agent_id: 'big-agent' })) as Exact, `${what} digest`);
    expectRow(
      digest.top_agents[0] as Figures,
      week.get(JSON.stringify({ agent_id: 'big-agent' })) as Exact,
      `${what} digest top`,
    );
  }

  function expectCsv(
    body: string,
    groupBy: readonly Dimension[],
    expected: Map<string, Exact>,
    what: string,
  ) {
    const [header, ...records] = parseCsv(body);
    const keys = groupBy.map((d) => GROUP_KEY[d]);
    expect(records.length, what).toBe(expected.size);
    const names = header as string[];
    for (const record of records) {
      const cell = (name: string) => record[names.indexOf(name)] as string;
      const group = Object.fromEntries(keys.map((k) => [k, cell(k) === '' ? null : cell(k)]));
      const exact = expected.get(JSON.stringify(group));
      expect(exact, `${what} ${JSON.stringify(group)}`).toBeDefined();
      expectRow(
        {
          events: Number(cell('events')),
          hours_saved: Number(cell('hours_saved')),
          cost_saved: Number(cell('cost_saved')),
          agent_cost: Number(cell('agent_cost')),
          net_saved: Number(cell('net_saved')),
        },
        exact as Exact,
        what,
      );
    }
  }

  it('the fold carries sums past 2^63, and every organisation goes on folding', async () => {
    // 1,100 events at the maxima in one day, agent and task type (9.6e18 micro-units of money
    // saved, past 2^63), and a normal organisation's events alongside.
    await trackBatch(
      big,
      Array.from({ length: 1_100 }, (_, i) => maxEvent(BIG_DAY, i)),
    );
    await trackSmall(3);
    const sum = (await events(big)).reduce((s, e) => s + BigInt(e.cost_saved_micros), 0n);
    expect(sum > 2n ** 63n).toBe(true);
    // One pass folds them all at once (in SQL).
    await foldAll();
    expect((await tailState(h.ctx.db, h.ctx.engine)).events).toBe(0);
    expect(await createdMessages(small)).toBe(3);

    // Passes of a few events (their rollup rows built in the service) add to rows past 2^63.
    for (let i = 0; i < 3; i++) {
      await trackBatch(big, [maxEvent(BIG_DAY, 2_000 + i, false)]);
      await trackSmall(1);
      await foldAll();
    }
    // And passes of a few hundred, each past 2^53 (in SQL).
    await trackBatch(
      big,
      Array.from({ length: 600 }, (_, i) => maxEvent(BIG_DAY, 3_000 + i)),
    );
    await trackSmall(2);
    await foldAll(150);
    expect((await tailState(h.ctx.db, h.ctx.engine)).events).toBe(0);
    expect(await createdMessages(small)).toBe(8);
    await expectRollups();
  }, 120_000);

  it('every report, export, usage, the dashboard and the digest answer exact figures, from the tail and folded', async () => {
    // 1,100 more events at the maxima on another day, not folded yet: the reports sum the raw tail.
    await trackBatch(
      big,
      Array.from({ length: 1_100 }, (_, i) => maxEvent(OTHER_DAY, i)),
    );
    await trackSmall(1);
    await expectReports('tail');
    await foldAll();
    expect(await createdMessages(small)).toBe(9);
    await expectRollups();
    await expectReports('folded');
  }, 240_000);

  /** The rollup rows of the big organisation's day of the `all` grain hold its exact sums. */
  async function expectRollups() {
    const stored = await events(big);
    const expected = exactGroups(stored, ['day'], 0, Number.MAX_SAFE_INTEGER);
    const rows = await h.ctx.db
      .selectFrom('report_rollups')
      .select(['day', 'events', 'hours_saved_micros', 'cost_saved_micros', 'agent_cost_micros'])
      .where('org_id', '=', big.id)
      .where('grain', '=', 'all')
      .execute();
    expect(rows.length).toBe(expected.size);
    for (const row of rows) {
      const day = new Date(Number(row.day) * DAY).toISOString().slice(0, 10);
      const exact = expected.get(JSON.stringify({ day })) as Exact;
      expect(Number(row.events)).toBe(exact.events);
      // Read as numbers (storage/db.ts): the nearest double on PostgreSQL (numeric), within
      // README "Limits" on SQLite.
      for (const [value, want] of [
        [row.hours_saved_micros, exact.h],
        [row.cost_saved_micros, exact.c],
        [row.agent_cost_micros, exact.a],
      ] as const) {
        if (engine === 'postgres') expect(Number(value)).toBe(Number(want));
        else expect(Math.abs(Number(value) - Number(want))).toBeLessThanOrEqual(Number(want) * RELATIVE);
      }
    }
  }
});
