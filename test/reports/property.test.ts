import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Outcome } from '../../src/orgs/organizations.js';
import { buildReport } from '../../src/reports/report.js';
import type { StoredEvent } from '../../src/tracking/events.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { DAY, expectedRows, NOW, PERIODS, type Dim, windowFrom } from './reference.js';
import { seed, type SeedEvent } from './seed.js';
import { unlimited } from './unlimited.js';

const eventArb: fc.Arbitrary<SeedEvent> = fc.record({
  agent: fc.constantFrom('a', 'b', 'c', '=x'),
  taskType: fc.constantFrom('support_ticket_reply', 'dev_bug_fix', 'custom_thing'),
  outcome: fc.constantFrom('success' as const, 'failure' as const, 'needs_review' as const),
  client: fc.constantFrom('k1', 'k2', '', null),
  occurredAt: fc.integer({ min: NOW - 90 * DAY, max: NOW + DAY }),
  agentCost: fc.option(fc.integer({ min: 0, max: 10_000_000 }).map((m) => m / 1e6)),
  baselineMinutes: fc.integer({ min: 1, max: 100_000_000 }).map((m) => m / 1e4),
  // Seen only when the event has no client: a client id that is a number, or no client at all.
  metadata: fc.constantFrom(undefined, { client_id: 7 }, { client_id: true }),
});

const groupByArb = fc
  .shuffledSubarray(['agent', 'task_type', 'client', 'day', 'week', 'month'] as Dim[], { minLength: 1 })
  .filter((g) => g.length > 0);

/** Filters a report can carry, as query parameters; any of them may be absent. */
const filtersArb = fc.record(
  {
    agent_id: fc.constantFrom('a', '=x'),
    task_type: fc.constantFrom('support_ticket_reply', 'custom_thing'),
    client_id: fc.constantFrom('k1', 'k2'),
    outcome: fc.constantFrom('success', 'needs_review'),
    // Served as the client filter, except where the two could differ ('7.0', 'true').
    'metadata.client_id': fc.constantFrom('k1', '7', '7.0', 'true'),
  },
  { requiredKeys: [] },
);

type Filters = {
  agent_id?: string;
  task_type?: string;
  client_id?: string;
  outcome?: string;
  'metadata.client_id'?: string;
};

/** The metadata filter's rule, written out independently: strings equal, numbers by value, booleans by name. */
function metadataMatches(value: unknown, wanted: string): boolean {
  if (typeof value === 'string') return value === wanted;
  if (typeof value === 'number')
    return /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(wanted) && value === Number(wanted);
  if (typeof value === 'boolean') return String(value) === wanted;
  return false;
}

function clientOf(e: StoredEvent): string | null {
  const c = e.metadata?.client_id;
  return typeof c === 'string' ? c : typeof c === 'number' ? String(c) : null;
}

function matches(e: StoredEvent, filters: Filters): boolean {
  return (
    (filters.agent_id === undefined || e.agent_id === filters.agent_id) &&
    (filters.task_type === undefined || e.task_type === filters.task_type) &&
    (filters.client_id === undefined || clientOf(e) === filters.client_id) &&
    (filters.outcome === undefined || e.outcome === filters.outcome) &&
    (filters['metadata.client_id'] === undefined ||
      metadataMatches(e.metadata?.client_id, filters['metadata.client_id']))
  );
}

describe.each(ENGINES)('report totals equal the sum of event values (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, { now: new Date(NOW).toISOString(), rateLimiter: unlimited });
  });
  afterAll(async () => h.close());

  it('for random events, group-bys, filters, periods, sorts and report times', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(eventArb, { maxLength: 20 }),
        groupByArb,
        fc.constantFrom(...PERIODS),
        fc.constantFrom('events', 'hours_saved', 'cost_saved', 'agent_cost', 'net_saved' as const),
        filtersArb,
        // Asked up to 45 days before the last events: windows fall on every weekday and month
        // edge, and events after the window sit in the week and month buckets it reads.
        fc.integer({ min: 0, max: 45 * DAY }),
        async (seeded, groupBy, period, sort, filters, before) => {
          h.clock.set(new Date(NOW));
          const org = await h.createOrg({ plan: 'pro' });
          const ctx = await h.orgCtx(org);
          const events = (await seed(ctx, seeded)).filter((e) => matches(e, filters));
          const at = NOW - before;
          const from = windowFrom(period, at);
          h.clock.set(new Date(at));
          const query = new URLSearchParams({ period, group_by: groupBy.join(','), sort, ...filters });
          const url = `/v1/reports/time-saved?${query}`;
          const res = await h.request({ method: 'GET', url, apiKey: org.apiKey });
          expect(res.statusCode).toBe(200);
          const body = res.json();
          const expected = expectedRows(events, { groupBy, from, to: at, sort });
          expect(body.rows).toEqual(expected.rows);
          expect(body.meta.total_groups).toBe(expected.totalGroups);

          const inWindow = events.filter(
            (e) => Date.parse(e.occurred_at) >= from && Date.parse(e.occurred_at) <= at,
          );
          const micros = (values: number[]) => values.reduce((s, v) => s + Math.round(v * 1e6), 0);
          expect(body.rows.reduce((s: number, r: { events: number }) => s + r.events, 0)).toBe(
            inWindow.length,
          );
          expect(micros(body.rows.map((r: { hours_saved: number }) => r.hours_saved))).toBe(
            micros(inWindow.map((e) => e.hours_saved)),
          );
          expect(micros(body.rows.map((r: { net_saved: number }) => r.net_saved))).toBe(
            micros(inWindow.map((e) => e.net_saved)),
          );

          // The rollup path and the plain GROUP BY over raw events agree row for row.
          const metadata: Array<[string, string]> =
            filters['metadata.client_id'] === undefined ? [] : [['client_id', filters['metadata.client_id']]];
          const input = {
            period,
            groupBy,
            sort,
            top: null,
            filters: {
              agentId: filters.agent_id,
              taskType: filters.task_type,
              clientId: filters.client_id,
              outcome: filters.outcome as Outcome | undefined,
              metadata,
            },
          };
          const raw = await buildReport({ ctx, input, options: { forceRaw: true } });
          expect(raw.rows).toEqual(body.rows);
        },
      ),
      { numRuns: 60 },
    );
    // 60 runs of real reports: minutes, not seconds, on a loaded 2-core machine.
  }, 180_000);
});
