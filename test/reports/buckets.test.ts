import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OrgCtx } from '../../src/context.js';
import { buildReport } from '../../src/reports/report.js';
import type { Dimension, Period, ReportFilters } from '../../src/reports/params.js';
import { planSources } from '../../src/reports/plan.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { lcg, seed, type SeedEvent } from './seed.js';
import { unlimited } from './unlimited.js';

const NOW = Date.parse('2026-11-20T12:00:00.000Z');
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** Reports that the half, week and month buckets of two- and three-key grains answer. */
const CASES: Array<{ groupBy: Dimension[]; filters: Omit<ReportFilters, 'metadata'> }> = [
  { groupBy: ['agent', 'client'], filters: {} },
  { groupBy: ['task_type', 'client', 'week'], filters: {} },
  { groupBy: ['agent', 'task_type', 'client', 'month'], filters: {} },
  { groupBy: ['agent'], filters: { clientId: 'k1' } },
  { groupBy: ['client', 'week'], filters: { agentId: 'b', taskType: 'dev_bug_fix' } },
  { groupBy: ['task_type'], filters: { agentId: 'a', clientId: 'k2' } },
  // Weeks cut at month ends serve reports by week and month together.
  { groupBy: ['agent', 'client', 'week', 'month'], filters: {} },
  // Every row keeps each outcome's sums: outcome filters read the coarse buckets too.
  { groupBy: ['agent', 'client'], filters: { outcome: 'success' } },
  { groupBy: ['task_type', 'client', 'week'], filters: { outcome: 'failure', agentId: 'a' } },
];
const PERIODS: Period[] = ['7d', '30d', '90d', 'ytd'];

describe.each(ENGINES)('reports from half, week and month buckets (%s)', (engine) => {
  let h: Harness;
  let ctx: OrgCtx;
  beforeAll(async () => {
    h = await createHarness(engine, { now: new Date(NOW).toISOString(), rateLimiter: unlimited });
    const org = await h.createOrg({ plan: 'pro' });
    ctx = await h.orgCtx(org);
    // ~3 events a day over 100 days and one after NOW: every bucket a report adds or takes
    // away holds events, and some groups exist only outside a given window.
    const rand = lcg(5);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)] as T;
    const events: SeedEvent[] = Array.from({ length: 300 }, () => ({
      agent: pick(['a', 'b', 'c']),
      taskType: pick(['support_ticket_reply', 'dev_bug_fix']),
      outcome: pick(['success', 'failure', 'needs_review'] as const),
      client: pick(['k1', 'k2', 'k3', null]),
      occurredAt: NOW - 99 * DAY + Math.floor(rand() * 100 * DAY),
      agentCost: rand() < 0.5 ? null : Math.round(rand() * 1e6) / 1e6,
      baselineMinutes: 1 + Math.floor(rand() * 300),
    }));
    // A group of its own in a single day that 30-day windows leave out or take away again.
    events.push({
      agent: 'lonely',
      taskType: 'dev_bug_fix',
      outcome: 'success',
      client: 'k9',
      occurredAt: NOW - 31 * DAY - 2 * HOUR,
      agentCost: 0.25,
    });
    // Tracked when they happened, roughly (occurred_at may lie at most 90 days back).
    const old = events.filter((e) => e.occurredAt < NOW - 80 * DAY);
    h.clock.set(new Date(NOW - 40 * DAY));
    await seed(ctx, old);
    h.clock.set(new Date(NOW));
    await seed(
      ctx,
      events.filter((e) => !old.includes(e)),
    );
  });
  afterAll(async () => h.close());

  it('equal the plain GROUP BY over raw events at report times on every weekday and month edge', async () => {
    let takenAway = 0;
    let cutWeeks = 0;
    // Every 17 hours over 50 days: each case and period at report times spread over the week.
    for (let k = 0; k < 70; k++) {
      const at = NOW - k * 17 * HOUR;
      h.clock.set(new Date(at));
      const { groupBy, filters: f } = CASES[k % CASES.length] ?? { groupBy: [], filters: {} };
      for (const period of PERIODS) {
        const input = {
          period,
          groupBy,
          sort: 'events' as const,
          top: null,
          filters: { ...f, metadata: [] },
        };
        const served = await buildReport({ ctx, input });
        const raw = await buildReport({ ctx, input, options: { forceRaw: true } });
        expect(served.rows, `${groupBy.join(',')} ${period} at ${new Date(at).toISOString()}`).toEqual(
          raw.rows,
        );
        expect(served.meta.total_groups).toBe(raw.meta.total_groups);
        const from = period === 'ytd' ? Date.UTC(2026, 0, 1) : at - Number(period.slice(0, -1)) * DAY;
        const sources = planSources({ from, to: at, endExclusive: at + 1 }, groupBy, input.filters);
        const rollups = sources.flatMap((s) => (s.kind === 'rollup' ? [s] : []));
        takenAway += rollups.filter((s) => s.sign === -1).length;
        // A week piece that starts on the first of a month other than a Monday.
        cutWeeks += rollups.filter(
          (s) => s.bucket === 'week' && new Date(s.fromDay * DAY).getUTCDay() !== 1,
        ).length;
      }
    }
    // The comparison went through buckets taken away, not only through added ones, and through
    // weeks cut at a month's end.
    expect(takenAway).toBeGreaterThan(20);
    expect(cutWeeks).toBeGreaterThan(5);
  });
});
