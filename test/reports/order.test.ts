import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareText, sortReportRows } from '../../src/reports/order.js';
import type { Dimension, Metric } from '../../src/reports/params.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { parseCsv } from './csv-parse.js';
import { unlimited } from './unlimited.js';

/** Byte order of UTF-8, as SQLite's BINARY and PostgreSQL's "C" collation compare. */
const byUtf8 = (a: string, b: string) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));

/** Texts that UTF-16 order and byte order sort differently: BMP characters above the surrogates against astral ones. */
const TRICKY = ['a', 'b', 'é', '\uE000', '\uFF21', '\uFFFD', '😀', '𝔸', 'a😀', 'a\uFF21'];

describe('compareText', () => {
  it('orders like the UTF-8 bytes, where UTF-16 code units would not', () => {
    expect('😀' < '\uFF21').toBe(true); // the pitfall: a surrogate sorts before U+FF21
    expect(Math.sign(compareText('😀', '\uFF21'))).toBe(1);
    expect(Math.sign(compareText('a', 'a😀'))).toBe(-1);
    expect(compareText('𝔸', '𝔸')).toBe(0);
  });

  it('agrees with the byte order for any strings', () => {
    const text = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 8 }),
      fc.string({ unit: fc.constantFrom(...TRICKY), maxLength: 4 }),
    );
    fc.assert(
      fc.property(text, text, (a, b) => {
        expect(Math.sign(compareText(a, b))).toBe(Math.sign(byUtf8(a, b)));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('sortReportRows', () => {
  /** The order DESIGN §7 gives, written out plainly: metric descending, then group values ascending, no value last. */
  function reference(rows: unknown[][], n: number, sort: Metric): unknown[][] {
    const metric = (row: unknown[]) => {
      const [events, h, c, a] = row.slice(n) as number[];
      return {
        events,
        hours_saved: h,
        cost_saved: c,
        agent_cost: a,
        net_saved: (c as number) - (a as number),
      }[sort] as number;
    };
    return [...rows].sort((x, y) => {
      if (metric(x) !== metric(y)) return metric(y) - metric(x);
      for (let i = 0; i < n; i++) {
        const [p, q] = [x[i], y[i]];
        if (p === q) continue;
        if (p === null) return 1;
        if (q === null) return -1;
        return typeof p === 'number' ? p - (q as number) : byUtf8(p as string, q as string);
      }
      return 0;
    });
  }

  it('sorts like the database would, ties and missing clients included', () => {
    const groupBy: Dimension[] = ['agent', 'client', 'day'];
    // Few distinct values, so that most rows tie on the metric and on leading group values.
    const row = fc.tuple(
      fc.constantFrom(...TRICKY),
      fc.option(fc.constantFrom(...TRICKY), { nil: null }),
      fc.integer({ min: 20_000, max: 20_003 }),
      fc.integer({ min: 1, max: 3 }),
      fc.constantFrom(0, 1_500_000, 2 ** 52, 7),
      fc.constantFrom(0, 2_000_000, 3),
      fc.constantFrom(0, 500_000, 2_000_000),
    );
    fc.assert(
      fc.property(
        fc.array(row, { maxLength: 60 }),
        fc.constantFrom<Metric>('events', 'hours_saved', 'cost_saved', 'agent_cost', 'net_saved'),
        (tuples, sort) => {
          const rows = tuples.map((t) => [...t] as unknown[]);
          const expected = reference(rows, groupBy.length, sort);
          expect(sortReportRows(rows, groupBy, sort)).toEqual(expected);
        },
      ),
      { numRuns: 500 },
    );
  });
});

const NOW = '2026-11-20T12:00:00.000Z';

describe.each(ENGINES)('report rows sorted in code and by the database agree (%s)', (engine) => {
  let h: Harness;
  // Every agent × client once on the 19th: all tie on every metric. Agent 'b' without a client
  // four times more on the 18th: that pair leads, and on the 18th 'b' ties with every agent's
  // four events of the 19th.
  const agents = TRICKY;
  const clients: Array<string | null> = ['k', null, '😀', '\uFF21'];
  beforeAll(async () => {
    h = await createHarness(engine, { now: NOW, rateLimiter: unlimited });
    const events = agents.flatMap((agent) =>
      clients.map((client) => ({
        agent_id: agent,
        task_type: 'dev_bug_fix',
        outcome: 'success',
        human_baseline_minutes: 30,
        occurred_at: '2026-11-19T10:00:00.000Z',
        ...(client === null ? {} : { metadata: { client_id: client } }),
      })),
    );
    const extra = {
      agent_id: 'b',
      task_type: 'dev_bug_fix',
      outcome: 'success',
      human_baseline_minutes: 30,
      occurred_at: '2026-11-18T10:00:00.000Z',
    };
    const extras = [extra, extra, extra, extra];
    const res = await h.request({
      method: 'POST',
      url: '/v1/track/batch',
      payload: { events: [...events, ...extras] },
    });
    expect(res.statusCode).toBe(207);
  });
  afterAll(async () => h.close());

  it('gives one order in JSON, with top, and in the export: byte order, no client last', async () => {
    const q = 'period=30d&group_by=agent,client&sort=hours_saved';
    type Row = { group: { agent_id: string; client_id: string | null } };
    const pairs = (rows: Row[]) => rows.map((r) => [r.group.agent_id, r.group.client_id]);
    const json = (await h.request({ method: 'GET', url: `/v1/reports/time-saved?${q}` })).json();
    const top = (await h.request({ method: 'GET', url: `/v1/reports/time-saved?${q}&top=1000` })).json();
    const csv = parseCsv((await h.request({ method: 'GET', url: `/v1/reports/export?${q}` })).body).slice(1);

    const ties = agents
      .flatMap((agent) => clients.map((client) => [agent, client] as [string, string | null]))
      .filter(([agent, client]) => !(agent === 'b' && client === null))
      .sort(([a1, c1], [a2, c2]) => {
        if (a1 !== a2) return byUtf8(a1, a2);
        if (c1 === c2) return 0;
        return c1 === null ? 1 : c2 === null ? -1 : byUtf8(c1, c2);
      });
    const expected = [['b', null], ...ties];
    expect(pairs(json.rows)).toEqual(expected);
    expect(pairs(top.rows)).toEqual(expected);
    // The CSV writes no client as an empty cell.
    expect(csv.map(([agent, client]) => [agent, client === '' ? null : client])).toEqual(expected);
  });

  it('orders time buckets by date under a tied metric', async () => {
    const q = 'period=30d&group_by=day,agent&sort=events';
    const json = (await h.request({ method: 'GET', url: `/v1/reports/time-saved?${q}` })).json();
    const keys = json.rows.map((r: { group: { day: string; agent_id: string }; events: number }) => [
      r.events,
      r.group.day,
      r.group.agent_id,
    ]);
    const expected = [
      [clients.length, '2026-11-18', 'b'],
      ...[...agents].sort(byUtf8).map((agent) => [clients.length, '2026-11-19', agent]),
    ];
    expect(keys).toEqual(expected);
  });
});
