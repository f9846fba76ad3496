import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/orgs/api-keys.js';
import { person, personSession } from '../accounts/support.js';
import { csrfOf, page, post } from '../dashboard/support.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness, type TestOrg } from '../support/harness.js';
import { parseCsv } from '../reports/csv-parse.js';
import { unlimited } from '../reports/unlimited.js';
import { seed, type SeedEvent } from '../reports/seed.js';

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

function event(iso: string, agent: string, extra: Partial<SeedEvent> = {}): SeedEvent {
  return {
    agent,
    taskType: 'support_ticket_reply',
    outcome: 'success',
    client: null,
    occurredAt: Date.parse(iso),
    agentCost: 0.37,
    baselineMinutes: 45,
    ...extra,
  };
}

const OCTOBER: SeedEvent[] = [
  event('2026-10-01T00:00:00Z', 'bot-1', { client: 'acme' }),
  event('2026-10-03T10:00:00Z', 'bot-1', { client: 'acme', outcome: 'needs_review', agentCost: 1.1 }),
  event('2026-10-09T10:00:00Z', 'bot-2', { taskType: 'dev_code_review', agentCost: null }),
  event('2026-10-20T08:30:00Z', 'bot-2', { client: 'globex', outcome: 'failure', agentCost: 2.5 }),
  event('2026-10-31T23:59:59.999Z', 'bot-3', { client: 'globex', baselineMinutes: 7, agentCost: 0.01 }),
  // Outside October: never in its statement.
  event('2026-09-30T23:59:59.999Z', 'bot-1'),
];

/** a + b per metric in micro-units, as the API rounds. */
function add(a: Figures, b: Figures): Figures {
  const out = {} as Figures;
  for (const m of METRICS) out[m] = Math.round(a[m] * 1e6 + b[m] * 1e6) / 1e6;
  return out;
}

type Keyed = Figures & Record<string, unknown>;
interface StatementJson {
  id: string;
  totals: Figures;
  by_agent: Array<Keyed & { agent_id: string | null }>;
  by_task_type: Array<Keyed & { task_type: string | null }>;
  by_client: Array<Keyed & { client_id: string | null }>;
  [key: string]: unknown;
}
type ReportJson = { rows: Array<Figures & { group: Record<string, string | null> }> };
type Listed = { data: Array<Record<string, string | null>> };

function pick(row: Figures): Figures {
  return Object.fromEntries(METRICS.map((m) => [m, row[m]])) as Figures;
}

