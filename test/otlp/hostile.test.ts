import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { unlimited } from '../reports/unlimited.js';
import { agentRun, exportRequest, spanId, traceId, type JsonSpan } from './otlp-json.js';
import { listEvents, recordingTracer } from './support.js';

const PROTOBUF = 'application/x-protobuf';

/** Whatever an export holds, the answer is never a 5xx: a 400, or a 200 refusing what it must. */
describe.each(ENGINES)('POST /v1/traces with hostile input (%s)', (engine) => {
  let h: Harness;
  const now = () => h.clock.now().getTime();
  const post = (payload: string | Buffer | object, type = 'application/json') =>
    h.request({ method: 'POST', url: '/v1/traces', headers: { 'content-type': type }, payload });

  beforeAll(async () => {
    // Every span here carries explicit times, so the clock is fixed.
    h = await createHarness(engine, { now: '2026-11-20T12:00:00.000Z', rateLimiter: unlimited });
  });
  afterAll(async () => h.close());

  it('refuses alone a span whose kept fields hold NUL or an unpaired surrogate', async () => {
    const task = { 'tally.task_type': 'support_ticket_reply' };
    const poisoned = [
      { 'gen_ai.agent.name': 'nul\u0000agent', ...task },
      { 'gen_ai.agent.id': 'nul\u0000id', ...task },
      { 'gen_ai.agent.name': 'nul-task-bot', 'tally.task_type': 'support\u0000ticket_reply' },
      { 'gen_ai.agent.name': 'nul-client-bot', 'tally.client_id': 'acme\u0000', ...task },
      { 'gen_ai.agent.name': 'surrogate\uD800-bot', ...task },
    ].map((agent) => agentRun({ endMs: now(), agent }));
    const nulModel = agentRun({
      endMs: now(),
      agent: { 'gen_ai.agent.name': 'nul-model-bot', ...task },
      calls: [{ 'gen_ai.request.model': 'gpt\u00004o', 'gen_ai.usage.input_tokens': 5 }],
    });
    const fine = agentRun({ endMs: now(), agent: { 'gen_ai.agent.name': 'clean-bot', ...task } });
    // A prompt is never kept: a NUL in one refuses nothing.
    if (fine.children[0]?.attributes) fine.children[0].attributes['gen_ai.prompt'] = 'hi\u0000there';
    const spans = [...poisoned.flatMap((r) => r.all), ...nulModel.all, ...fine.all];
    for (const type of ['application/json', PROTOBUF] as const) {
      const res =
        type === PROTOBUF ? await post(protobufOf(spans), PROTOBUF) : await post(exportRequest(spans));
      expect(res.statusCode, res.body).toBe(200);
    }
    const res = await post(exportRequest(spans));
    const body = res.json<{ partialSuccess: { rejectedSpans: string; errorMessage: string } }>();
    // The five agent spans and the poisoned model call.
    expect(body.partialSuccess.rejectedSpans).toBe('6');
    expect(body.partialSuccess.errorMessage).toContain(
      '6 spans have NUL characters or unpaired UTF-16 surrogates in their name or attributes',
    );
    const events = await listEvents(h);
    const ofTrace = (trace: string) =>
      events.filter((e) => (e.metadata as { otel_trace_id?: string } | null)?.otel_trace_id === trace);
    expect(ofTrace(fine.root.traceId)).toHaveLength(1);
    // The run whose model call was refused is tracked without it.
    expect(ofTrace(nulModel.root.traceId)).toEqual([expect.objectContaining({ tokens_in: null })]);
    expect(events.some((e) => JSON.stringify(e).includes('\\u0000'))).toBe(false);
    // A resource attribute that cannot be stored is not kept: the agent falls back to it no more.
    const resourceRun = agentRun({ endMs: now(), agent: task });
    expect((await post(exportRequest(resourceRun.all, { 'service.name': 'svc\u0000' }))).statusCode).toBe(
      200,
    );
  });

  it('answers crafted bodies 200 or 400, never 5xx', async () => {
    const t = traceId();
    const root = { traceId: t, spanId: spanId(), name: 'invoke_agent', startMs: now() - 10, endMs: now() };
    const agent = { 'gen_ai.operation.name': 'invoke_agent', 'tally.task_type': 'support_ticket_reply' };
    const crafted: unknown[] = [
      exportRequest([{ ...root, attributes: agent, endMs: 1e18 }]),
      exportRequest([{ ...root, attributes: agent, startMs: -5, endMs: 1 }]),
      exportRequest([{ ...root, traceId: 'ab', attributes: agent }]),
      exportRequest([{ ...root, spanId: 'zz'.repeat(8), attributes: agent }]),
      exportRequest([{ ...root, attributes: { ...agent, 'gen_ai.agent.name': 'x'.repeat(200_000) } }]),
      exportRequest([{ ...root, attributes: { ...agent, 'gen_ai.usage.input_tokens': 1e300 } }]),
      exportRequest([
        { ...root, attributes: { ...agent, 'gen_ai.usage.input_tokens': '99999999999999999999' } },
      ]),
      exportRequest([{ ...root, attributes: { ...agent, 'tally.outcome': 'x\u0000' } }]),
      {
        resourceSpans: [
          {
            scopeSpans: [
              {
                spans: [
                  {
                    traceId: t,
                    spanId: spanId(),
                    name: 5,
                    startTimeUnixNano: '99999999999999999999999999',
                    endTimeUnixNano: '999999999999999999999999999',
                    attributes: [{ key: 'tally.task', value: { boolValue: true } }],
                  },
                ],
              },
            ],
          },
        ],
      },
      { resourceSpans: [{ scopeSpans: [{ spans: [{ attributes: [{ key: 7 }] }] }] }] },
      { resourceSpans: 'no' },
      { resourceSpans: [{ resource: { attributes: [{ key: 'k', value: { kvlistValue: nested(300) } }] } }] },
      `${'{"resourceSpans":['.repeat(50_000)}${']}'.repeat(50_000)}`,
      `${'['.repeat(100_000)}${']'.repeat(100_000)}`,
      '[',
      '"\\ud800"',
    ];
    for (const [i, body] of crafted.entries()) {
      const res = await post(body as object);
      expect(res.statusCode, `${i}: ${res.body.slice(0, 300)}`).toBeLessThan(500);
    }
    const protobufs = [
      Buffer.from([0x0a, 0x05, 0x12, 0x03, 0x0a, 0x01, 0xff]),
      Buffer.concat([Buffer.alloc(50_000, 0x0a), Buffer.from([0x00])]),
      Buffer.from('\xff\xfe invalid utf-8 \xc3\x28', 'latin1'),
      // Deeply nested AnyValue arrays in a resource attribute.
      Buffer.concat([...Array.from({ length: 5000 }, () => Buffer.from([0x2a, 0x80])), Buffer.from([0])]),
    ];
    for (const body of protobufs) {
      const res = await post(body, PROTOBUF);
      expect(res.statusCode).toBeLessThan(500);
    }
  });

  it('never answers 5xx to random protobuf or JSON bodies', async () => {
    const valid = protobufOf(agentRun({ endMs: now(), agent: { 'gen_ai.agent.name': 'fuzz-bot' } }).all);
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.uint8Array({ maxLength: 2000 }),
          // A valid export with bytes flipped: mostly well-formed, wrong in places.
          fc
            .array(fc.tuple(fc.nat(valid.length - 1), fc.integer({ min: 0, max: 255 })), { maxLength: 8 })
            .map((flips) => {
              const copy = Buffer.from(valid);
              for (const [at, byte] of flips) copy[at] = byte;
              return new Uint8Array(copy);
            }),
        ),
        async (bytes) => {
          const res = await post(Buffer.from(bytes), PROTOBUF);
          expect(res.statusCode).toBeLessThan(500);
        },
      ),
      { numRuns: 150 },
    );
    await fc.assert(
      fc.asyncProperty(fc.jsonValue({ maxDepth: 6 }), fc.string({ unit: 'binary' }), async (value, text) => {
        const span = {
          traceId: traceId(),
          spanId: spanId(),
          name: text,
          startTimeUnixNano: value,
          endTimeUnixNano: String(now() * 1e6),
          attributes: [
            { key: 'gen_ai.agent.name', value: { stringValue: text } },
            { key: 'tally.task_type', value },
            { key: 'gen_ai.operation.name', value: { stringValue: 'invoke_agent' } },
          ],
        };
        for (const body of [value, { resourceSpans: [{ scopeSpans: [{ spans: [span] }] }] }]) {
          const res = await post(JSON.stringify(body));
          expect(res.statusCode, res.body.slice(0, 300)).toBeLessThan(500);
        }
      }),
      { numRuns: 150 },
    );
  });
});

function nested(depth: number): unknown {
  let value: unknown = { stringValue: 'leaf' };
  for (let i = 0; i < depth; i++) value = { values: [{ key: 'k', value: { kvlistValue: value } }] };
  return value;
}

/** The spans in OTLP/protobuf, as the SDK's serializer writes them. */
function protobufOf(spans: JsonSpan[]): Buffer {
  const { tracer, finished, reset } = recordingTracer('hostile-service');
  reset();
  for (const s of spans) {
    const span = tracer.startSpan(s.name, {
      startTime: [Math.floor(s.startMs / 1000), (s.startMs % 1000) * 1e6],
      attributes: s.attributes,
    });
    span.end([Math.floor(s.endMs / 1000), (s.endMs % 1000) * 1e6]);
  }
  return Buffer.from(ProtobufTraceSerializer.serializeRequest(finished()) ?? []);
}
