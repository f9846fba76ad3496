import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { context, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { OTLPTraceExporter as HttpExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { generateText, stepCountIs, tool } from 'ai';
import { MockLanguageModelV2 } from 'ai/test';
import { z } from 'zod';
import type { StoredEvent } from '../../src/tracking/events.js';
import { createHarness, type Harness, type HarnessOptions } from '../support/harness.js';
import { unlimited } from '../reports/unlimited.js';

/** The two OTLP/HTTP exporters of the OpenTelemetry JS SDK: protobuf, and JSON. */
export const EXPORTERS = ['proto', 'http'] as const;
export type ExporterKind = (typeof EXPORTERS)[number];

// The AI SDK and agent frameworks start spans as children of the active one: that needs a
// context manager (NodeTracerProvider would register this one).
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());

export interface OtlpServer {
  h: Harness;
  /** The base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it. */
  origin: string;
  close(): Promise<void>;
}

/**
 * A harness listening on a loopback port, its clock at the real time (spans carry real times),
 * without rate limits unless given.
 */
export async function startOtlpServer(
  engine: Harness['engine'],
  options: HarnessOptions = {},
): Promise<OtlpServer> {
  const h = await createHarness(engine, {
    now: new Date().toISOString(),
    rateLimiter: unlimited,
    ...options,
  });
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = h.app.server.address() as AddressInfo;
  return { h, origin: `http://127.0.0.1:${port}`, close: () => h.close() };
}

export interface ExporterOptions {
  origin: string;
  apiKey: string;
  gzip?: boolean;
}

export function createExporter(kind: ExporterKind, options: ExporterOptions): SpanExporter {
  const config = {
    url: `${options.origin}/v1/traces`,
    headers: { Authorization: `Bearer ${options.apiKey}` },
    compression: options.gzip ? ('gzip' as never) : ('none' as never),
    timeoutMillis: 10_000,
  };
  return kind === 'proto' ? new ProtoExporter(config) : new HttpExporter(config);
}

/** One export call with the real exporter, resolved with its result. */
export function exportSpans(exporter: SpanExporter, spans: ReadableSpan[]): Promise<ExportResult> {
  return new Promise((resolve) => exporter.export(spans, resolve));
}

export const succeeded = (result: ExportResult) => result.code === ExportResultCode.SUCCESS;

/**
 * A tracer whose finished spans are kept in memory, to be exported later in any grouping and
 * order (children before their root, twice, …) with a real exporter.
 */
export function recordingTracer(serviceName = 'support-service'): {
  tracer: Tracer;
  finished: () => ReadableSpan[];
  reset: () => void;
} {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': serviceName, 'deployment.environment.name': 'test' }),
    spanProcessors: [new SimpleSpanProcessor(memory)],
  });
  return {
    tracer: provider.getTracer('tally-test'),
    finished: () => memory.getFinishedSpans(),
    reset: () => memory.reset(),
  };
}

/** A tracer exporting as it goes, the way an instrumented service is set up. */
export function exportingTracer(
  exporter: SpanExporter,
  processor: 'simple' | 'batch',
  serviceName = 'support-service',
): { tracer: Tracer; flush: () => Promise<void>; shutdown: () => Promise<void> } {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': serviceName }),
    spanProcessors: [
      processor === 'simple'
        ? new SimpleSpanProcessor(exporter)
        : new BatchSpanProcessor(exporter, { scheduledDelayMillis: 50, maxExportBatchSize: 64 }),
    ],
  });
  return {
    tracer: provider.getTracer('tally-test'),
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}

export async function listEvents(h: Harness): Promise<StoredEvent[]> {
  const res = await h.request({ method: 'GET', url: '/v1/events?limit=100' });
  if (res.statusCode !== 200) throw new Error(`GET /v1/events: ${res.statusCode} ${res.body}`);
  return res.json<{ data: StoredEvent[] }>().data;
}

/** The usage one mock model call reports. */
export interface CallUsage {
  inputTokens: number;
  outputTokens: number;
}

/**
 * An agent as a framework runs one: an `invoke_agent` span around the model calls that Vercel's
 * AI SDK makes (and instruments with `experimental_telemetry`), against its mock language model:
 * a first step that calls a tool, then a step that answers. Resolves with the usage reported.
 */