describe.each(ENGINES)('closed months (%s)', (engine) => {
  let h: Harness;
  let org: TestOrg;
  beforeAll(async () => {
    h = await createHarness(engine, { now: NOW, rateLimiter: unlimited });
    org = await h.createOrg();
    await seed(await h.orgCtx(org), OCTOBER);
  });
  afterAll(async () => h.close());

  const call = (method: 'GET' | 'POST', url: string, payload?: object, key = org.apiKey) =>
    h.request({ method, url, apiKey: key, ...(payload ? { payload } : {}) });

  it('refuses to close a month that has not ended, and asks for a reason', async () => {
    const november = await call('POST', '/v1/periods/2026-11/close', { reason: 'too early' });
    expect(november.statusCode).toBe(422);
    expect(november.json().error).toMatchObject({
      code: 'validation_error',
      details: [{ path: '/params/month', message: expect.stringContaining('2026-12-01T00:00:00.000Z') }],
    });
    const december = await call('POST', '/v1/periods/2026-12/close', { reason: 'later' });
    expect(december.statusCode).toBe(422);
    const noReason = await call('POST', '/v1/periods/2026-10/close', {});
    expect(noReason.statusCode).toBe(422);
    const blank = await call('POST', '/v1/periods/2026-10/close', { reason: '   ' });
    expect(blank.json().error.details[0].path).toBe('/body/reason');
    const badMonth = await call('POST', '/v1/periods/2026-13/close', { reason: 'x' });
    expect(badMonth.statusCode).toBe(422);
    expect((await call('GET', '/v1/periods')).json()).toEqual({ data: [] });
    expect((await call('GET', '/v1/periods/2026-10')).statusCode).toBe(404);
  });

  let statement: StatementJson;

  it('closes an ended month and freezes figures equal to the reports', async () => {
    // With only October's events in the last 90 days… and September's one; compare with the
    // report over everything minus September's event through its own report.
    const res = await call('POST', '/v1/periods/2026-10/close', { reason: 'October books' });
    expect(res.statusCode, res.body).toBe(201);
    statement = res.json<StatementJson>();
    expect(statement).toMatchObject({
      id: expect.stringMatching(/^pst_[0-9A-Z]{26}$/),
      month: '2026-10',
      currency: 'EUR',
      range: { from: '2026-10-01T00:00:00.000Z', to: '2026-11-01T00:00:00.000Z' },
      closed_at: NOW,
      closed_by: org.keyId,
      reason: 'October books',
      reopened_at: null,
    });
    expect(statement.totals.events).toBe(5);
    // The totals equal the sum of each breakdown.
    for (const list of ['by_agent', 'by_task_type', 'by_client']) {
      const sum = (statement[list] as Figures[]).reduce((s, r) => add(s, pick(r)), {
        events: 0,
        hours_saved: 0,
        cost_saved: 0,
        agent_cost: 0,
        net_saved: 0,
        review_hours: 0,
        review_cost: 0,
      });
      expect(sum, list).toEqual(statement.totals);
    }
    // The figures are the reports' own: the whole history grouped by month, October's row.
    const byMonth = await call('GET', '/v1/reports/time-saved?period=all&group_by=month');
    const october = byMonth.json<ReportJson>().rows.find((r) => r.group.month === '2026-10');
    expect(october && pick(october)).toEqual(statement.totals);
    const byAgentMonth = await call('GET', '/v1/reports/time-saved?period=all&group_by=agent,month');
    const octoberAgents = byAgentMonth
      .json<ReportJson>()
      .rows.filter((r) => r.group.month === '2026-10')
      .map((r) => ({ agent_id: r.group.agent_id, ...pick(r) }));
    expect(new Set(octoberAgents.map((r) => JSON.stringify(r)))).toEqual(
      new Set(statement.by_agent.map((r) => JSON.stringify(r))),
    );
    expect(statement.by_client.map((r) => r.client_id).sort()).toEqual(['acme', 'globex', null].sort());
    expect(statement.assumptions).toMatchObject({
      month: '2026-10',
      settings: { currency: 'EUR', default_hourly_rate: 50 },
      baseline_overrides: [],
      custom_task_types: [],
    });
  });

  it('refuses to close a closed month twice', async () => {
    const again = await call('POST', '/v1/periods/2026-10/close', { reason: 'again' });
    expect(again.statusCode).toBe(422);
    expect(again.json().error.message).toContain('already closed');
    expect((await call('GET', '/v1/periods')).json().data).toEqual([
      {
        month: '2026-10',
        status: 'closed',
        statement_id: statement.id,
        closed_at: NOW,
        closed_by: org.keyId,
        reason: 'October books',
        reopened_at: null,
        reopen_reason: null,
      },
    ]);
  });

  it('keeps the statement frozen when a late event arrives, and shows it in the changes', async () => {
    h.clock.advance(60_000);
    const [late] = await seed(await h.orgCtx(org), [
      event('2026-10-15T12:00:00Z', 'bot-4', {
        client: 'initech',
        taskType: 'dev_code_review',
        agentCost: 3,
      }),
    ]);
    const after = await call('GET', '/v1/periods/2026-10');
    expect(after.statusCode).toBe(200);
    expect(after.json()).toEqual({ status: 'closed', ...statement });

    const changes = (await call('GET', '/v1/periods/2026-10/changes')).json();
    expect(changes.statement).toEqual(statement.totals);
    expect(changes.entries).toHaveLength(1);
    expect(changes.entries[0]).toMatchObject({
      kind: 'late_event',
      event_id: late?.event_id,
      agent_id: 'bot-4',
      client_id: 'initech',
      events: 1,
      at: '2026-11-20T12:01:00.000Z',
    });
    // statement + entries = live, overall and in every breakdown.
    expect(add(changes.statement, changes.entries_total)).toEqual(changes.live.totals);
    expect(changes.difference.totals).toEqual(changes.entries_total);
    expect(changes.unexplained).toEqual({
      events: 0,
      hours_saved: 0,
      cost_saved: 0,
      agent_cost: 0,
      net_saved: 0,
      review_hours: 0,
      review_cost: 0,
    });
    expect(changes.live.totals.events).toBe(6);
    expect(changes.difference.by_agent).toEqual([{ agent_id: 'bot-4', ...pick(changes.entries[0]) }]);
    expect(changes.difference.by_client).toEqual([{ client_id: 'initech', ...pick(changes.entries[0]) }]);
    expect(changes.difference.by_task_type).toEqual([
      { task_type: 'dev_code_review', ...pick(changes.entries[0]) },
    ]);
  });

  it('adds the closed months a report touches, with the live difference', async () => {
    const report = (await call('GET', '/v1/reports/cost-saved?period=90d&group_by=agent')).json();
    expect(report.closed_periods).toEqual([
      {
        month: '2026-10',
        closed_at: NOW,
        statement_id: statement.id,
        statement: statement.totals,
        live: add(
          statement.totals,
          pick((await call('GET', '/v1/periods/2026-10/changes')).json().entries[0]),
        ),
        difference: expect.objectContaining({ events: 1 }),
      },
    ]);
    const recent = (await call('GET', '/v1/reports/time-saved?period=7d')).json();
    expect(recent.closed_periods).toBeUndefined();
    const leaderboard = (await call('GET', '/v1/reports/leaderboard?period=ytd')).json();
    expect(leaderboard.closed_periods).toHaveLength(1);
  });

  it('gives the statement as CSV with the same figures as its JSON', async () => {
    const json = (await call('GET', '/v1/periods/2026-10')).json<StatementJson>();
    const download = await call('GET', '/v1/periods/2026-10/statement.csv');
    expect(download.statusCode).toBe(200);
    expect(download.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(download.headers['content-disposition']).toBe(
      'attachment; filename="tally-statement-2026-10.csv"',
    );
    const viaFormat = await call('GET', '/v1/periods/2026-10?format=csv');
    expect(viaFormat.body).toBe(download.body);
    const [header, ...rows] = parseCsv(download.body);
    expect(header).toEqual(['dimension', 'key', ...METRICS]);
    const figures = (cells: string[]) =>
      Object.fromEntries(METRICS.map((m, i) => [m, Number(cells[i + 2])])) as Figures;
    const expected = [
      ['total', '', json.totals],
      ...json.by_agent.map((r) => ['agent', r.agent_id ?? '', pick(r)]),
      ...json.by_task_type.map((r) => ['task_type', r.task_type ?? '', pick(r)]),
      ...json.by_client.map((r) => ['client', r.client_id ?? '', pick(r)]),
    ];
    expect(rows.map((r) => [r[0], r[1], figures(r)])).toEqual(expected);
  });

  it('reopens only as an owner and with a reason, audited; a new close keeps the old statement', async () => {
    const ingest = await createApiKey({ ctx: h.ctx, orgId: org.id, scope: 'ingest' });
    const refused = await call('POST', '/v1/periods/2026-10/reopen', { reason: 'fix' }, ingest.api_key);
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.code).toBe('insufficient_scope');
    expect((await call('POST', '/v1/periods/2026-10/reopen', {})).statusCode).toBe(422);
    // An admin key acts as an admin: reopening needs the owner role.
    const asAdmin = await call('POST', '/v1/periods/2026-10/reopen', { reason: 'late invoice' });
    expect(asAdmin.statusCode).toBe(403);
    expect(asAdmin.json().error).toMatchObject({
      code: 'insufficient_role',
      message: 'An admin key may not do this; it needs the owner role.',
    });
    expect((await call('GET', '/v1/periods')).json().data[0]).toMatchObject({ status: 'closed' });

    // An owner, signed in to the dashboard, reopens it; a month never closed is not found.
    await person(h, 'olive@example.com', 'owner', org);
    const cookie = await personSession(h, 'olive@example.com');
    const reopen = async (month: string, reason: string) => {
      const csrf = csrfOf((await page(h, cookie, `/dashboard/periods/${month}`)).body);
      const res = await post(h, cookie, `/dashboard/periods/${month}/reopen`, {
        csrf_token: csrf,
        reason,
        confirm: 'yes',
      });
      expect(res.statusCode).toBe(303);
      return (await page(h, cookie, String(res.headers.location))).body;
    };
    expect(await reopen('2026-09', 'x')).toContain('Not done: Closed period 2026-09');

    h.clock.advance(60_000);
    expect(await reopen('2026-10', 'late invoice from bot-4')).toContain('October 2026 reopened.');
    const reopened = await call('GET', '/v1/periods/2026-10/statements');
    expect(reopened.json<Listed>().data[0]).toMatchObject({
      id: statement.id,
      reopened_at: '2026-11-20T12:02:00.000Z',
      // A person holds no key: the audit log names them.
      reopened_by: null,
      reopen_reason: 'late invoice from bot-4',
      totals: statement.totals,
    });
    expect(await reopen('2026-10', 'twice')).toContain('Not done: month 2026-10 is not closed');
    expect((await call('GET', '/v1/periods')).json().data[0]).toMatchObject({ status: 'open' });
    const report = (await call('GET', '/v1/reports/cost-saved?period=90d')).json();
    expect(report.closed_periods).toBeUndefined();

    h.clock.advance(60_000);
    const closed = await call('POST', '/v1/periods/2026-10/close', { reason: 'October books, v2' });
    expect(closed.statusCode, closed.body).toBe(201);
    expect(closed.json().totals.events).toBe(6);
    const history = (await call('GET', '/v1/periods/2026-10/statements')).json<Listed>().data;
    expect(history.map((s) => [s.id, s.reason, s.reopen_reason])).toEqual([
      [closed.json().id, 'October books, v2', null],
      [statement.id, 'October books', 'late invoice from bot-4'],
    ]);
    const changes = (await call('GET', '/v1/periods/2026-10/changes')).json();
    expect(changes.entries).toEqual([]);
    expect(changes.statement).toEqual(changes.live.totals);

    const audit = (await call('GET', '/v1/audit-log')).json<Listed>().data;
    const periods = audit.filter((a) => a.target === 'period:2026-10');
    expect(periods.map((a) => [a.action, a.reason, a.actor_key_id, a.actor_email])).toEqual([
      ['period.closed', 'October books, v2', org.keyId, null],
      ['period.reopened', 'late invoice from bot-4', null, 'olive@example.com'],
      ['period.closed', 'October books', org.keyId, null],
    ]);
  });

  it("keeps each organisation's months to itself", async () => {
    const other = await h.createOrg();
    expect((await call('GET', '/v1/periods', undefined, other.apiKey)).json()).toEqual({ data: [] });
    expect((await call('GET', '/v1/periods/2026-10', undefined, other.apiKey)).statusCode).toBe(404);
    expect((await call('GET', '/v1/periods/2026-10/changes', undefined, other.apiKey)).statusCode).toBe(404);
  });
});
