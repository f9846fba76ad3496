import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.js';
import { expectError, REQUEST_ID } from '../support/errors.js';
import { createHarness, type Harness } from '../support/harness.js';

const EVENT = { agent_id: 'edge-bot', task_type: 'sales_crm_update', outcome: 'success' };
const TRACK = '{"agent_id":"edge-bot","task_type":"sales_crm_update","outcome":"success"';

/**
 * Issue 12 §2: classes of input that answered 500 (or were stored and broke later reads) are
 * refused at the edge, for every endpoint, identically on both engines, storing nothing.
 */
describe.each(ENGINES)('hostile input at the edge (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine);
  });
  afterAll(async () => h.close());

  async function stored(): Promise<number> {
    let total = 0;
    for (const table of ['events', 'webhooks', 'custom_task_types', 'audit_log'] as const) {
      const row = await h.storage.db
        .selectFrom(table)
        .select(sql<number>`count(*)`.as('n'))
        .executeTakeFirstOrThrow();
      total += Number(row.n);
    }
    return total;
  }

  const raw = (method: 'POST' | 'PATCH', url: string, payload: string) =>
    h.request({ method, url, payload, headers: { 'content-type': 'application/json' } });

  function detailPaths(res: { json(): { error: { details?: Array<{ path: string }> } } }): string[] {
    return (res.json().error.details ?? []).map((d) => d.path);
  }

  it('refuses numbers JSON can express but the store cannot: 422 naming the field, nothing stored', async () => {
    const before = await stored();
    const cases: Array<[string, string]> = [
      [`${TRACK},"agent_duration_seconds":123e4567}`, '/body/agent_duration_seconds'],
      [`${TRACK},"agent_cost":1e308}`, '/body/agent_cost'],
      [`${TRACK},"agent_cost":5000000000000}`, '/body/agent_cost'],
      [`${TRACK},"agent_duration_seconds":1e300}`, '/body/agent_duration_seconds'],
      [`${TRACK},"tokens_in":1e15}`, '/body/tokens_in'],
      [`${TRACK},"metadata":{"n":-1e999}}`, '/body/metadata/n'],
    ];
    for (const [body, path] of cases) {
      const res = await raw('POST', '/v1/track', body);
      expectError(res, 422, 'validation_error');
      expect(detailPaths(res), body).toContain(path);
    }
    const settings = await h.request({
      method: 'PATCH',
      url: '/v1/settings',
      payload: { usd_exchange_rate: 1e300 },
    });
    expect(detailPaths(settings)).toContain('/body/usd_exchange_rate');
    expect(await stored()).toBe(before);
    const list = await h.request({ method: 'GET', url: '/v1/events' });
    expect(list.statusCode).toBe(200);
  });

  it('refuses a computed agent cost beyond the agent_cost maximum', async () => {
    await h.request({ method: 'PATCH', url: '/v1/settings', payload: { usd_exchange_rate: 100_000 } });
    const res = await h.request({
      method: 'POST',
      url: '/v1/track',
      payload: { ...EVENT, model: 'gpt-4o', tokens_in: 1_000_000_000, tokens_out: 1_000_000_000 },
    });
    await h.request({ method: 'PATCH', url: '/v1/settings', payload: { usd_exchange_rate: null } });
    expectError(res, 422, 'validation_error');
    expect(detailPaths(res)).toEqual(['/body/agent_cost']);
  });

  it('refuses NUL and unpaired surrogates in any string, key or part: 422 with the path', async () => {
    const before = await stored();
    const cases: Array<[Promise<{ statusCode: number; json(): unknown }>, string]> = [
      [
        h.request({ method: 'POST', url: '/v1/track', payload: { ...EVENT, agent_id: 'a\u0000b' } }),
        '/body/agent_id',
      ],
      [raw('POST', '/v1/track', `${TRACK},"metadata":{"k":"\\ud800"}}`), '/body/metadata/k'],
      [raw('POST', '/v1/track', `${TRACK},"metadata":{"a":[{"b":"x\\u0000"}]}}`), '/body/metadata/a/0/b'],
      [raw('POST', '/v1/track', `${TRACK},"metadata":{"k\\u0000":1}}`), '/body/metadata/k\uFFFD'],
      [
        raw('POST', '/v1/track', `${TRACK},"audit_sample":{"input_excerpt":"\\udc00"}}`),
        '/body/audit_sample/input_excerpt',
      ],
      [h.request({ method: 'GET', url: '/v1/events?agent_id=%00' }), '/querystring/agent_id'],
      [h.request({ method: 'GET', url: '/v1/events/evt_%00' }), '/params/event_id'],
      [
        h.request({ method: 'GET', url: '/v1/reports/time-saved?metadata.k=a%00' }),
        '/querystring/metadata.k',
      ],
      [
        h.request({
          method: 'POST',
          url: '/v1/task-types',
          payload: { key: 'nul_type', display_name: 'x\u0000', category: 'ops', default_baseline_minutes: 5 },
        }),
        '/body/display_name',
      ],
      [
        h.request({
          method: 'POST',
          url: '/v1/webhooks',
          payload: {
            url: 'https://hooks.example.com/x',
            event_types: ['event.created'],
            description: '\ud800',
          },
        }),
        '/body/description',
      ],
      [h.request({ method: 'PATCH', url: '/v1/settings', payload: { name: 'Acme\u0000' } }), '/body/name'],
    ];
    for (const [pending, path] of cases) {
      const res = (await pending) as Parameters<typeof expectError>[0];
      expectError(res, 422, 'validation_error');
      expect(detailPaths(res)).toContain(path);
    }
    expect(await stored()).toBe(before);
  });

  it('fails only the event of a batch that holds such a string', async () => {
    const res = await raw(
      'POST',
      '/v1/track/batch',
      `{"events":[${TRACK}},${TRACK},"metadata":{"k":"\\u0000"}},${TRACK},"agent_cost":1e308}]}`,
    );
    expect(res.statusCode).toBe(207);
    const data = res.json().data;
    expect(data.map((d: { status: number }) => d.status)).toEqual([201, 422, 422]);
    expect(data[1].error.details[0].path).toBe('/body/events/1/metadata/k');
    expect(data[2].error.details[0].path).toBe('/body/events/2/agent_cost');
  });

  it('answers parser edge cases: duplicated keys and prototype keys 400, deep nesting 422', async () => {
    const before = await stored();
    const duplicated = await raw('POST', '/v1/track', `${TRACK},"agent_id":"other"}`);
    expect(expectError(duplicated, 400, 'invalid_json').message).toMatch(/repeats the key "agent_id"/);
    const escaped = await raw('POST', '/v1/track', `${TRACK},"metadata":{"a":1,"\\u0061":2}}`);
    expectError(escaped, 400, 'invalid_json');
    for (const key of ['"__proto__":{"x":1}', '"constructor":{"prototype":{"x":1}}']) {
      const res = await raw('POST', '/v1/track', `${TRACK},"metadata":{${key}}}`);
      expect(expectError(res, 400, 'invalid_json').message).toMatch(/reserved key/);
    }
    // A key named constructor is only data.
    const plain = await raw('POST', '/v1/track', `${TRACK},"metadata":{"constructor":"x"}}`);
    expect(plain.statusCode).toBe(201);

    const deep = `${TRACK},"metadata":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}`;
    for (const url of ['/v1/track', '/v1/settings', '/v1/task-types', '/v1/webhooks']) {
      const res = await raw(url === '/v1/settings' ? 'PATCH' : 'POST', url, deep);
      expectError(res, 422, 'validation_error');
      expect(detailPaths(res)).toEqual(['/body']);
    }
    const deepMetadata = `${TRACK},"metadata":${'{"a":'.repeat(33)}1${'}'.repeat(33)}}`;
    const res = await raw('POST', '/v1/track', deepMetadata);
    expectError(res, 422, 'validation_error');
    expect(detailPaths(res)).toEqual(['/body/metadata']);
    const fine = await raw(
      'POST',
      '/v1/track',
      `${TRACK},"metadata":${'{"a":'.repeat(32)}1${'}'.repeat(32)}}`,
    );
    expect(fine.statusCode).toBe(201);
    expect(await stored()).toBe(before + 2);
  });

  it('refuses garbage cursors with 422 and garbage ids with 404', async () => {
    for (const url of ['/v1/events', '/v1/webhooks', '/v1/audit-log']) {
      for (const cursor of ['garbage', 'evt_', "evt_01M7WD7TG0' OR 1=1", '%F0%9F%92%A9']) {
        expectError(
          await h.request({ method: 'GET', url: `${url}?cursor=${cursor}` }),
          422,
          'validation_error',
        );
      }
    }
    for (const url of [
      '/v1/events/garbage',
      '/v1/webhooks/garbage',
      '/v1/webhooks/%F0%9F%92%A9/deliveries',
      `/v1/events/${'x'.repeat(201)}`,
      `/v1/task-types/${'k'.repeat(500)}/override`,
    ]) {
      expectError(await h.request({ method: 'GET', url }), 404, 'not_found');
    }
    expectError(await h.request({ method: 'GET', url: '/v1/events/%E0%A4%A' }), 400, 'bad_request');
  });

  it('limits query parameters and metadata filters with a 422', async () => {
    const filters = (n: number) => Array.from({ length: n }, (_, i) => `metadata.k${i}=v`).join('&');
    const many = await h.request({ method: 'GET', url: `/v1/reports/time-saved?${filters(1000)}` });
    expect(detailPaths(many)).toEqual(['/querystring']);
    expectError(many, 422, 'validation_error');
    const eleven = await h.request({ method: 'GET', url: `/v1/reports/time-saved?${filters(11)}` });
    expectError(eleven, 422, 'validation_error');
    const ten = await h.request({ method: 'GET', url: `/v1/reports/time-saved?${filters(10)}` });
    expect(ten.statusCode).toBe(200);
    const repeated = await h.request({ method: 'GET', url: `/v1/events?${'agent_id=a&'.repeat(60)}` });
    expectError(repeated, 422, 'validation_error');
  });

  it('sums 880 events at the documented maxima in every report without a 500', async () => {
    const org = await h.createOrg({ plan: 'enterprise', hourlyRate: 1_000_000 });
    const max = { ...EVENT, human_baseline_minutes: 525_600, agent_cost: 1_000_000_000 };
    for (let sent = 0; sent < 880; sent += 440) {
      h.clock.advance(1000);
      const res = await h.request({
        method: 'POST',
        url: '/v1/track/batch',
        apiKey: org.apiKey,
        payload: { events: Array.from({ length: 440 }, () => max) },
      });
      expect(res.statusCode).toBe(207);
      expect(new Set(res.json().data.map((d: { status: number }) => d.status))).toEqual(new Set([201]));
    }
    h.clock.advance(1000);
    for (const url of [
      '/v1/reports/time-saved?period=all',
      '/v1/reports/time-saved?period=30d&group_by=day,client',
      '/v1/reports/cost-saved?period=ytd&group_by=week&sort=net_saved',
      '/v1/reports/leaderboard?period=7d&metric=agent_cost',
      '/v1/reports/time-saved?period=all&format=csv',
      '/v1/reports/export?period=24h',
      '/v1/reports/usage',
      '/v1/events?limit=100',
    ]) {
      const res = await h.request({ method: 'GET', url, apiKey: org.apiKey });
      expect(res.statusCode, url).toBe(200);
    }
    const report = await h.request({
      method: 'GET',
      url: '/v1/reports/time-saved?period=all',
      apiKey: org.apiKey,
    });
    const [row] = report.json().rows;
    expect(row).toMatchObject({ events: 880, hours_saved: 880 * 8760 });
    expect(row.cost_saved).toBeCloseTo(880 * 8_760_000_000, -6);
    expect(row.agent_cost).toBe(880 * 1_000_000_000);
    expect(Number.isFinite(row.net_saved)).toBe(true);
  });
});

