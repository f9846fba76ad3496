import fc from 'fast-check';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_STATUS } from '../../src/errors.js';
import { ENGINES } from '../support/engines.js';
import { REQUEST_ID } from '../support/errors.js';
import { createHarness, type Harness } from '../support/harness.js';

/**
 * Issue 12 §2: hostile bodies, headers, query strings and path ids thrown at every endpoint (the
 * OpenAPI document's, so a new endpoint is covered when it is added, plus the hidden service
 * routes). Whatever comes in: never a 5xx, every error in the one body of DESIGN §2 with its
 * X-Request-Id, nothing stored by a refused request, and the service healthy afterwards.
 * fast-check prints the seed of a failing run; TALLY_FUZZ_SEED replays it.
 */

const RUNS_PER_ROUTE = Number(process.env.TALLY_FUZZ_RUNS ?? 40);
const SEED = process.env.TALLY_FUZZ_SEED === undefined ? undefined : Number(process.env.TALLY_FUZZ_SEED);
const HIDDEN_ROUTES: Array<[string, string]> = [
  ['GET', '/healthz'],
  ['GET', '/readyz'],
  ['GET', '/metrics'],
  ['GET', '/openapi.json'],
];

// Strings the store or the parsers have tripped on, and plain troublemakers.
const nasty = fc.constantFrom(
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udc00y',
  '\ud83d\ude00',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  "' OR 1=1 --",
  '%00',
  '../../etc/passwd',
  '<img src=x onerror=alert(1)>',
  '=cmd|calc',
  '',
  ' ',
  'evt_',
  'evt_01M7WD7TG0DF3Z8KCR17F8SPHM',
  'wh_00000000000000000000000000',
  '\u202e\u200b',
  'null',
  '1e400',
);
const hostileString = fc.oneof(
  { arbitrary: nasty, weight: 4 },
  fc.string({ maxLength: 30 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom('x'.repeat(201), 'y'.repeat(5000), '\u0000'.repeat(300)),
);
const hostileNumber = fc.oneof(
  fc.constantFrom(1e308, -1e308, 5e12, 1e-320, -0, -1, 0.5, 2 ** 53, 2 ** 63, 525600.0001, 1e9 + 1, 3.14e15),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
);
const hostileKey = fc.oneof(nasty, fc.string({ maxLength: 8 }));
const { value: hostileValue } = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    hostileString,
    hostileNumber,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(hostileKey, tie('value'), { maxKeys: 4 }),
  ),
}));

/** JSON texts JSON.stringify never writes. */
const rawJsonTricks = fc.constantFrom(
  '{"agent_id":"a","agent_id":"b","task_type":"sales_crm_update","outcome":"success"}',
  '{"metadata":{"x":1,"\\u0078":2}}',
  '{"__proto__":{"admin":true}}',
  '{"constructor":{"prototype":{"admin":true}}}',
  '{"agent_duration_seconds":123e4567}',
  '{"agent_cost":-1e400}',
  `${'['.repeat(5000)}${']'.repeat(5000)}`,
  `{"metadata":${'{"a":'.repeat(70)}1${'}'.repeat(70)}}`,
  '{"events":[{"a":1,"a":2}]}',
  '{"x":"\\ud800"}',
  '{"x":"\\u0000"}',
  '',
  'null',
  '[]',
  '"text"',
  '{"unterminated": "',
  '{"a":1}garbage',
);

