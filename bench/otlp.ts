/**
 * npm run bench:otlp — OpenTelemetry ingest against POST /v1/track/batch, on SQLite and
 * PostgreSQL (BENCH_ENGINES), each server in its own process (bench/servers.ts).
 *
 * The traces are made by the OpenTelemetry JS SDK, the way an instrumented agent makes them:
 * BENCH_TRACES agent runs (default 10,000), each a root `invoke_agent` span of one of 200 agents
 * with 3 to 10 children: model calls (`chat`, with provider, model and tokens) and tool calls
 * (`execute_tool`), some model calls inside a tool call. The runs' task types come from 200
 * mapping rules (agent name → task type), as for an agent that knows nothing of Tally. They are
 * sent with the real OTLP/protobuf exporter in exports of 512 spans in the order the spans ended
 * (what the BatchSpanProcessor sends), BENCH_IN_FLIGHT exports at once (default 4): a run whose
 * spans straddle two exports is held in the database until its root comes.
 *
 * The reference, in the same run against the same server: the same number of tasks through
 * POST /v1/track/batch, BENCH_IN_FLIGHT requests at once, as the client libraries' batcher sends
 * them (100 events a request, each with an idempotency key), and at the endpoint's best (500 a
 * request, no key). Prints tasks/s and spans/s of OTLP, tasks/s of each reference, and the
 * ratios, and the server's CPU per task in each phase (all its threads, from /proc; on a machine
 * shared with other work it compares the paths where wall time may not). Target: OTLP at least half
 * of the batch's tasks/s.
 * BENCH_ONLY=otlp|batch runs one path alone (to profile it with BENCH_PROFILE_DIR); BENCH_DEBUG=1
 * also prints the idle server's CPU and the mean time of both routes (/metrics).
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { ExportResultCode } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { context, trace, type Tracer } from '@opentelemetry/api';
import { Pool } from 'undici';
import { BUILTIN_TASK_TYPES } from '../src/catalogue/builtins.js';
import { rng } from './backfill.js';
import { startServer } from './server-process.js';

const TRACES = Number(process.env.BENCH_TRACES ?? 10_000);
const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 4);
const EXPORT_SPANS = 512;
const AGENTS = 200;
const TASK_TYPES = BUILTIN_TASK_TYPES.map((t) => t.key);
const MODELS = [
  ['openai', 'gpt-4o-mini'],
  ['openai', 'gpt-4o'],
  ['anthropic', 'claude-3-5-sonnet-20241022'],
] as const;

const agentName = (i: number) => `bench-agent-${String(i).padStart(3, '0')}`;

/** The runs as the SDK makes them, in the order their spans ended. */
function makeTraces(count: number): { spans: ReadableSpan[]; runs: number } {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      'service.name': 'bench-agents',
      'deployment.environment.name': 'bench',
    }),
    spanProcessors: [new SimpleSpanProcessor(memory)],
  });
  const tracer: Tracer = provider.getTracer('bench');
  const rand = rng(11);
  const pick = <T>(items: readonly T[]) => items[Math.floor(rand() * items.length)] as T;
  for (let i = 0; i < count; i++) {
    const agent = agentName(Math.floor(rand() * AGENTS));
    const root = tracer.startSpan(`invoke_agent ${agent}`, {
      attributes: {
        'gen_ai.operation.name': 'invoke_agent',
        'gen_ai.agent.name': agent,
        'gen_ai.provider.name': 'openai',
      },
    });
    const rootCtx = trace.setSpan(context.active(), root);
    const children = 3 + Math.floor(rand() * 8);
    for (let c = 0; c < children; c++) {
      const [provider_, model] = pick(MODELS);
      const chat = (parent: typeof rootCtx) => {
        const span = tracer.startSpan(
          `chat ${model}`,
          {
            attributes: {
              'gen_ai.operation.name': 'chat',
              'gen_ai.provider.name': provider_,
              'gen_ai.request.model': model,
              'gen_ai.response.model': model,
              'gen_ai.usage.input_tokens': 200 + Math.floor(rand() * 2000),
              'gen_ai.usage.output_tokens': 20 + Math.floor(rand() * 400),
            },
          },
          parent,
        );
        span.end();
      };
      if (c % 3 === 2) {
        const tool = tracer.startSpan(
          'execute_tool search',
          { attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'search' } },
          rootCtx,
        );
        if (rand() < 0.5) chat(trace.setSpan(rootCtx, tool));
        tool.end();
      } else chat(rootCtx);
    }
    root.end();
  }
  return { spans: memory.getFinishedSpans(), runs: count };
}