/** Sends raw bytes and returns the raw answer, up to the server's close. */
function rawHttp(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(request));
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(answer));
  });
}

describe.each(ENGINES)('errors of the HTTP parser (%s)', (engine) => {
  let h: Harness;
  let port: number;
  beforeAll(async () => {
    h = await createHarness(engine);
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    port = (h.app.server.address() as AddressInfo).port;
  });
  afterAll(async () => h.close());

  it.each([
    [
      'a 60,000-character header',
      `GET /v1/events HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(60_000)}\r\n\r\n`,
      431,
      'headers_too_large',
    ],
    ['a malformed request line', 'GET /v1/events HTTP/9.9 extra\r\nHost: x\r\n\r\n', 400, 'bad_request'],
    [
      'a bad Content-Length',
      'POST /v1/track HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n',
      400,
      'bad_request',
    ],
    ['a NUL in a header', 'GET /v1/events HTTP/1.1\r\nHost: x\r\nX-A: a\u0000b\r\n\r\n', 400, 'bad_request'],
    [
      'a bad chunk',
      'POST /v1/track HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
      400,
      'bad_request',
    ],
    ['not HTTP at all', '\u0016\u0003\u0001\u0000\u00a5\u0001\u0000\u0000\r\n\r\n', 400, 'bad_request'],
  ])('answers %s in the one error body with an X-Request-Id', async (_name, request, status, code) => {
    const answer = await rawHttp(port, request);
    const [head = '', body = ''] = answer.split('\r\n\r\n');
    expect(head.split('\r\n')[0]).toBe(
      `HTTP/1.1 ${status} ${status === 431 ? 'Request Header Fields Too Large' : 'Bad Request'}`,
    );
    expect(head).toMatch(/^Content-Type: application\/json/im);
    const requestId = /^X-Request-Id: (\S+)$/im.exec(head)?.[1];
    expect(requestId).toMatch(REQUEST_ID);
    expect(JSON.parse(body)).toEqual({ error: { code, message: expect.any(String), request_id: requestId } });
    // The server is fine afterwards.
    const ok = await rawHttp(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(ok.startsWith('HTTP/1.1 200')).toBe(true);
  });
});
