import { gzipSync } from 'node:zlib';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeExportResponse, decodeRpcStatus } from '../../src/otlp/proto.js';
import { otlpDb } from '../../src/otlp/tables.js';
import { createApiKey } from '../../src/orgs/api-keys.js';
import { MemoryRateLimiter } from '../../src/http/rate-limit.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { unlimited } from '../reports/unlimited.js';
import { agentRun, exportRequest, spanId, traceId } from './otlp-json.js';
import { listEvents, recordingTracer, runSupportAgent } from './support.js';

const PROTOBUF = 'application/x-protobuf';

/** Rows in every OpenTelemetry table and in events: what an export wrote. */
async function written(h: Harness): Promise<Record<string, number>> {
  const db = otlpDb(h.storage.db);
  const count = async (
    table: 'otlp_held_spans' | 'otlp_done_traces' | 'otlp_unresolved_runs' | 'otlp_counters',
  ) =>
    Number(
      (
        await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  return {
    held: await count('otlp_held_spans'),
    done: await count('otlp_done_traces'),
    unresolved: await count('otlp_unresolved_runs'),
    counters: await count('otlp_counters'),
    events: (await listEvents(h)).length,
  };
}

describe.each(ENGINES)('POST /v1/traces as OTLP/HTTP defines it (%s)', (engine) => {
  let h: Harness;
  const now = () => h.clock.now().getTime();
  const post = (payload: unknown, headers: Record<string, string> = {}, apiKey?: string | null) =>
    h.request({
      method: 'POST',
      url: '/v1/traces',
      headers: { 'content-type': 'application/json', ...headers },
      payload: payload as string,
      ...(apiKey === undefined ? {} : { apiKey }),
    });

  beforeAll(async () => {
    h = await createHarness(engine, { now: new Date().toISOString(), rateLimiter: unlimited });
  });
  afterAll(async () => h.close());

  it('answers a malformed protobuf body 400 with a google.rpc.Status, and stores nothing', async () => {
    const before = await written(h);
    const res = await post(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0x0f, 0x01, 0x02]), {
      'content-type': PROTOBUF,
    });
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toBe(PROTOBUF);
    const status = decodeRpcStatus(res.rawPayload);
    expect(status.code).toBe(3);
    expect(status.message).toMatch(/^invalid_otlp: The body is not a protobuf ExportTraceServiceRequest/);
    expect(await written(h)).toEqual(before);
  });

  it('answers malformed JSON 400 in the one error body, and stores nothing', async () => {
    const before = await written(h);
    const syntax = await post('{"resourceSpans": [');
    expect(syntax.statusCode).toBe(400);
    expect(syntax.json()).toMatchObject({ error: { code: 'invalid_json' } });
    const shape = await post({ resourceSpans: [{ scopeSpans: [{ spans: 'none' }] }] });
    expect(shape.statusCode).toBe(400);
    expect(shape.json()).toMatchObject({
      error: { code: 'invalid_otlp', message: 'resourceSpans[0].scopeSpans[0].spans must be an array.' },
    });
    const badTime = await post({
      resourceSpans: [{ scopeSpans: [{ spans: [{ startTimeUnixNano: 'soon' }] }] }],
    });
    expect(badTime.statusCode).toBe(400);
    expect(await written(h)).toEqual(before);
  });

  it('refuses other media types (415) and encodings (415), a gzip bomb (413) and broken gzip (400)', async () => {
    const before = await written(h);
    const text = await post('hello', { 'content-type': 'text/plain' });
    expect(text.statusCode).toBe(415);
    expect(text.json()).toMatchObject({ error: { code: 'unsupported_media_type' } });
    const brotli = await post('{}', { 'content-encoding': 'br' });
    expect(brotli.statusCode).toBe(415);
    // 40 MiB of zeros in some 40 KiB: refused once it inflates past the limit, not before.
    const bomb = gzipSync(Buffer.alloc(40 * 1024 * 1024));
    expect(bomb.length).toBeLessThan(100 * 1024);
    const exploded = await post(bomb, { 'content-type': PROTOBUF, 'content-encoding': 'gzip' });
    expect(exploded.statusCode).toBe(413);
    expect(decodeRpcStatus(exploded.rawPayload).message).toMatch(/^payload_too_large/);
    const broken = await post(Buffer.from('not gzip at all'), { 'content-encoding': 'gzip' });
    expect(broken.statusCode).toBe(400);
    expect(broken.json()).toMatchObject({ error: { code: 'bad_request' } });
    expect(await written(h)).toEqual(before);
  });

  it('answers an export without a key 401: JSON for JSON, a google.rpc.Status for protobuf', async () => {
    const json = await post({}, {}, null);
    expect(json.statusCode).toBe(401);
    expect(json.json()).toMatchObject({ error: { code: 'missing_authorization' } });
    const proto = await post(Buffer.alloc(0), { 'content-type': PROTOBUF }, 'tally_live_nope');
    expect(proto.statusCode).toBe(401);
    expect(decodeRpcStatus(proto.rawPayload)).toEqual({
      code: 16,
      message: expect.stringMatching(/^invalid_api_key/),
    });
  });

  it('takes an ingest key, which may not manage mapping rules', async () => {
    const { api_key: ingest } = await createApiKey({ ctx: h.ctx, orgId: h.org.id, scope: 'ingest' });
    const run = agentRun({
      endMs: now(),
      agent: { 'gen_ai.agent.name': 'ingest-bot', 'tally.task_type': 'data_entry_record' },
    });
    const res = await post(exportRequest(run.all), {}, ingest);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({});
    expect((await listEvents(h)).filter((e) => e.agent_id === 'ingest-bot')).toHaveLength(1);
    const rules = await h.request({ method: 'GET', url: '/v1/otlp/mappings', apiKey: ingest });
    expect(rules.statusCode).toBe(403);
    expect(rules.json()).toMatchObject({ error: { code: 'insufficient_scope' } });
  });

  it('answers an empty export (protobuf) with an empty ExportTraceServiceResponse', async () => {
    const res = await post(Buffer.alloc(0), { 'content-type': PROTOBUF });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe(PROTOBUF);
    expect(res.rawPayload.length).toBe(0);
    expect(decodeExportResponse(res.rawPayload)).toEqual({});
  });

  it('writes nothing for spans without GenAI attributes', async () => {
    const before = await written(h);
    const trace = traceId();
    const root = spanId();
    const res = await post(
      exportRequest([
        {
          traceId: trace,
          spanId: root,
          name: 'GET /orders',
          startMs: now() - 50,
          endMs: now(),
          attributes: { 'http.request.method': 'GET' },
        },
        {
          traceId: trace,
          spanId: spanId(),
          parentSpanId: root,
          name: 'SELECT',
          startMs: now() - 40,
          endMs: now() - 10,
          attributes: { 'db.system': 'postgresql' },
        },
        {
          traceId: traceId(),
          spanId: spanId(),
          parentSpanId: spanId(),
          name: 'child of nothing',
          startMs: now() - 5,
          endMs: now(),
        },
      ]),
    );
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({});
    expect(await written(h)).toEqual(before);
  });

  it('reports refused spans in partial_success: invalid ids, and a run without a task type', async () => {
    const run = agentRun({ endMs: now(), agent: { 'gen_ai.agent.name': 'nameless-task-bot' } });
    const bad = { ...run.children[0], traceId: 'not-hex', spanId: spanId() } as (typeof run.children)[0];
    const res = await post(exportRequest([...run.all, bad]));
    expect(res.statusCode).toBe(200);
    const body = res.json<{ partialSuccess: { rejectedSpans: string; errorMessage: string } }>();
    // The invalid span, and the run's two spans (kept as unresolved, never silently lost).
    expect(body.partialSuccess.rejectedSpans).toBe('3');
    expect(body.partialSuccess.errorMessage).toContain('1 span has invalid ids or times');
    expect(body.partialSuccess.errorMessage).toContain('1 run no task type');
    const unresolved = await h.request({ method: 'GET', url: '/v1/otlp/unresolved-runs' });
    expect(unresolved.json<{ data: { agent_id: string }[] }>().data.map((r) => r.agent_id)).toContain(
      'nameless-task-bot',
    );

    // The same in protobuf: the response is an ExportTraceServiceResponse with partial_success.
    const { tracer, finished } = recordingTracer();
    await runSupportAgent(tracer, { agentName: 'proto-nameless-bot' });
    const proto = await post(Buffer.from(ProtobufTraceSerializer.serializeRequest(finished()) ?? []), {
      'content-type': PROTOBUF,
    });
    expect(proto.statusCode).toBe(200);
    expect(decodeExportResponse(proto.rawPayload)).toEqual({
      partialSuccess: { rejectedSpans: 3, errorMessage: expect.stringContaining('no task type') },
    });
  });

  it('answers 429 with Retry-After when the runs of an export are over the key rate, storing nothing', async () => {
    const limited = await createHarness(engine, {
      now: new Date().toISOString(),
      plan: 'free',
      rateLimiter: new MemoryRateLimiter(),
    });
    try {
      const runs = (agent: string, n: number) =>
        exportRequest(
          Array.from(
            { length: n },
            () =>
              agentRun({
                endMs: limited.clock.now().getTime(),
                agent: { 'gen_ai.agent.name': agent, 'tally.task_type': 'data_entry_record' },
              }).all,
          ).flat(),
        );
      const first = await limited.request({
        method: 'POST',
        url: '/v1/traces',
        payload: runs('first-bot', 40),
      });
      expect(first.statusCode).toBe(200);
      const second = await limited.request({
        method: 'POST',
        url: '/v1/traces',
        headers: { 'content-type': PROTOBUF },
        payload: Buffer.from(
          ProtobufTraceSerializer.serializeRequest(
            (() => {
              const { tracer, finished } = recordingTracer();
              for (let i = 0; i < 30; i++)
                tracer.startActiveSpan(
                  'invoke_agent',
                  {
                    attributes: {
                      'gen_ai.operation.name': 'invoke_agent',
                      'gen_ai.agent.name': 'second-bot',
                      'tally.task_type': 'data_entry_record',
                    },
                  },
                  (s) => s.end(),
                );
              return finished();
            })(),
          ) ?? [],
        ),
      });
      expect(second.statusCode).toBe(429);
      expect(second.headers['retry-after']).toBe('1');
      expect(decodeRpcStatus(second.rawPayload)).toMatchObject({
        code: 8,
        message: expect.stringMatching(/^rate_limited/),
      });
      const events = await listEvents(limited);
      expect(events.filter((e) => e.agent_id === 'first-bot')).toHaveLength(40);
      expect(events.filter((e) => e.agent_id === 'second-bot')).toHaveLength(0);
    } finally {
      await limited.close();
    }
  });
});