export async function runSupportAgent(
  tracer: Tracer,
  options: {
    agentName: string;
    attributes?: Record<string, string | number | boolean>;
    usage?: [CallUsage, CallUsage];
    fail?: boolean;
    modelId?: string;
  },
): Promise<CallUsage[]> {
  const usage = options.usage ?? [
    { inputTokens: 1200, outputTokens: 80 },
    { inputTokens: 1500, outputTokens: 240 },
  ];
  const [first, second] = usage;
  const model = new MockLanguageModelV2({
    provider: 'openai.chat',
    modelId: options.modelId ?? 'gpt-4o-mini',
    doGenerate: [
      {
        content: [
          { type: 'tool-call', toolCallId: 'call-1', toolName: 'lookupOrder', input: '{"order":"A-17"}' },
        ],
        finishReason: 'tool-calls',
        usage: { ...first, totalTokens: first.inputTokens + first.outputTokens },
        warnings: [],
      },
      {
        content: [{ type: 'text', text: 'Your refund for order A-17 is on its way.' }],
        finishReason: 'stop',
        usage: { ...second, totalTokens: second.inputTokens + second.outputTokens },
        warnings: [],
      },
    ],
  });
  await tracer.startActiveSpan(
    `invoke_agent ${options.agentName}`,
    {
      attributes: {
        'gen_ai.operation.name': 'invoke_agent',
        'gen_ai.agent.name': options.agentName,
        'gen_ai.provider.name': 'openai',
        ...options.attributes,
      },
    },
    async (span) => {
      try {
        await generateText({
          model,
          prompt: 'Where is my refund for order A-17?',
          tools: {
            lookupOrder: tool({
              description: 'Looks an order up',
              inputSchema: z.object({ order: z.string() }),
              execute: async ({ order }) => ({ order, status: 'refunded' }),
            }),
          },
          stopWhen: stepCountIs(2),
          experimental_telemetry: { isEnabled: true, tracer, functionId: options.agentName },
        });
        if (options.fail) throw new Error('the refund system is down');
      } catch (error) {
        span.recordException(error as Error);
        span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
      } finally {
        span.end();
      }
    },
  );
  return usage;
}

/** The agent's root span among finished spans. */
export function rootOf(spans: ReadableSpan[], agentName: string): ReadableSpan {
  const root = spans.find((s) => s.name === `invoke_agent ${agentName}`);
  if (!root) throw new Error(`no span invoke_agent ${agentName}`);
  return root;
}

/** Seconds of a span, as Tally counts them (microseconds). */
export function secondsOf(span: ReadableSpan): number {
  const us = (t: [number, number]) => t[0] * 1_000_000 + Math.floor(t[1] / 1000);
  return (us(span.endTime) - us(span.startTime)) / 1e6;
}

/** The span's end as Tally stores occurred_at (milliseconds). */
export function endOf(span: ReadableSpan): string {
  return new Date(span.endTime[0] * 1000 + Math.floor(span.endTime[1] / 1_000_000)).toISOString();
}

/** A request as it went over the wire. */
export interface SeenRequest {
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/**
 * An HTTP proxy on a loopback port in front of `origin` that keeps every request it forwards:
 * to see what an exporter really sends (its encoding, its compression).
 */
export async function recordingProxy(
  origin: string,
): Promise<{ origin: string; seen: SeenRequest[]; close(): Promise<void> }> {
  const seen: SeenRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      seen.push({ headers: req.headers, body });
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter(
          ([k]) => !['host', 'connection', 'content-length', 'transfer-encoding'].includes(k),
        ),
      ) as Record<string, string>;
      fetch(`${origin}${req.url ?? '/'}`, { method: req.method, headers, body })
        .then(async (answer) => {
          const headers: Record<string, string> = {};
          answer.headers.forEach((value, key) => {
            if (!['content-length', 'transfer-encoding', 'connection', 'content-encoding'].includes(key))
              headers[key] = value;
          });
          res.writeHead(answer.status, headers);
          res.end(Buffer.from(await answer.arrayBuffer()));
        })
        .catch(() => res.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    seen,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
