import { gunzipSync } from 'node:zlib';
import { OTLPTraceExporter as HttpExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { priceRun } from '../../src/pricing/price-run.js';
import { sweepHeldSpans } from '../../src/otlp/sweeper.js';
import { ENGINES } from '../support/engines.js';
import {
  createExporter,
  endOf,
  EXPORTERS,
  exportingTracer,
  exportSpans,
  listEvents,
  recordingProxy,
  recordingTracer,
  rootOf,
  runSupportAgent,
  secondsOf,
  startOtlpServer,
  succeeded,
  type OtlpServer,
} from './support.js';

/** The value of a metric line `name` (or `name{labels}`) in /metrics. */
async function metric(s: OtlpServer, line: string): Promise<number> {
  const text = (await s.h.request({ method: 'GET', url: '/metrics', apiKey: null })).body;
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return Number(found?.split(' ')[1] ?? NaN);
}

describe.each(ENGINES)('OpenTelemetry exporters against a listening Tally (%s)', (engine) => {
  let s: OtlpServer;
  beforeAll(async () => {
    s = await startOtlpServer(engine);
  });
  afterAll(async () => s.close());

  describe.each(EXPORTERS)('exporter-trace-otlp-%s', (kind) => {
    const agent = (name: string) => `${name}-${kind}`;
    const exporter = () => createExporter(kind, { origin: s.origin, apiKey: s.h.org.apiKey });

    it('tracks a run of the AI SDK as one event: agent, task type, outcome, duration, tokens and cost', async () => {
      const { tracer, finished } = recordingTracer();
      const name = agent('refund-bot');
      const usage = await runSupportAgent(tracer, {
        agentName: name,
        attributes: { 'tally.task_type': 'support_refund_request' },
      });
      const spans = finished();
      // What the AI SDK made: model calls with usage, a tool call, the calls' wrapper.
      expect(spans.map((x) => x.name).sort()).toEqual(
        [
          'ai.generateText',
          'ai.generateText.doGenerate',
          'ai.generateText.doGenerate',
          'ai.toolCall',
          `invoke_agent ${name}`,
        ].sort(),
      );
      const result = await exportSpans(exporter(), spans);
      expect(result.error).toBeUndefined();

      const events = (await listEvents(s.h)).filter((e) => e.agent_id === name);
      expect(events).toHaveLength(1);
      const [event] = events;
      const root = rootOf(spans, name);
      const tokensIn = usage.reduce((n, u) => n + u.inputTokens, 0);
      const tokensOut = usage.reduce((n, u) => n + u.outputTokens, 0);
      const priced = priceRun({
        model: 'openai/gpt-4o-mini',
        tokensIn,
        tokensOut,
        at: new Date(endOf(root)),
        currency: 'EUR',
        usdExchangeRate: null,
      });
      expect(priced).not.toBeNull();
      expect(event).toMatchObject({
        task_type: 'support_refund_request',
        outcome: 'success',
        tokens_in: tokensIn,
        tokens_out: tokensOut,
        model: 'openai/gpt-4o-mini',
        resolved_cost_source: 'computed',
        agent_cost: (priced?.agentCostMicros ?? NaN) / 1e6,
        metadata: { otel_trace_id: root.spanContext().traceId, otel_span_id: root.spanContext().spanId },
      });
      expect(event?.agent_duration_seconds).toBeCloseTo(secondsOf(root), 5);
      expect(Math.abs(Date.parse(event?.occurred_at ?? '') - Date.parse(endOf(root)))).toBeLessThanOrEqual(1);
    });

    it('records a run whose agent span ended in error as a failure', async () => {
      const { tracer, finished } = recordingTracer();
      const name = agent('failing-bot');
      await runSupportAgent(tracer, {
        agentName: name,
        fail: true,
        attributes: { 'tally.task_type': 'support_refund_request' },
      });
      expect(succeeded(await exportSpans(exporter(), finished()))).toBe(true);
      const [event] = (await listEvents(s.h)).filter((e) => e.agent_id === name);
      expect(event).toMatchObject({ outcome: 'failure', hours_saved: 0 });
    });

    it('counts a run once when the exporter sends it again', async () => {
      const { tracer, finished } = recordingTracer();
      const name = agent('retried-bot');
      await runSupportAgent(tracer, {
        agentName: name,
        attributes: { 'tally.task_type': 'support_ticket_reply' },
      });
      const spans = finished();
      const sender = exporter();
      expect(succeeded(await exportSpans(sender, spans))).toBe(true);
      expect(succeeded(await exportSpans(sender, spans))).toBe(true);
      // Out of order as well: the root alone, then the children again.
      const root = rootOf(spans, name);
      expect(succeeded(await exportSpans(sender, [root]))).toBe(true);
      expect(
        succeeded(
          await exportSpans(
            sender,
            spans.filter((x) => x !== root),
          ),
        ),
      ).toBe(true);
      expect((await listEvents(s.h)).filter((e) => e.agent_id === name)).toHaveLength(1);
    });

    it('holds children that come before their root, in other exports, and sums them into the run', async () => {
      const { tracer, finished } = recordingTracer();
      const name = agent('patient-bot');
      const usage = await runSupportAgent(tracer, {
        agentName: name,
        attributes: { 'tally.task_type': 'support_ticket_reply' },
      });
      const spans = finished();
      const root = rootOf(spans, name);
      const sender = exporter();
      // One export per child, as a SimpleSpanProcessor sends them, then the root.
      for (const child of spans.filter((x) => x !== root)) {
        expect(succeeded(await exportSpans(sender, [child]))).toBe(true);
      }
      expect((await listEvents(s.h)).filter((e) => e.agent_id === name)).toHaveLength(0);
      expect(succeeded(await exportSpans(sender, [root]))).toBe(true);
      const events = (await listEvents(s.h)).filter((e) => e.agent_id === name);
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({
        tokens_in: usage.reduce((n, u) => n + u.inputTokens, 0),
        tokens_out: usage.reduce((n, u) => n + u.outputTokens, 0),
      });
    });

    it('takes gzip-compressed exports', async () => {
      const { tracer, finished } = recordingTracer();
      const name = agent('gzip-bot');
      await runSupportAgent(tracer, {
        agentName: name,
        attributes: { 'tally.task_type': 'support_ticket_reply' },
      });
      const proxy = await recordingProxy(s.origin);
      try {
        const gzipped = createExporter(kind, { origin: proxy.origin, apiKey: s.h.org.apiKey, gzip: true });
        expect(succeeded(await exportSpans(gzipped, finished()))).toBe(true);
      } finally {
        await proxy.close();
      }
      // The exporter really compressed it.
      const [request] = proxy.seen;
      expect(request?.headers['content-encoding']).toBe('gzip');
      expect(request?.headers['content-type']).toBe(
        kind === 'proto' ? 'application/x-protobuf' : 'application/json',
      );
      expect(gunzipSync(request?.body ?? Buffer.alloc(0)).length).toBeGreaterThan(0);
      expect((await listEvents(s.h)).filter((e) => e.agent_id === name)).toHaveLength(1);
    });

    it('refuses a bad key with 401, and stores nothing', async () => {
      const { tracer, finished } = recordingTracer();
      const name = agent('intruder-bot');
      await runSupportAgent(tracer, {
        agentName: name,
        attributes: { 'tally.task_type': 'support_ticket_reply' },
      });
      const result = await exportSpans(
        createExporter(kind, { origin: s.origin, apiKey: 'tally_live_AAAAAAAA_' + 'B'.repeat(48) }),
        finished(),
      );
      expect(succeeded(result)).toBe(false);
      expect((result.error as { code?: number } | undefined)?.code).toBe(401);
      expect((await listEvents(s.h)).filter((e) => e.agent_id === name)).toHaveLength(0);
    });

    it('exports from a BatchSpanProcessor as an instrumented service does', async () => {
      const name = agent('batched-bot');
      const service = exportingTracer(exporter(), 'batch');
      await runSupportAgent(service.tracer, {
        agentName: name,
        attributes: { 'tally.task_type': 'support_ticket_reply' },
      });
      await runSupportAgent(service.tracer, {
        agentName: name,
        attributes: { 'tally.task_type': 'support_ticket_reply' },
      });
      await service.flush();
      await service.shutdown();
      expect((await listEvents(s.h)).filter((e) => e.agent_id === name)).toHaveLength(2);
    });
  });

  it.each(EXPORTERS)(
    'takes the %s exporter configured by the environment variables docs/opentelemetry.md shows',
    async (kind) => {
      const saved = { ...process.env };
      Object.assign(process.env, {
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${s.origin}/v1/traces`,
        OTEL_EXPORTER_OTLP_HEADERS: `Authorization=Bearer%20${s.h.org.apiKey}`,
        OTEL_EXPORTER_OTLP_COMPRESSION: 'gzip',
      });
      try {
        const exporter = kind === 'proto' ? new ProtoExporter() : new HttpExporter();
        const { tracer, finished } = recordingTracer();
        const name = `env-bot-${kind}`;
        await runSupportAgent(tracer, {
          agentName: name,
          attributes: { 'tally.task_type': 'support_ticket_reply' },
        });
        const result = await exportSpans(exporter, finished());
        expect(result.error).toBeUndefined();
        expect((await listEvents(s.h)).filter((e) => e.agent_id === name)).toHaveLength(1);
      } finally {
        process.env = saved;
      }
    },
  );

  it('drops a trace whose root never comes once the hold bound has passed, and counts it', async () => {
    const { tracer, finished } = recordingTracer();
    const name = 'orphan-bot';
    await runSupportAgent(tracer, {
      agentName: name,
      attributes: { 'tally.task_type': 'support_ticket_reply' },
    });
    const spans = finished();
    const root = rootOf(spans, name);
    const children = spans.filter((x) => x !== root);
    const sender = createExporter('proto', { origin: s.origin, apiKey: s.h.org.apiKey });
    expect(succeeded(await exportSpans(sender, children))).toBe(true);
    const dropped = await metric(s, 'tally_otlp_dropped_traces_total');
    const held = await metric(s, 'tally_otlp_held_spans');
    // Only the GenAI spans are held: the AI SDK's wrapper and tool spans carry none.
    expect(held).toBeGreaterThanOrEqual(2);

    // Within the bound, the sweeper leaves them.
    await sweepHeldSpans(s.h.ctx);
    expect(await metric(s, 'tally_otlp_held_spans')).toBe(held);
    s.h.clock.advance(s.h.config.otlpHoldSeconds * 1000 + 1);
    const swept = await sweepHeldSpans(s.h.ctx);
    expect(swept).toMatchObject({ droppedTraces: 1, tracked: 0 });
    expect(await metric(s, 'tally_otlp_dropped_traces_total')).toBe(dropped + 1);
    expect(await metric(s, 'tally_otlp_held_spans')).toBe(0);
    expect((await listEvents(s.h)).filter((e) => e.agent_id === name)).toHaveLength(0);
    s.h.clock.set(new Date().toISOString());
  });
});