/** Valid bodies per route, so a hostile field gets past the schema's first checks. */
const TEMPLATES: Record<string, Record<string, unknown>> = {
  'POST /v1/track': { agent_id: 'fuzz', task_type: 'sales_crm_update', outcome: 'success' },
  'POST /v1/track/batch': {
    events: [{ agent_id: 'fuzz', task_type: 'sales_crm_update', outcome: 'success' }],
  },
  'POST /v1/task-types': {
    key: 'fuzz_type',
    display_name: 'Fuzz',
    category: 'ops',
    default_baseline_minutes: 5,
  },
  'POST /v1/task-types/{key}/override': { baseline_minutes_override: 7, reason: 'measured' },
  'POST /v1/webhooks': { url: 'https://hooks.example.com/fuzz', event_types: ['event.created'] },
  'PATCH /v1/webhooks/{id}': { description: 'fuzzed' },
  'PATCH /v1/settings': { default_hourly_rate: 60 },
  'POST /v1/budgets': { name: 'Fuzz', scope: 'agent', scope_value: 'fuzz', amount: 10 },
  'PATCH /v1/budgets/{id}': { amount: 20 },
  'POST /v1/fixed-costs': { name: 'Fuzz', kind: 'monthly', amount: 10, start_month: '2026-09' },
  'PATCH /v1/fixed-costs/{id}': { amount: 20 },
  'POST /v1/report-schedules': { frequency: 'weekly', recipients: ['fuzz@acme.test'] },
  'PATCH /v1/report-schedules/{id}': { frequency: 'monthly' },
};
const TRACK_FIELDS = [
  'agent_id',
  'task_type',
  'outcome',
  'agent_duration_seconds',
  'agent_cost',
  'model',
  'tokens_in',
  'tokens_out',
  'human_baseline_minutes',
  'metadata',
  'audit_sample',
  'occurred_at',
];

function withHostileField(template: Record<string, unknown>, field: string, value: unknown) {
  if (Array.isArray(template.events)) {
    const [first] = template.events as Array<Record<string, unknown>>;
    return { events: [first, { ...first, [field]: value }, first] };
  }
  return { ...template, [field]: value };
}

const QUERY_KEYS = [
  'cursor',
  'limit',
  'agent_id',
  'task_type',
  'period',
  'group_by',
  'sort',
  'metric',
  'top',
  'format',
  'outcome',
  'client_id',
  'category',
  'include_archived',
  'metadata.client_id',
  'metadata.x',
];

/** Percent-encodes UTF-16 text as UTF-8 bytes, lone surrogates as their 3-byte (invalid) form. */
function percentEncode(text: string): string {
  let out = '';
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0;
    if (code >= 0xd800 && code <= 0xdfff) {
      out += `%${(0xe0 | (code >> 12)).toString(16)}%${(0x80 | ((code >> 6) & 0x3f)).toString(16)}%${(0x80 | (code & 0x3f)).toString(16)}`;
    } else {
      out += [...Buffer.from(char)].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
    }
  }
  return out;
}

const hostileQuery = fc.array(
  fc.tuple(
    fc.oneof(fc.constantFrom(...QUERY_KEYS), hostileKey),
    fc.oneof(hostileString, hostileNumber.map(String)),
  ),
  { maxLength: 6 },
);
const manyParameters = fc
  .integer({ min: 40, max: 1200 })
  .map((n) => Array.from({ length: n }, (_, i): [string, string] => [`metadata.k${i}`, 'v']));

interface Route {
  method: string;
  path: string;
  /** The route's own query parameters (from the OpenAPI document). */
  queryKeys: string[];
}

/** What a request may carry, drawn per run. */
const requestParts = fc.record({
  kind: fc.constantFrom('template', 'template', 'template', 'valid', 'value', 'raw', 'none'),
  field: fc.constantFrom(
    ...TRACK_FIELDS,
    'events',
    'key',
    'url',
    'event_types',
    'status',
    'category',
    'name',
    'scope',
    'scope_value',
    'amount',
    'thresholds',
    'kind',
    'start_month',
    'end_month',
    'date',
    'frequency',
    'recipients',
    'fte_hours_per_month',
    'alert_emails',
    'x',
  ),
  // A valid body with one hostile field mostly gets a hostile string: what engines differ on.
  value: fc.oneof(
    { arbitrary: hostileString, weight: 3 },
    { arbitrary: hostileValue, weight: 2 },
    hostileNumber,
  ),
  raw: rawJsonTricks,
  queryMode: fc.constantFrom('none', 'none', 'one', 'one', 'one', 'junk', 'many'),
  queryPick: fc.nat(),
  queryValue: fc.oneof(hostileString, hostileNumber.map(String)),
  query: hostileQuery,
  many: manyParameters,
  pathId: fc.oneof(fc.constantFrom('real', 'real', 'real'), hostileString),
  contentType: fc.constantFrom(
    'application/json',
    'application/json',
    'application/json; charset=utf-8',
    'text/plain',
    'application/x-www-form-urlencoded',
    'application/json; charset=latin1',
  ),
  idempotencyKey: fc.oneof(
    { arbitrary: fc.constant(undefined), weight: 3 },
    fc.constantFrom('retry-1', 'retry-2'),
    hostileString,
    fc.constant('k'.repeat(300)),
  ),
  header: fc.oneof(
    { arbitrary: fc.constant(undefined), weight: 3 },
    fc.tuple(
      fc.constantFrom('x-fuzz', 'accept', 'content-length', 'authorization', 'x-request-id'),
      hostileString,
    ),
  ),
});

