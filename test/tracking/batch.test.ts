import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { unlimited } from '../reports/unlimited.js';

const event = (i: number, extra: object = {}) => ({
  agent_id: `batch-agent-${i % 3}`,
  task_type: 'sales_crm_update',
  outcome: 'success',
  ...extra,
});

describe.each(ENGINES)('POST /v1/track/batch (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine);
  });
  afterAll(async () => h.close());

  const batch = (events: unknown[], apiKey?: string) =>
    h.request({ method: 'POST', url: '/v1/track/batch', payload: { events }, ...(apiKey ? { apiKey } : {}) });

  it('answers 207 with one result per event, in input order; one bad event fails only itself', async () => {
    const res = await batch([
      event(0),
      event(1, { task_type: 'not_a_type' }),
      event(2, { occurred_at: '2020-01-01T00:00:00Z' }),
      event(3, { human_baseline_minutes: 30 }),
    ]);
    expect(res.statusCode).toBe(207);
    const data = res.json().data;
    expect(data.map((d: { status: number }) => d.status)).toEqual([201, 422, 422, 201]);
    expect(data[1].error).toMatchObject({
      code: 'unknown_task_type',
      details: [{ path: '/body/events/1/task_type' }],
    });
    expect(data[2].error).toMatchObject({
      code: 'occurred_at_out_of_range',
      details: [{ path: '/body/events/2/occurred_at' }],
    });
    expect(data[3].event).toMatchObject({ agent_id: 'batch-agent-0', resolved_baseline_source: 'request' });
    const fetched = await h.request({ method: 'GET', url: `/v1/events/${data[0].event.event_id}` });
    expect(fetched.json()).toEqual(data[0].event);
  });

  it('fails only the events the schema rejects: 207 with their 422 and paths, the others 201', async () => {
    const before = await h.request({ method: 'GET', url: '/v1/events?limit=100' });
    const res = await batch([
      event(0),
      { ...event(1), outcome: 'maybe' },
      null,
      { ...event(3), colour: 'red', tokens_in: -1 },
      event(4),
    ]);
    expect(res.statusCode, res.body).toBe(207);
    const data = res.json().data;
    expect(data.map((d: { status: number }) => d.status)).toEqual([201, 422, 422, 422, 201]);
    expect(data[1].error).toMatchObject({
      code: 'validation_error',
      request_id: res.headers['x-request-id'],
    });
    expect(new Set(data[1].error.details.map((d: { path: string }) => d.path))).toEqual(
      new Set(['/body/events/1/outcome']),
    );
    expect(data[2].error.details[0].path).toBe('/body/events/2');
    expect(data[3].error.details.map((d: { path: string }) => d.path).sort()).toEqual([
      '/body/events/3/colour',
      '/body/events/3/tokens_in',
    ]);
    // Only the two valid events were stored.
    const after = await h.request({ method: 'GET', url: '/v1/events?limit=100' });
    expect(after.json().data.length - before.json().data.length).toBe(2);
  });

  it('still rejects a malformed envelope as a whole', async () => {
    for (const payload of [{ events: 'x' }, { events: [event(0)], extra: 1 }, [], null]) {
      const res = await h.request({ method: 'POST', url: '/v1/track/batch', payload: payload as object });
      expect(res.statusCode, JSON.stringify(payload)).toBe(422);
    }
  });

  it.each([
    ['no events', []],
    ['501 events', Array.from({ length: 501 }, (_, i) => event(i))],
  ])('rejects %s', async (_name, events) => {
    const res = await batch(events);
    expect(res.statusCode).toBe(422);
    expect(res.json().error.details[0].path).toBe('/body/events');
  });

  it('honours per-item idempotency keys, replaying within and across batches', async () => {
    const first = await batch([
      event(0, { idempotency_key: 'item-a' }),
      event(1, { idempotency_key: 'item-a' }),
    ]);
    const [a, b] = first.json().data;
    expect(a.status).toBe(201);
    expect(b).toMatchObject({ status: 201, replayed: true });
    expect(b.event.event_id).toBe(a.event.event_id);

    const single = await h.request({
      method: 'POST',
      url: '/v1/track',
      payload: event(5),
      headers: { 'idempotency-key': 'item-a' },
    });
    expect(single.headers['idempotent-replayed']).toBe('true');
    expect(single.json().event_id).toBe(a.event.event_id);
  });

  it('counts every event against the per-second track rate; the overflow gets 429 items', async () => {
    const org = await h.createOrg({ plan: 'free' });
    const res = await batch(
      Array.from({ length: 65 }, (_, i) => event(i)),
      org.apiKey,
    );
    expect(res.statusCode).toBe(207);
    const statuses = res.json().data.map((d: { status: number }) => d.status);
    expect(statuses.filter((s: number) => s === 201)).toHaveLength(60);
    expect(statuses.slice(60)).toEqual([429, 429, 429, 429, 429]);
    expect(res.json().data[60].error.code).toBe('rate_limited');
    expect(res.headers['ratelimit-remaining']).toBe('0');

    const next = await batch([event(0)], org.apiKey);
    expect(next.statusCode).toBe(429);
    expect(next.headers['retry-after']).toBe('1');
    h.clock.advance(1000);
    expect((await batch([event(0)], org.apiKey)).statusCode).toBe(207);
  });
});

