import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { parseCsv } from '../reports/csv-parse.js';
import { unlimited } from '../reports/unlimited.js';

const NOW = '2026-11-20T12:00:00.000Z';
const METRICS = [
  'events',
  'hours_saved',
  'cost_saved',
  'agent_cost',
  'net_saved',
  'review_hours',
  'review_cost',
] as const;
type Figures = Record<(typeof METRICS)[number], number>;

function add(a: Figures, b: Figures): Figures {
  const out = {} as Figures;
  for (const m of METRICS) out[m] = Math.round(a[m] * 1e6 + b[m] * 1e6) / 1e6;
  return out;
}

describe.each(ENGINES)('a closed month after reviews and restatements (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, { now: NOW, rateLimiter: unlimited });
  });
  afterAll(async () => h.close());

  it('lists the review and the restatement entries since closing: statement + entries = live', async () => {
    const call = (method: 'GET' | 'POST', url: string, payload?: object) =>
      h.request({ method, url, ...(payload ? { payload } : {}) });
    const ids: string[] = [];
    for (const [type, outcome, at] of [
      ['dev_code_review', 'needs_review', '2026-10-03T10:00:00Z'],
      ['dev_code_review', 'success', '2026-10-12T10:00:00Z'],
      ['support_ticket_reply', 'success', '2026-10-20T10:00:00Z'],
      ['dev_code_review', 'success', '2026-11-02T10:00:00Z'],
    ] as const) {
      const res = await call('POST', '/v1/track', {
        agent_id: 'bot-1',
        task_type: type,
        outcome,
        occurred_at: at,
        agent_cost: 0.2,
      });
      expect(res.statusCode, res.body).toBe(201);
      ids.push(res.json().event_id);
    }
    const closed = await call('POST', '/v1/periods/2026-10/close', { reason: 'October books' });
    expect(closed.statusCode, closed.body).toBe(201);
    const statement = closed.json();
    // The versions in force during October: the rate and the outcome credits, from the start.
    expect(
      statement.assumptions.versions.map((v: { kind: string; key: string | null }) => [v.kind, v.key]),
    ).toEqual([
      ['default_hourly_rate', null],
      ['outcome_credit', 'success'],
      ['outcome_credit', 'needs_review'],
      ['outcome_credit', 'failure'],
    ]);
    const history = (await call('GET', '/v1/assumptions/history')).json().data;
    for (const v of statement.assumptions.versions)
      expect(history.map((x: { id: string }) => x.id)).toContain(v.id);

    h.clock.advance(60_000);
    const review = await call('POST', `/v1/events/${ids[0]}/review`, {
      review_minutes: 12,
      verdict: 'corrected',
    });
    expect(review.statusCode, review.body).toBe(201);
    h.clock.advance(60_000);
    const restated = await call('POST', '/v1/restatements', {
      kind: 'baseline_override',
      key: 'dev_code_review',
      value: 45,
      effective_from: '2026-10-01',
      reason: 'time study',
    });
    expect(restated.statusCode, restated.body).toBe(201);
    const rst = restated.json().id;

    const changes = (await call('GET', '/v1/periods/2026-10/changes')).json();
    expect(changes.statement).toEqual(statement.totals);
    // The review, then the restatement of both October code reviews; November's is not October's.
    expect(
      changes.entries.map((e: { kind: string; cause: string; cause_id: string; event_id: string }) => [
        e.kind,
        e.cause,
        e.event_id,
        e.cause_id,
      ]),
    ).toEqual([
      ['adjustment', 'review', ids[0], review.json().review.id],
      // Entries recorded together, by their ids (which name the event).
      ...[ids[0], ids[1]].sort().map((id) => ['adjustment', 'restatement', id, rst]),
    ]);
    for (const e of changes.entries) expect(e.events).toBe(0);
    // The review's entry carries its measured time.
    expect(changes.entries[0].review_hours).toBe(0.2);
    expect(add(changes.statement, changes.entries_total)).toEqual(changes.live.totals);
    expect(changes.difference.totals).toEqual(changes.entries_total);
    expect(changes.unexplained).toEqual(Object.fromEntries(METRICS.map((m) => [m, 0])));
    expect(changes.live.totals.review_hours).toBe(0.2);
    // The live figures are the reports'.
    const report = (await call('GET', '/v1/reports/time-saved?period=all&group_by=month'))
      .json()
      .rows.find((r: { group: { month: string } }) => r.group.month === '2026-10');
    for (const m of METRICS) expect([m, changes.live.totals[m]]).toEqual([m, report[m]]);

    // The statement's CSV carries the review columns.
    const csv = await call('GET', '/v1/periods/2026-10/statement.csv');
    const [header, total] = parseCsv(csv.body);
    expect(header).toEqual(['dimension', 'key', ...METRICS]);
    expect(total?.slice(0, 2)).toEqual(['total', '']);
  });
});
