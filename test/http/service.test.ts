import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { MemoryRateLimiter } from '../../src/http/rate-limit.js';
import { buildApp } from '../../src/app.js';
import { openStorage } from '../../src/storage/db.js';
import { createTestStorage, ENGINES } from '../support/engines.js';
import { expectError, REQUEST_ID } from '../support/errors.js';
import { createHarness, type Harness } from '../support/harness.js';

const TRACK = { agent_id: 'bot-1', task_type: 'support_ticket_reply', outcome: 'success' };

interface JsonSchema {
  type?: string;
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  maxLength?: number;
  required?: string[];
  properties?: Record<string, JsonSchema>;
  $ref?: string;
}

interface OpenApiDoc {
  openapi: string;
  paths: Record<
    string,
    Record<string, { requestBody?: { content: Record<string, { schema: JsonSchema }> } }>
  >;
  components: {
    securitySchemes: Record<string, { type: string; scheme: string }>;
    schemas: Record<string, JsonSchema>;
  };
  security: Record<string, string[]>[];
}

/** The values a schema allows, whether written as `enum`, `const` or a union of them. */
function allowedValues(schema: JsonSchema): unknown[] {
  if (schema.enum) return schema.enum;
  if (schema.const !== undefined) return [schema.const];
  return (schema.anyOf ?? []).flatMap(allowedValues);
}