describe.each(ENGINES)('POST /v1/track/batch, 500 events (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, { plan: 'enterprise', rateLimiter: unlimited });
  });
  afterAll(async () => h.close());

  it('writes events, agents, rollups and usage in full when the batch spans several statements', async () => {
    // Distinct agents, task types, clients and days make every event add its own rollup rows.
    const events = Array.from({ length: 500 }, (_, i) => ({
      agent_id: `agent-${i}`,
      task_type: i % 2 === 0 ? 'sales_crm_update' : 'dev_bug_fix',
      outcome: i % 3 === 0 ? 'failure' : 'success',
      occurred_at: new Date(Date.parse('2026-11-20T11:00:00Z') - (i % 25) * 86_400_000).toISOString(),
      agent_cost: 0.01,
      metadata: { client_id: `client-${i}` },
    }));
    const res = await h.request({ method: 'POST', url: '/v1/track/batch', payload: { events } });
    expect(res.statusCode).toBe(207);
    expect(res.json().data.every((d: { status: number }) => d.status === 201)).toBe(true);

    const db = h.storage.db;
    const stored = await db
      .selectFrom('events')
      .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.sum<number>('hours_saved_micros').as('hours')])
      .where('org_id', '=', h.org.id)
      .executeTakeFirstOrThrow();
    expect(Number(stored.n)).toBe(500);
    const agents = await db
      .selectFrom('agents')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('org_id', '=', h.org.id)
      .executeTakeFirstOrThrow();
    expect(Number(agents.n)).toBe(500);
    for (const grain of ['all', 'agent', 'task_type', 'client', 'agent+task_type']) {
      const rollups = await db
        .selectFrom('report_rollups')
        .select((eb) => [
          eb.fn.sum<number>('events').as('n'),
          eb.fn.sum<number>('hours_saved_micros').as('hours'),
        ])
        .where('org_id', '=', h.org.id)
        .where('grain', '=', grain)
        .executeTakeFirstOrThrow();
      expect([Number(rollups.n), Number(rollups.hours)]).toEqual([500, Number(stored.hours)]);
    }
    const usage = await db
      .selectFrom('usage_monthly')
      .select((eb) => eb.fn.sum<number>('events').as('n'))
      .where('org_id', '=', h.org.id)
      .executeTakeFirstOrThrow();
    expect(Number(usage.n)).toBe(500);
  });

  it('stores text that array literals must escape exactly as sent', async () => {
    // PostgreSQL receives a batch's rows as one array per column: quotes, backslashes, braces,
    // commas, NULL-like words, newlines and non-BMP characters must all come back unchanged.
    const awkward = [
      'a "quoted", {braced} agent',
      'back\\slash\\',
      'NULL',
      ' ',
      'line\nbreak\ttab',
      'emoji 🚀 ünï',
    ];
    const events = awkward.map((agent, i) => ({
      agent_id: agent,
      task_type: 'sales_crm_update',
      outcome: 'success',
      metadata: { note: `${agent} {"x": [1, 2]}`, n: i, nothing: null },
    }));
    const res = await h.request({ method: 'POST', url: '/v1/track/batch', payload: { events } });
    expect(res.statusCode).toBe(207);
    for (const [i, item] of res.json().data.entries()) {
      expect(item.status).toBe(201);
      const got = await h.request({ method: 'GET', url: `/v1/events/${item.event.event_id}` });
      expect(got.json()).toMatchObject({ agent_id: awkward[i], metadata: events[i]?.metadata });
    }
  });
});

describe.each(ENGINES)('GET /v1/events (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine);
  });
  afterAll(async () => h.close());

  it('lists newest first with filters and cursor pagination, only for the own organisation', async () => {
    const org = await h.createOrg();
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      h.clock.advance(1000);
      const res = await h.request({
        method: 'POST',
        url: '/v1/track',
        apiKey: org.apiKey,
        payload: event(i, { task_type: i % 2 ? 'dev_code_review' : 'sales_crm_update' }),
      });
      ids.push(res.json().event_id);
    }
    const list = (query: string) =>
      h.request({ method: 'GET', url: `/v1/events?${query}`, apiKey: org.apiKey });
    const page1 = (await list('limit=3')).json();
    expect(page1.data.map((e: { event_id: string }) => e.event_id)).toEqual(ids.slice(4).reverse());
    const page2 = (await list(`limit=3&cursor=${page1.next_cursor}`)).json();
    expect(page2.data.map((e: { event_id: string }) => e.event_id)).toEqual(ids.slice(1, 4).reverse());
    const page3 = (await list(`limit=3&cursor=${page2.next_cursor}`)).json();
    expect(page3).toEqual({ data: [expect.objectContaining({ event_id: ids[0] })], next_cursor: null });

    const byType = (await list('task_type=dev_code_review')).json().data;
    expect(byType.map((e: { event_id: string }) => e.event_id)).toEqual([ids[5], ids[3], ids[1]]);
    const byAgent = (await list('agent_id=batch-agent-1')).json().data;
    expect(byAgent.map((e: { event_id: string }) => e.event_id)).toEqual([ids[4], ids[1]]);
    // An agent this organisation never tracked, though another one did: an empty page.
    const elsewhere = await h.request({
      method: 'POST',
      url: '/v1/track',
      payload: { ...event(0), agent_id: 'agent-of-another-org' },
    });
    expect(elsewhere.statusCode).toBe(201);
    expect((await list('agent_id=agent-of-another-org')).json()).toEqual({ data: [], next_cursor: null });

    expect((await h.request({ method: 'GET', url: '/v1/events' })).json().data).toEqual([
      expect.objectContaining({ agent_id: 'agent-of-another-org' }),
    ]);
    const foreign = await h.request({ method: 'GET', url: `/v1/events/${ids[0]}` });
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json().error.code).toBe('not_found');
  });

  it.each(['limit=0', 'limit=101', 'limit=abc', 'colour=red'])('rejects %s with 422', async (query) => {
    const res = await h.request({ method: 'GET', url: `/v1/events?${query}` });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.code).toBe('validation_error');
  });
});
