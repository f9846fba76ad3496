import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { versionsInForceDuring } from '../../src/assumptions/in-force.js';
import { repricerFor } from '../../src/assumptions/reprice.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness, type TestOrg } from '../support/harness.js';
import { unlimited } from '../reports/unlimited.js';

const NOW = '2026-11-20T12:00:00.000Z';

/** Events of three agents, two clients and two task types over October and November. */
const EVENTS = [
  ['a1', 'dev_code_review', 'success', 'acme', '2026-10-02T09:00:00Z', 0.5],
  ['a2', 'dev_code_review', 'needs_review', 'globex', '2026-10-15T09:00:00Z', null],
  ['a1', 'dev_bug_fix', 'success', 'acme', '2026-10-20T09:00:00Z', 1],
  ['a3', 'dev_code_review', 'failure', null, '2026-11-03T09:00:00Z', 0.25],
  ['a2', 'dev_code_review', 'success', 'acme', '2026-11-10T09:00:00Z', null],
  ['a1', 'dev_code_review', 'success', 'globex', '2026-09-30T23:59:59Z', 2],
] as const;

const CHANGE = {
  kind: 'baseline_override',
  key: 'dev_code_review',
  value: 41.5,
  effective_from: '2026-10-01',
};

describe.each(ENGINES)('restatements (%s)', (engine) => {
  let h: Harness;
  let org: TestOrg;
  let recomputed: TestOrg;
  beforeAll(async () => {
    h = await createHarness(engine, { now: NOW, rateLimiter: unlimited });
    org = await h.createOrg({ plan: 'pro' });
    recomputed = await h.createOrg({ plan: 'pro' });
  });
  afterAll(async () => h.close());

  const call = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object, key = org.apiKey) =>
    h.request({ method, url, apiKey: key, ...(payload ? { payload } : {}) });
  const trackAll = async (key: string) => {
    const out = [];
    for (const [agent, type, outcome, client, at, cost] of EVENTS) {
      const res = await call(
        'POST',
        '/v1/track',
        {
          agent_id: agent,
          task_type: type,
          outcome,
          occurred_at: at,
          ...(cost === null ? {} : { agent_cost: cost }),
          ...(client === null ? {} : { metadata: { client_id: client } }),
        },
        key,
      );
      expect(res.statusCode, res.body).toBe(201);
      out.push(res.json());
    }
    return out;
  };

  it('previews a past change without writing, with figures equal to a recomputation', async () => {
    const stored = await trackAll(org.apiKey);
    const auditBefore = (await call('GET', '/v1/audit-log')).json().data.length;
    const res = await call('POST', '/v1/restatements/preview', CHANGE);
    expect(res.statusCode, res.body).toBe(200);
    const preview = res.json();

    // The recomputation: another organisation with the same change from the same date,
    // then the same events tracked.
    const applied = await call(
      'POST',
      '/v1/restatements',
      { ...CHANGE, reason: 'recomputation' },
      recomputed.apiKey,
    );
    expect(applied.statusCode, applied.body).toBe(201);
    const fresh = await trackAll(recomputed.apiKey);

    // Moved: the code reviews of October and November (not September's, not the bug fix, not the failure).
    const moved = [0, 1, 4];
    expect(preview.restatement).toBe(true);
    expect(preview.affected_events).toBe(moved.length);
    expect(preview.events.map((e: { event_id: string }) => e.event_id)).toEqual(
      moved.map((i) => stored[i].event_id),
    );
    for (const [n, i] of moved.entries()) {
      const e = preview.events[n];
      const pick = (x: Record<string, unknown>) => ({
        resolved_baseline_minutes: x.resolved_baseline_minutes,
        resolved_hourly_rate: x.resolved_hourly_rate,
        hours_saved: x.hours_saved,
        cost_saved: x.cost_saved,
        net_saved: x.net_saved,
      });
      expect(e.before).toEqual(pick(stored[i]));
      expect(e.after).toEqual(pick(fresh[i]));
    }

    // Each month's totals, overall and by group, before (the live report) and after (the report
    // of the recomputed organisation).
    const monthly = async (key: string, groupBy: string) =>
      (await call('GET', `/v1/reports/time-saved?period=all&group_by=${groupBy}`, undefined, key)).json()
        .rows;
    const totals = (r: Record<string, unknown> | undefined) => ({
      events: r?.events ?? 0,
      hours_saved: r?.hours_saved ?? 0,
      cost_saved: r?.cost_saved ?? 0,
      agent_cost: r?.agent_cost ?? 0,
      net_saved: r?.net_saved ?? 0,
    });
    expect(preview.months.map((m: { month: string }) => m.month)).toEqual(['2026-10', '2026-11']);
    for (const [dim, list, field] of [
      ['month', null, null],
      ['month,agent', 'by_agent', 'agent_id'],
      ['month,task_type', 'by_task_type', 'task_type'],
      ['month,client', 'by_client', 'client_id'],
    ] as const) {
      const beforeRows = await monthly(org.apiKey, dim);
      const afterRows = await monthly(recomputed.apiKey, dim);
      for (const m of preview.months) {
        const groups = list === null ? [m] : m[list];
        expect(groups.length).toBeGreaterThan(0);
        for (const g of groups) {
          const match = (r: { group: Record<string, unknown> }) =>
            r.group.month === m.month && (field === null || r.group[field] === g[field]);
          expect(g.before).toEqual(totals(beforeRows.find(match)));
          expect(g.after).toEqual(totals(afterRows.find(match)));
        }
      }
    }
    const sum = (rows: Array<{ cost_saved: number }>) => rows.reduce((s, r) => s + r.cost_saved, 0);
    expect(preview.delta.cost_saved).toBeCloseTo(sum(fresh) - sum(stored), 6);

    // Nothing written: no version, no audit row, the events as they were.
    expect((await call('GET', '/v1/assumptions/history?kind=baseline_override')).json().data).toEqual([]);
    expect((await call('GET', '/v1/audit-log')).json().data).toHaveLength(auditBefore);
    for (const e of stored) expect((await call('GET', `/v1/events/${e.event_id}`)).json()).toEqual(e);
  });

  it('previews every kind of assumption, and refuses what names nothing', async () => {
    const cases = [
      // November: a failure (no hours, so no cost saved at any rate) and one success.
      [{ kind: 'default_hourly_rate', value: 60, effective_from: '2026-11-01' }, 1],
      [{ kind: 'category_hourly_rate', key: 'dev', value: 70, effective_from: '2026-10-16' }, 2],
      [{ kind: 'outcome_credit', key: 'needs_review', value: 0.25, effective_from: '2026-10-01' }, 1],
      [{ kind: 'outcome_credit', key: 'failure', value: 0, effective_from: '2026-10-01' }, 0],
      [{ kind: 'baseline_override', key: 'dev_code_review', value: 40, effective_from: '2026-12-01' }, 0],
    ] as const;
    for (const [change, affected] of cases) {
      const res = await call('POST', '/v1/restatements/preview', change);
      expect(res.statusCode, res.body).toBe(200);
      expect([change.kind, res.json().affected_events]).toEqual([change.kind, affected]);
    }
    const refused = [
      [
        { kind: 'baseline_override', key: 'no_such_type', value: 5, effective_from: '2026-10-01' },
        '/body/key',
      ],
      [{ kind: 'default_hourly_rate', key: 'dev', value: 5, effective_from: '2026-10-01' }, '/body/key'],
      [{ kind: 'default_hourly_rate', value: null, effective_from: '2026-10-01' }, '/body/value'],
      [{ kind: 'outcome_credit', key: 'success', value: 1.5, effective_from: '2026-10-01' }, '/body/value'],
      [{ kind: 'custom_baseline', key: 'not_mine', value: 5, effective_from: '2026-10-01' }, '/body/key'],
      [{ kind: 'fallback_baseline', value: 5, effective_from: 'yesterday' }, '/body/effective_from'],
      [{ kind: 'nope', value: 5, effective_from: '2026-10-01' }, '/body/kind'],
    ] as const;
    for (const [change, path] of refused) {
      const res = await call('POST', '/v1/restatements/preview', change);
      expect(res.statusCode, res.body).toBe(422);
      expect(res.json().error.details[0].path).toBe(path);
    }
  });

  it('applies a past change: records the version with its reason and audit row, and today’s value', async () => {
    h.clock.set(NOW);
    const missing = await call('POST', '/v1/restatements', { ...CHANGE });
    expect(missing.statusCode).toBe(422);
    const future = await call('POST', '/v1/restatements', {
      ...CHANGE,
      effective_from: '2026-11-21',
      reason: 'x',
    });
    expect(future.statusCode).toBe(422);
    expect(future.json().error.details[0].path).toBe('/body/effective_from');
    const blank = await call('POST', '/v1/restatements', { ...CHANGE, reason: '   ' });
    expect(blank.statusCode).toBe(422);

    const res = await call('POST', '/v1/restatements', { ...CHANGE, reason: 'time study of October' });
    expect(res.statusCode, res.body).toBe(201);
    const r = res.json();
    expect(r).toMatchObject({
      id: expect.stringMatching(/^rst_[0-9A-Z]{26}$/),
      reason: 'time study of October',
      version: {
        kind: 'baseline_override',
        key: 'dev_code_review',
        value: 41.5,
        effective_from: '2026-10-01T00:00:00.000Z',
        reason: 'time study of October',
        status: 'in_force',
      },
    });
    expect(r.version.restatement_id).toBe(r.id);
    const type = (await call('GET', '/v1/task-types?category=dev'))
      .json()
      .data.find((t: { key: string }) => t.key === 'dev_code_review');
    expect(type).toMatchObject({
      effective_baseline_minutes: 41.5,
      override: { baseline_minutes_override: 41.5 },
    });
    // Two entries: the version change, then the publication of its figures.
    const [published, audit] = (await call('GET', '/v1/audit-log')).json().data;
    expect(published).toMatchObject({
      action: 'figures.restated',
      target: `restatement:${r.id}`,
      reason: 'time study of October',
    });
    expect(audit).toMatchObject({
      action: 'assumption.restated',
      target: 'assumption:baseline_override:dev_code_review',
      before: { value: null },
      after: { value: 41.5, effective_from: '2026-10-01T00:00:00.000Z', restatement_id: r.id },
      reason: 'time study of October',
    });
    // A new back-dated event gets the restated value.
    const late = await call('POST', '/v1/track', {
      agent_id: 'a9',
      task_type: 'dev_code_review',
      outcome: 'success',
      occurred_at: '2026-10-05T00:00:00Z',
    });
    expect(late.json()).toMatchObject({
      resolved_baseline_minutes: 41.5,
      resolved_baseline_source: 'override',
    });

    // The ledger's repricing function: the events the restatement moves get their new figures.
    const ctx = await h.orgCtx(org);
    const reprice = await repricerFor(ctx, org.id, null);
    const rows = await h.storage.db
      .selectFrom('events')
      .selectAll()
      .where('org_id', '=', org.id)
      .orderBy('occurred_at')
      .execute();
    const moved = rows.map((row) => reprice(row)?.resolved_baseline_minutes ?? null);
    // September's review, Oct 2 review (moved), Oct 5 (tracked with it), Oct 15 (moved), bug fix, failure, Nov 10 (moved).
    expect(moved).toEqual([null, 41.5, null, 41.5, null, null, 41.5]);
    const oct2 = rows[1];
    if (!oct2) throw new Error('no row');
    expect(reprice(oct2, { hours_saved_micros: 691_667, cost_saved_micros: 34_583_350 })).toBeNull();
  });

  it('answers the versions in force during a month', async () => {
    const ctx = await h.orgCtx(org);
    const october = await versionsInForceDuring(ctx, org.id, '2026-10');
    expect(october.map((v) => [v.kind, v.key, v.value])).toEqual([
      ['default_hourly_rate', '', 50_000_000],
      ['outcome_credit', 'success', 1_000_000],
      ['outcome_credit', 'needs_review', 500_000],
      ['outcome_credit', 'failure', 0],
      ['baseline_override', 'dev_code_review', 41.5],
    ]);
    const september = await versionsInForceDuring(ctx, org.id, '2026-09');
    expect(september.map((v) => v.kind)).not.toContain('baseline_override');
    await expect(versionsInForceDuring(ctx, org.id, '2026-13')).rejects.toThrow();
  });
});