describe.each(ENGINES)('service endpoints (%s)', (engine) => {
  let h: Harness;
  let doc: OpenApiDoc;
  beforeAll(async () => {
    h = await createHarness(engine);
    const res = await h.request({ method: 'GET', url: '/openapi.json', apiKey: null });
    expect(res.statusCode).toBe(200);
    doc = res.json<OpenApiDoc>();
  });
  afterAll(async () => h.close());

  it('answers /healthz without authentication', async () => {
    const res = await h.request({ method: 'GET', url: '/healthz', apiKey: null });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok' });
    expect(res.headers['x-request-id']).toMatch(REQUEST_ID);
    expect(res.headers['ratelimit-limit']).toBeUndefined();
  });

  it('answers /readyz with the database engine once the database answers', async () => {
    const res = await h.request({ method: 'GET', url: '/readyz', apiKey: null });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok', database: engine });
  });

  it('ignores a bad Authorization header on service endpoints', async () => {
    const res = await h.request({ method: 'GET', url: '/healthz', apiKey: 'garbage' });
    expect(res.statusCode).toBe(200);
  });

  it('exposes Prometheus metrics counting requests by route template', async () => {
    const tracked = await h.request({ method: 'POST', url: '/v1/track', payload: TRACK });
    expect(tracked.statusCode).toBe(201);
    const eventId = tracked.json<{ event_id: string }>().event_id;
    await h.request({ method: 'GET', url: `/v1/events/${eventId}` });
    await h.request({ method: 'GET', url: '/v1/secret-path-abc', apiKey: null });

    const res = await h.request({ method: 'GET', url: '/metrics', apiKey: null });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(res.body).toContain('# TYPE tally_http_requests_total counter');
    expect(res.body).toMatch(
      /^tally_http_requests_total\{method="POST",route="\/v1\/track",status="201"\} 1$/m,
    );
    expect(res.body).toMatch(/^tally_events_tracked_total 1$/m);
    // Route templates, never raw URLs: ids and unknown paths must not become label values.
    expect(res.body).toContain('route="/v1/events/:event_id"');
    expect(res.body).not.toContain(eventId);
    expect(res.body).not.toContain('secret-path-abc');
  });

  it('publishes an OpenAPI 3.1 document of every endpoint with bearer security', () => {
    expect(doc.openapi).toMatch(/^3\.1\./);
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/v1/track',
        '/v1/track/batch',
        '/v1/events',
        '/v1/events/{event_id}',
        '/v1/settings',
      ]),
    );
    expect(Object.keys(doc.paths['/v1/settings'] ?? {})).toEqual(expect.arrayContaining(['get', 'patch']));
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.security).toEqual([{ bearer: [] }]);
    // The service endpoints are not part of the API's contract.
    expect(Object.keys(doc.paths)).not.toContain('/healthz');
  });

  it('documents the track body with the schema that validates it', async () => {
    const ref = doc.paths['/v1/track']?.post?.requestBody?.content['application/json']?.schema?.$ref;
    const body = doc.components.schemas[ref?.replace('#/components/schemas/', '') ?? ''];
    expect(body?.required).toEqual(expect.arrayContaining(['agent_id', 'task_type', 'outcome']));
    const props = body?.properties ?? {};
    expect(Object.keys(props)).toEqual(
      expect.arrayContaining(['agent_id', 'task_type', 'outcome', 'agent_cost', 'metadata', 'audit_sample']),
    );
    expect(props.agent_id?.maxLength).toBe(200);
    expect(allowedValues(props.outcome ?? {}).sort()).toEqual(['failure', 'needs_review', 'success']);

    // Every documented maxLength is the one enforced: one more character is a 422 naming the field.
    const limited = Object.entries(props).filter(([, schema]) => schema.maxLength !== undefined);
    expect(limited.map(([name]) => name)).toEqual(expect.arrayContaining(['agent_id', 'task_type', 'model']));
    for (const [name, schema] of limited) {
      const max = schema.maxLength ?? 0;
      const tooLong = await h.request({
        method: 'POST',
        url: '/v1/track',
        payload: { ...TRACK, [name]: 'a'.repeat(max + 1) },
      });
      const error = expectError(tooLong, 422, 'validation_error');
      expect(error.details).toContainEqual({ path: `/body/${name}`, message: expect.any(String) });
      const atMax = await h.request({
        method: 'POST',
        url: '/v1/track',
        payload: { ...TRACK, [name]: 'a'.repeat(max), human_baseline_minutes: 5 },
      });
      expect(atMax.statusCode, `${name} at ${max} characters`).toBe(201);
    }

    // Every documented outcome is accepted; anything else is not.
    for (const outcome of allowedValues(props.outcome ?? {})) {
      expect(
        (await h.request({ method: 'POST', url: '/v1/track', payload: { ...TRACK, outcome } })).statusCode,
      ).toBe(201);
    }
    expectError(
      await h.request({ method: 'POST', url: '/v1/track', payload: { ...TRACK, outcome: 'partial' } }),
      422,
      'validation_error',
    );

    // Every documented required field is required.
    for (const name of body?.required ?? []) {
      const { [name as keyof typeof TRACK]: _dropped, ...rest } = TRACK;
      const error = expectError(
        await h.request({ method: 'POST', url: '/v1/track', payload: rest }),
        422,
        'validation_error',
      );
      expect(error.details).toContainEqual({ path: `/body/${name}`, message: 'is required' });
    }
  });
});

describe.each(ENGINES)('/readyz with the database down (%s)', (engine) => {
  it('answers 503 service_unavailable with Retry-After while /healthz stays up', async () => {
    const storage =
      engine === 'postgres'
        ? openStorage('postgres://postgres@127.0.0.1:1/test', { poolSize: 1 })
        : await createTestStorage('sqlite');
    if (engine === 'sqlite') await storage.close();
    const app = await buildApp(
      {
        storage,
        config: loadConfig({ TALLY_LOG_LEVEL: 'silent' }),
        clock: new ManualClock('2026-11-20T12:00:00.000Z'),
        rateLimiter: new MemoryRateLimiter(),
      },
      { logger: false },
    );
    try {
      const res = await app.inject({ method: 'GET', url: '/readyz' });
      expectError(res, 503, 'service_unavailable');
      expect(res.headers['retry-after']).toMatch(/^\d+$/);
      expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    } finally {
      await app.close();
      if (engine === 'postgres') await storage.close();
    }
  });
});
