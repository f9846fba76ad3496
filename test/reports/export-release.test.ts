import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openExport } from '../../src/reports/export.js';
import { reportInput } from '../../src/reports/input.js';
import { PAGE_ROWS } from '../../src/reports/stream-rows.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { parseCsv } from './csv-parse.js';
import { unlimited } from './unlimited.js';

const NOW = '2026-11-20T12:00:00.000Z';
const AGENTS = PAGE_ROWS + 150; // more groups than one page: the export reads several

function withinSeconds<T>(promise: Promise<T>, seconds = 5): Promise<T | 'timed out'> {
  return Promise.race([
    promise,
    new Promise<'timed out'>((resolve) => setTimeout(() => resolve('timed out'), seconds * 1000)),
  ]);
}

describe.each(ENGINES)('export releases its database connection (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, { now: NOW, rateLimiter: unlimited });
    for (let start = 0; start < AGENTS; start += 500) {
      const events = Array.from({ length: Math.min(500, AGENTS - start) }, (_, i) => ({
        agent_id: `agent-${String(start + i).padStart(5, '0')}`,
        task_type: 'dev_bug_fix',
        outcome: 'success',
        // Distinct baselines give distinct hours, so the sort is not all tie-breaks.
        human_baseline_minutes: 1 + ((start + i) % 97),
        occurred_at: '2026-11-19T10:00:00.000Z',
      }));
      const res = await h.request({ method: 'POST', url: '/v1/track/batch', payload: { events } });
      expect(res.statusCode).toBe(207);
    }
  });
  afterAll(async () => h.close());

  const track = () =>
    h.request({
      method: 'POST',
      url: '/v1/track',
      payload: { agent_id: 'late', task_type: 'dev_bug_fix', outcome: 'success', occurred_at: NOW },
    });
  const report = () => h.request({ method: 'GET', url: '/v1/reports/time-saved?group_by=task_type' });

  /** Sessions holding locks on this test's schema with an open transaction (PostgreSQL). */
  async function openTransactions(): Promise<number> {
    if (engine !== 'postgres') return 0;
    const admin = new pg.Client({ connectionString: h.storage.url });
    await admin.connect();
    try {
      const { rows } = await admin.query<{ n: number }>(
        `SELECT count(DISTINCT a.pid)::int AS n FROM pg_locks l
           JOIN pg_class c ON c.oid = l.relation
           JOIN pg_namespace s ON s.oid = c.relnamespace
           JOIN pg_stat_activity a ON a.pid = l.pid
          WHERE s.nspname = $1 AND a.state = 'idle in transaction' AND a.pid <> pg_backend_pid()`,
        [h.storage.schema],
      );
      return rows[0]?.n ?? 0;
    } finally {
      await admin.end();
    }
  }

  async function waitForNoOpenTransaction(): Promise<number> {
    let open = await openTransactions();
    for (let i = 0; i < 50 && open > 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      open = await openTransactions();
    }
    return open;
  }

  it('closes the rows when the response body is destroyed before its first read', async () => {
    const ctx = await h.orgCtx();
    const body = await openExport({ ctx, input: reportInput({ period: '30d' }, { sort: 'hours_saved' }) });
    body.destroy(); // the client went away before Fastify read anything
    expect((await withinSeconds(report())) === 'timed out').toBe(false);
    expect((await withinSeconds(track())) === 'timed out').toBe(false);
    expect(await waitForNoOpenTransaction()).toBe(0);
  });

  it('closes the rows when the body is destroyed halfway through', async () => {
    const ctx = await h.orgCtx();
    const body = await openExport({ ctx, input: reportInput({ period: '30d' }, { sort: 'hours_saved' }) });
    const first: unknown = await new Promise((resolve) => body.once('data', resolve));
    expect(String(first)).toContain('agent_id');
    body.destroy();
    expect((await withinSeconds(report())) === 'timed out').toBe(false);
    expect(await waitForNoOpenTransaction()).toBe(0);
  });

  it('lets tracking go on while an export waits for a slow client', async () => {
    const ctx = await h.orgCtx();
    const body = await openExport({ ctx, input: reportInput({ period: '30d' }, { sort: 'hours_saved' }) });
    try {
      const res = await withinSeconds(track());
      expect(res === 'timed out' ? res : res.statusCode).toBe(201);
    } finally {
      body.destroy();
    }
  });

  it('exports the same rows as the JSON report, page after page, cut at top', async () => {
    for (const top of [null, PAGE_ROWS, PAGE_ROWS + 7]) {
      const q = 'period=30d&group_by=agent';
      const json = (await h.request({ method: 'GET', url: `/v1/reports/time-saved?${q}&top=10000` })).json();
      const cut = top === null ? '' : `&top=${top}`;
      const res = await h.request({ method: 'GET', url: `/v1/reports/export?${q}${cut}` });
      expect(res.statusCode).toBe(200);
      const records = parseCsv(res.body).slice(1);
      const expected = (json.rows as Array<{ group: { agent_id: string }; events: number }>).slice(
        0,
        top ?? undefined,
      );
      expect(records.length).toBe(expected.length);
      expect(records.map((r) => r[0])).toEqual(expected.map((r) => r.group.agent_id));
    }
  });
});
