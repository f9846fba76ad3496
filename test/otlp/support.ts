import type { AddressInfo } from 'node:net';
import { context, type Tracer } from '@opentelemetry/api';
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
