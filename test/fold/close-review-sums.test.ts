import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUM_COLUMNS } from '../../src/reports/rollups.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, pausedStageOptions, type Harness, type TestOrg } from '../support/harness.js';
import { foldAll } from './derived.js';

// Closing a week or a month adds its day rows up into week and month rows. For an organisation
// without any adjustment the review sums are left at their default (fold/rollups.ts RESUMS); one
// with a review beside it must still get its review time into its week and month rows.

const NOW = Date.parse('2026-11-20T12:00:00.000Z'); // a Friday
const OCCURRED = '2026-11-20T09:00:00.000Z'; // today: its day, week and month are open, so day rows only
const LATER = '2026-12-02T12:00:00.000Z'; // that week and month have ended: the stage closes them

describe.each(ENGINES)('closing weeks and months with and without reviews (%s)', (engine) => {
  let h: Harness;
  let reviewed: TestOrg;
  let plain: TestOrg;
  beforeAll(async () => {
    h = await createHarness(engine, pausedStageOptions(NOW));
    reviewed = await h.createOrg({ plan: 'pro', hourlyRate: 50 });
    plain = await h.createOrg({ plan: 'pro', hourlyRate: 50 });
  });
  afterAll(async () => h.close());

  const track = async (org: TestOrg) => {
    const res = await h.request({
      method: 'POST',
      url: '/v1/track',
      apiKey: org.apiKey,
      payload: {
        agent_id: 'bot',
        task_type: 'support_ticket_reply',
        outcome: 'needs_review',
        human_baseline_minutes: 60,
        occurred_at: OCCURRED,
        metadata: { client_id: 'acme' },
      },
    });
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as { event_id: string };
  };

  /** Each week or month row's sums, and the sums of the day rows it covers. */
  const coarseAndDays = async (org: TestOrg) => {
    const sums = (prefix: string) => sql.raw(SUM_COLUMNS.map((c) => `${prefix}${c} AS ${c}`).join(', '));
    const daySums = sql.raw(SUM_COLUMNS.map((c) => `SUM(d.${c}) AS ${c}`).join(', '));
    const { rows: coarse } = await sql<Record<string, unknown>>`
      SELECT grain, day, agent_id, task_type, client_key, ${sums('')} FROM report_rollups
      WHERE org_id = ${org.id} AND (grain LIKE '%/week' OR grain LIKE '%/month')
      ORDER BY grain, day, agent_id, task_type, client_key`.execute(h.ctx.db);
    const days = [];
    for (const row of coarse) {
      const grain = String(row.grain).split('/')[0] as string;
      const first = Number(row.day);
      const end = String(row.grain).endsWith('/week') ? first + 7 : first + 31;
      const { rows } = await sql<Record<string, unknown>>`
        SELECT ${daySums} FROM report_rollups d
        WHERE d.org_id = ${org.id} AND d.grain = ${grain} AND d.day >= ${first} AND d.day < ${end}
          AND d.agent_id = ${row.agent_id} AND d.task_type = ${row.task_type} AND d.client_key = ${row.client_key}`.execute(
        h.ctx.db,
      );
      days.push(rows[0]);
    }
    const numbers = (rows: Array<Record<string, unknown> | undefined>) =>
      rows.map((r) => Object.fromEntries(SUM_COLUMNS.map((c) => [c, Number(r?.[c] ?? 0)])));
    return { coarse: numbers(coarse), days: numbers(days) };
  };

  it('adds the review sums of an organisation with reviews, and the other sums of both', async () => {
    const event = await track(reviewed);
    await track(plain);
    const res = await h.request({
      method: 'POST',
      url: `/v1/events/${event.event_id}/review`,
      apiKey: reviewed.apiKey,
      payload: { review_minutes: 15, verdict: 'accepted' },
    });
    expect(res.statusCode, res.body).toBe(201);
    await foldAll(h.ctx);
    // Nothing closed yet: the event's week and month are the current ones.
    expect((await coarseAndDays(reviewed)).coarse).toEqual([]);

    h.clock.set(LATER);
    await foldAll(h.ctx);
    for (const org of [reviewed, plain]) {
      const { coarse, days } = await coarseAndDays(org);
      // The four grains of two or more keys, by week and by month: the rows were built from the day rows.
      expect(coarse.length).toBe(8);
      expect(coarse).toEqual(days);
      for (const row of coarse) expect(row.events).toBe(1);
    }
    const reviewedRows = (await coarseAndDays(reviewed)).coarse;
    for (const row of reviewedRows) {
      // 15 minutes of review at 50.00 an hour.
      expect(row.review_hours_micros).toBe(250_000);
      expect(row.needs_review_review_cost_micros).toBe(12_500_000);
      expect(row.hours_saved_micros).toBe(750_000);
    }
    for (const row of (await coarseAndDays(plain)).coarse) {
      expect(row.review_hours_micros).toBe(0);
      expect(row.hours_saved_micros).toBe(500_000);
    }
  });
});