async function sendTraces(origin: string, apiKey: string, spans: ReadableSpan[]) {
  const exporter = new OTLPTraceExporter({
    url: `${origin}/v1/traces`,
    headers: { Authorization: `Bearer ${apiKey}` },
    timeoutMillis: 60_000,
    concurrencyLimit: IN_FLIGHT * 2,
  });
  const exports: ReadableSpan[][] = [];
  for (let i = 0; i < spans.length; i += EXPORT_SPANS) exports.push(spans.slice(i, i + EXPORT_SPANS));
  let next = 0;
  let failed = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < exports.length) {
      const batch = exports[next++] ?? [];
      const result = await new Promise<{ code: ExportResultCode; error?: Error }>((resolve) =>
        exporter.export(batch, resolve),
      );
      if (result.code !== ExportResultCode.SUCCESS) {
        failed++;
        process.stderr.write(`export failed: ${result.error?.message ?? ''}\n`);
      }
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const seconds = (performance.now() - started) / 1000;
  await exporter.shutdown();
  return { seconds, failed };
}

async function sendBatches(api: Pool, apiKey: string, tasks: number, perRequest: number, keys: boolean) {
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` };
  const rand = rng(13);
  let next = 0;
  let failed = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < tasks) {
      const n = Math.min(perRequest, tasks - next);
      next += n;
      const events = Array.from({ length: n }, () => ({
        agent_id: agentName(Math.floor(rand() * AGENTS)),
        task_type: TASK_TYPES[Math.floor(rand() * TASK_TYPES.length)],
        outcome: 'success',
        agent_duration_seconds: 12.5,
        model: 'gpt-4o-mini',
        tokens_in: 4000,
        tokens_out: 600,
        metadata: { otel_trace_id: randomUUID() },
        ...(keys ? { idempotency_key: randomUUID() } : {}),
      }));
      const res = await api.request({
        method: 'POST',
        path: '/v1/track/batch',
        headers,
        body: JSON.stringify({ events }),
      });
      const body = (await res.body.json()) as { data?: { status: number }[] };
      if (res.statusCode !== 207) failed += n;
      else failed += (body.data ?? []).filter((d) => d.status !== 201).length;
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  return { seconds: (performance.now() - started) / 1000, failed };
}

async function lifetimeEvents(api: Pool, apiKey: string): Promise<number> {
  const res = await api.request({
    method: 'GET',
    path: '/v1/reports/usage',
    headers: { authorization: `Bearer ${apiKey}` },
  });
  return ((await res.body.json()) as { lifetime_events: number }).lifetime_events;
}

async function addRules(api: Pool, apiKey: string) {
  for (let i = 0; i < AGENTS; i++) {
    const res = await api.request({
      method: 'POST',
      path: '/v1/otlp/mappings',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
      body: JSON.stringify({
        kind: 'task_type',
        field: 'agent_name',
        value: agentName(i),
        task_type: TASK_TYPES[i % TASK_TYPES.length],
      }),
    });
    await res.body.dump();
    // Other endpoints than tracking have a lower per-second rate: wait for the next second.
    if (res.statusCode === 429) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      i--;
    } else if (res.statusCode !== 201) throw new Error(`rule ${i}: ${res.statusCode}`);
  }
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

/**
 * CPU seconds the server process has used (all its threads; Linux /proc), or NaN elsewhere: on
 * a machine shared with other work, CPU per task compares the two paths where wall time may not.
 */
function cpuSeconds(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

/** `fn`'s result with the server's CPU seconds spent meanwhile. */
async function measured<T>(pid: number | undefined, fn: () => Promise<T>): Promise<T & { cpu: number }> {
  const before = cpuSeconds(pid);
  const result = await fn();
  return { ...result, cpu: cpuSeconds(pid) - before };
}

async function run(engine: string, port: number) {
  const server = await startServer(engine, port);
  const origin = `http://127.0.0.1:${port}`;
  const api = new Pool(origin, { connections: IN_FLIGHT * 2 });
  try {
    await addRules(api, server.apiKey);
    // Warm-up of both paths (JIT, prepared statements), not timed.
    if (process.env.BENCH_ONLY !== 'batch') await sendTraces(origin, server.apiKey, makeTraces(500).spans);
    if (process.env.BENCH_ONLY !== 'otlp') await sendBatches(api, server.apiKey, 2_000, 100, true);

    if (process.env.BENCH_DEBUG) {
      const idle = await measured(server.child.pid, async () => {
        await new Promise((resolve) => setTimeout(resolve, 3000));
        return {};
      });
      process.stdout.write(`idle server: ${(idle.cpu / 3).toFixed(3)} CPU s per s\n`);
    }
    const { spans, runs } = makeTraces(TRACES);
    const before = await lifetimeEvents(api, server.apiKey);
    const pid = server.child.pid;
    // BENCH_ONLY=otlp skips the references, BENCH_ONLY=batch the OTLP load (to profile one path
    // alone, with BENCH_PROFILE_DIR).
    const only = process.env.BENCH_ONLY === 'otlp';
    const skipped = { seconds: NaN, failed: 0, cpu: NaN };
    const clientStyle = only
      ? skipped
      : await measured(pid, () => sendBatches(api, server.apiKey, runs, 100, true));
    const best = only
      ? skipped
      : await measured(pid, () => sendBatches(api, server.apiKey, runs, 500, false));
    const otlp =
      process.env.BENCH_ONLY === 'batch'
        ? skipped
        : await measured(pid, () => sendTraces(origin, server.apiKey, spans));
    const perTask = (cpu: number) => `${((cpu / runs) * 1e6).toFixed(0)} µs CPU/task`;
    const stored = (await lifetimeEvents(api, server.apiKey)) - before;
    if (process.env.BENCH_DEBUG) {
      const text = await (await fetch(`${origin}/metrics`)).text();
      process.stdout.write(
        text
          .split('\n')
          .filter((l) => /duration_seconds_(sum|count)\{route="\/v1\/(traces|track\/batch)"/.test(l))
          .join('\n') + '\n',
      );
    }
    const otlpTasksPerS = runs / otlp.seconds;
    const clientPerS = runs / clientStyle.seconds;
    const bestPerS = runs / best.seconds;
    process.stdout.write(
      [
        `${engine}: ${fmt(runs)} runs, ${fmt(spans.length)} spans in ${Math.ceil(spans.length / EXPORT_SPANS)} exports, ${IN_FLIGHT} in flight`,
        `  POST /v1/traces          ${fmt(otlpTasksPerS)} tasks/s, ${fmt(spans.length / otlp.seconds)} spans/s, ${perTask(otlp.cpu)} (${otlp.failed} exports failed)`,
        `  POST /v1/track/batch     ${fmt(clientPerS)} tasks/s, ${perTask(clientStyle.cpu)} (100 a request, idempotency keys; ${clientStyle.failed} failed)`,
        `  POST /v1/track/batch     ${fmt(bestPerS)} tasks/s, ${perTask(best.cpu)} (500 a request, no keys; ${best.failed} failed)`,
        `  ratio OTLP / batch       ${(otlpTasksPerS / clientPerS).toFixed(2)} (client-style), ${(otlpTasksPerS / bestPerS).toFixed(2)} (500, no keys)`,
        `  events stored            ${fmt(stored)} of ${fmt(runs * 3)} expected`,
        '',
      ].join('\n'),
    );
  } finally {
    await api.close();
    server.child.kill('SIGTERM');
    await new Promise((resolve) => server.child.once('exit', resolve));
  }
}

const engines = (process.env.BENCH_ENGINES ?? 'sqlite,postgres').split(',');
let port = 18_300;
for (const engine of engines) await run(engine, port++);
