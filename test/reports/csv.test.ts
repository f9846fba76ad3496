import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { parseCsv } from './csv-parse.js';
import { seed } from './seed.js';
import { unlimited } from './unlimited.js';

const NOW = Date.parse('2026-11-20T12:00:00.000Z');
const HOSTILE = ['=SUM(A1:A9)', '+1', '-2', '@cmd', '\tlead', '\rcr', 'a,"quoted"\r\nline', 'plain é ✓'];
const METRICS = [
  'events',
  'hours_saved',
  'cost_saved',
  'agent_cost',
  'net_saved',
  'review_hours',
  'review_cost',
] as const;

function neutral(text: string | null): string {
  if (text === null) return '';
  return /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
}

describe.each(ENGINES)('CSV reports (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, { now: new Date(NOW).toISOString(), rateLimiter: unlimited });
    const ctx = await h.orgCtx();
    await seed(
      ctx,
      HOSTILE.flatMap((agent, i) => [
        // Agent cost above cost saved gives negative net_saved: a number, never neutralised.
        {
          agent,
          taskType: 'dev_bug_fix',
          outcome: 'success' as const,
          client: i % 2 ? '=client' : null,
          occurredAt: NOW - i * 3_600_000,
          agentCost: 500,
        },
        {
          agent,
          taskType: 'support_faq_answer',
          outcome: 'needs_review' as const,
          client: 'c',
          occurredAt: NOW - i * 86_400_000,
          agentCost: null,
        },
      ]),
    );
  });
  afterAll(async () => h.close());

  it('format=csv parses back to the JSON rows, with neutralised text cells', async () => {
    for (const groupBy of ['agent', 'agent,client,day', 'month,task_type']) {
      const url = `/v1/reports/cost-saved?period=30d&group_by=${groupBy}`;
      const json = (await h.request({ method: 'GET', url })).json();
      const res = await h.request({ method: 'GET', url: `${url}&format=csv` });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
      const [header, ...records] = parseCsv(res.body);
      const keys = Object.keys(json.rows[0].group);
      expect(header).toEqual([...keys, ...METRICS]);
      expect(records).toEqual(
        json.rows.map((row: { group: Record<string, string | null> } & Record<string, number>) => [
          ...keys.map((k) => neutral(row.group[k] ?? null)),
          ...METRICS.map((m) => String(row[m])),
        ]),
      );
    }
  });

  it('neutralises every formula start and never a number', async () => {
    const res = await h.request({ method: 'GET', url: '/v1/reports/time-saved?group_by=agent&format=csv' });
    const records = parseCsv(res.body).slice(1);
    const agents = records.map((r) => r[0]);
    expect(agents).toEqual(
      expect.arrayContaining([
        "'=SUM(A1:A9)",
        "'+1",
        "'-2",
        "'@cmd",
        "'\tlead",
        "'\rcr",
        'a,"quoted"\r\nline',
        'plain é ✓',
      ]),
    );
    const nets = records.map((r) => r[5] ?? '');
    expect(nets.some((n) => n.startsWith('-'))).toBe(true);
    expect(nets.every((n) => !n.startsWith("'"))).toBe(true);
  });

  it('leaderboard CSV starts with rank', async () => {
    const res = await h.request({
      method: 'GET',
      url: '/v1/reports/leaderboard?metric=net_saved&format=csv',
    });
    const [header, first] = parseCsv(res.body);
    expect(header).toEqual(['rank', 'agent_id', ...METRICS]);
    expect(first?.[0]).toBe('1');
  });

  it('export streams the same CSV as an attachment', async () => {
    const query = 'period=90d&group_by=client,agent&sort=events&top=5';
    const csv = await h.request({ method: 'GET', url: `/v1/reports/time-saved?${query}&format=csv` });
    const res = await h.request({ method: 'GET', url: `/v1/reports/export?${query}` });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).toBe('attachment; filename="tally-export-90d-20261120.csv"');
    expect(res.headers['transfer-encoding']).toBe('chunked');
    expect(res.body).toBe(csv.body);
    const all = await h.request({ method: 'GET', url: '/v1/reports/export' });
    expect(all.headers['content-disposition']).toBe('attachment; filename="tally-export-30d-20261120.csv"');
    expect(parseCsv(all.body)[0]).toEqual(['agent_id', ...METRICS]);
  });
});