describe.each(ENGINES)('the figures.restated webhook (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, { now: NOW, rateLimiter: unlimited });
  });
  afterAll(async () => h.close());

  it('is sent once per applied restatement, to its subscribers only, with the change and its sums', async () => {
    const hook = async (types: string[]) => {
      const res = await h.request({
        method: 'POST',
        url: '/v1/webhooks',
        payload: { url: 'https://hooks.example.com/tally', event_types: types },
      });
      expect(res.statusCode, res.body).toBe(201);
      return res.json().id as string;
    };
    const subscribed = await hook(['figures.restated']);
    await hook(['event.created']);
    const r = await h.request({
      method: 'POST',
      url: '/v1/restatements',
      payload: { kind: 'default_hourly_rate', value: 65, effective_from: '2026-11-01', reason: 'rate card' },
    });
    expect(r.statusCode, r.body).toBe(201);
    expect(r.json().status).toBe('applied');
    const messages = await h.storage.db
      .selectFrom('webhook_messages')
      .selectAll()
      .where('type', '=', 'figures.restated')
      .execute();
    expect(messages).toHaveLength(1);
    const message = messages[0];
    if (!message) throw new Error('no message');
    // No event: nothing moved, and the message says so.
    expect(JSON.parse(message.payload)).toMatchObject({
      restatement: { id: r.json().id, reason: 'rate card', status: 'applied', change: r.json().version },
      affected_events: 0,
      delta: { hours_saved: 0, cost_saved: 0, net_saved: 0 },
      months: [],
    });
    const deliveries = await h.storage.db
      .selectFrom('webhook_deliveries')
      .select('webhook_id')
      .where('message_id', '=', message.id)
      .execute();
    expect(deliveries.map((d) => d.webhook_id)).toEqual([subscribed]);
  });
});