type Parts = typeof requestParts extends fc.Arbitrary<infer P> ? P : never;

describe.each(ENGINES)('fuzz: hostile requests to every endpoint (%s)', (engine) => {
  let h: Harness;
  let routes: Route[];
  const realIds: Record<string, string> = {};
  const ownIds = new Map<string, string>();
  beforeAll(async () => {
    h = await createHarness(engine, { plan: 'enterprise' });
    const doc = (await h.request({ method: 'GET', url: '/openapi.json', apiKey: null })).json<{
      paths: Record<string, Record<string, unknown>>;
    }>();
    routes = [
      ...Object.entries(doc.paths).flatMap(([path, ops]) =>
        Object.entries(ops)
          .filter(([m]) => ['get', 'post', 'patch', 'put', 'delete'].includes(m))
          .map(([m, op]) => ({
            method: m.toUpperCase(),
            path,
            queryKeys: ((op as { parameters?: Array<{ in: string; name: string }> }).parameters ?? [])
              .filter((p) => p.in === 'query')
              .map((p) => p.name),
          })),
      ),
      ...HIDDEN_ROUTES.map(([method, path]) => ({ method, path, queryKeys: [] })),
    ];
    const hook = await h.request({
      method: 'POST',
      url: '/v1/webhooks',
      payload: TEMPLATES['POST /v1/webhooks'],
    });
    const event = await h.request({ method: 'POST', url: '/v1/track', payload: TEMPLATES['POST /v1/track'] });
    realIds.id = hook.json().id;
    // Resources of their own: a `real` {id} of theirs names one that exists.
    for (const [path, payload] of [
      ['/v1/budgets', TEMPLATES['POST /v1/budgets']],
      ['/v1/fixed-costs', TEMPLATES['POST /v1/fixed-costs']],
      ['/v1/report-schedules', TEMPLATES['POST /v1/report-schedules']],
    ] as const) {
      const created = await h.request({ method: 'POST', url: path, payload });
      ownIds.set(path, created.json<{ id: string }>().id);
    }
    realIds.event_id = event.json().event_id;
    realIds.key = 'dev_code_review';
  }, 60_000);
  afterAll(async () => h.close());

  async function storedRows(): Promise<string> {
    const { rows } = await sql<Record<string, unknown>>`select
      (select count(*) from events) as events,
      (select count(*) from webhooks) as webhooks,
      (select count(*) from custom_task_types) as task_types,
      (select count(*) from task_type_overrides) as overrides,
      (select count(*) from audit_log) as audit_log,
      (select count(*) from idempotency_keys) as idempotency_keys`.execute(h.storage.db);
    return JSON.stringify(rows[0]);
  }

  function buildRequest(route: Route, parts: Parts): InjectOptions {
    const path = route.path.replace(/\{(\w+)\}/g, (_m, name: string) =>
      parts.pathId === 'real'
        ? ([...ownIds].find(([prefix]) => route.path.startsWith(`${prefix}/`))?.[1] ?? realIds[name] ?? 'x')
        : percentEncode(parts.pathId),
    );
    // Mostly no query string or one of the route's own parameters with a hostile value, so that
    // the value (or a hostile body) gets past the query's validation of unknown names.
    const ownKey = route.queryKeys[parts.queryPick % Math.max(route.queryKeys.length, 1)] ?? 'cursor';
    const pairs: Array<[string, string]> =
      parts.queryMode === 'one'
        ? [[ownKey, parts.queryValue]]
        : parts.queryMode === 'junk'
          ? parts.query
          : parts.queryMode === 'many'
            ? parts.many
            : [];
    const query = pairs.map(([k, v]) => `${percentEncode(k)}=${percentEncode(v)}`).join('&');
    const url = query === '' ? path : `${path}?${query}`;
    const headers: Record<string, string> = {};
    if (parts.idempotencyKey !== undefined) headers['idempotency-key'] = parts.idempotencyKey;
    if (parts.header !== undefined) {
      const [name, value] = parts.header;
      headers[name] = name === 'authorization' ? `Bearer ${value}` : value;
    }
    if (route.method === 'GET' || route.method === 'DELETE' || parts.kind === 'none') {
      return { method: route.method as InjectOptions['method'], url, headers };
    }
    headers['content-type'] = parts.contentType;
    const template = TEMPLATES[`${route.method} ${route.path}`] ?? {};
    const payload =
      parts.kind === 'raw'
        ? parts.raw
        : JSON.stringify(
            parts.kind === 'template' ? withHostileField(template, parts.field, parts.value) : parts.value,
          );
    return { method: route.method as InjectOptions['method'], url, headers, payload: payload ?? 'null' };
  }

  function checkAnswer(res: LightMyRequestResponse, label: string): void {
    expect(res.statusCode, label).toBeLessThan(500);
    expect(res.headers['x-request-id'], label).toMatch(REQUEST_ID);
    if (res.statusCode < 400) return;
    expect(res.headers['content-type'], label).toMatch(/^application\/json/);
    const body = res.json<{ error: Record<string, unknown> }>();
    expect(Object.keys(body), label).toEqual(['error']);
    const { code, message, request_id: requestId, details } = body.error;
    expect(ERROR_STATUS[code as keyof typeof ERROR_STATUS], label).toBe(res.statusCode);
    expect(typeof message, label).toBe('string');
    expect(requestId, label).toBe(res.headers['x-request-id']);
    if (details !== undefined) expect(Array.isArray(details), label).toBe(true);
  }

  it('never answers 5xx, always the error shape, stores nothing when it refuses', async () => {
    const seen = new Map<string, number>();
    for (const route of routes) {
      await fc.assert(
        fc.asyncProperty(requestParts, async (parts) => {
          // Keep well under the per-second rates: each request is 25 ms of the test clock.
          h.clock.advance(25);
          let options: InjectOptions;
          try {
            options = buildRequest(route, parts);
          } catch {
            return; // a request the client library itself cannot write
          }
          const before = await storedRows();
          let res: LightMyRequestResponse;
          try {
            res = await h.request(options);
          } catch (error) {
            if (error instanceof TypeError && /header|character/i.test(error.message)) return;
            throw error;
          }
          const label = `${options.method} ${String(options.url).slice(0, 300)} ${String(options.payload ?? '').slice(0, 300)} → ${res.statusCode} ${res.body.slice(0, 300)}`;
          checkAnswer(res, label);
          seen.set(`${res.statusCode}`, (seen.get(`${res.statusCode}`) ?? 0) + 1);
          if (res.statusCode >= 400) expect(await storedRows(), label).toBe(before);
        }),
        { numRuns: RUNS_PER_ROUTE, ...(SEED === undefined ? {} : { seed: SEED }) },
      );
    }
    // The hostile inputs reached past the edge too: some requests succeeded.
    console.log(`fuzz (${engine}): answers by status`, Object.fromEntries([...seen].sort()));
    expect(seen.get('200') ?? 0).toBeGreaterThan(0);

    expect((await h.request({ method: 'GET', url: '/readyz', apiKey: null })).statusCode).toBe(200);
    const track = await h.request({ method: 'POST', url: '/v1/track', payload: TEMPLATES['POST /v1/track'] });
    expect(track.statusCode).toBe(201);
    const reads = await Promise.all(
      [
        '/v1/events?limit=100',
        '/v1/reports/time-saved?period=all&group_by=client',
        '/v1/webhooks',
        '/v1/task-types',
      ].map((url) => h.request({ method: 'GET', url })),
    );
    expect(reads.map((r) => r.statusCode)).toEqual([200, 200, 200, 200]);
  }, 600_000);
});
