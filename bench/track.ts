/**
 * npm run bench:track — loads POST /v1/track (50 connections, 10 s, ~300-byte body, no
 * idempotency key) on SQLite and PostgreSQL, and a bare Fastify JSON endpoint for reference,
 * each server in its own process. Prints req/s, p50, p99 and max latency and the ratio to the
 * reference.
 * For Tally it also prints what the folding stage does under that load (DESIGN §11): the
 * largest tail seen (`tally_fold_tail_events`, sampled from /metrics during the load), how long
 * the tail takes to empty once the load ends, and a report's latency under the load against
 * the same report idle (p50 of sequential requests, one at a time, beside the load).
 * BENCH_KEYS=fixed sends the same agent, task type and client in every request.
 */
import autocannon from 'autocannon';
import { BUILTIN_TASK_TYPES } from '../src/catalogue/builtins.js';
import { metricValue, startServer } from './server-process.js';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
// Realistic traffic (the default, BENCH_KEYS=varied): each request names one of 200 agents, 50
// task types and 20 clients at random, so the rollups of a batch rarely share rows (up to 20
// rollup rows per event). BENCH_KEYS=fixed: always the same three.
const VARIED = process.env.BENCH_KEYS !== 'fixed';
// The report timed idle and under load: one organisation's day by agent, from rollups and tail.
const REPORT_PATH = '/v1/reports/time-saved?period=24h&group_by=agent';
const CONNECTIONS = 50;
const BODY = JSON.stringify({
  agent_id: 'bench-agent-07',
  task_type: 'support_ticket_reply',
  outcome: 'success',
  agent_duration_seconds: 42.5,
  agent_cost: 0.0123,
  model: 'gpt-4o',
  metadata: {
    client_id: 'client-03',
    ticket: 'T-123456',
    channel: 'email',
    priority: 'high',
    team: 'tier-1',
  },
});

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)] as T;
const TASK_TYPES = BUILTIN_TASK_TYPES.map((t) => t.key);

/** The benchmark body with a random agent, task type and client (same size give or take). */
function variedBody(): string {
  const body = JSON.parse(BODY) as { agent_id: string; task_type: string; metadata: Record<string, string> };
  body.agent_id = `bench-agent-${String(Math.floor(Math.random() * 200)).padStart(3, '0')}`;
  body.task_type = pick(TASK_TYPES);
  body.metadata.client_id = `client-${String(Math.floor(Math.random() * 20)).padStart(2, '0')}`;
  return JSON.stringify(body);
}

async function load(port: number, apiKey: string) {
  const result = await autocannon({
    url: `http://127.0.0.1:${port}/v1/track`,
    method: 'POST',
    connections: CONNECTIONS,
    duration: DURATION_S,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
    body: BODY,
    ...(VARIED
      ? { requests: [{ setupRequest: (request: object) => ({ ...request, body: variedBody() }) }] }
      : {}),
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    max: result.latency.max,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The tail's length, from /metrics. */
async function tailEvents(port: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return metricValue(text, 'tally_fold_tail_events');
}

/** Milliseconds the report takes, answered 200 (a failure fails the benchmark). */
async function timeReport(port: number, apiKey: string): Promise<number> {
  const started = performance.now();
  const res = await fetch(`http://127.0.0.1:${port}${REPORT_PATH}`, {
    headers: { authorization: `Bearer ${apiKey}` },
  });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`report answered ${res.status}`);
  return performance.now() - started;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? NaN;
};

/** Waits for the tail to empty; returns the seconds it took (Infinity after 10 minutes). */
async function drain(port: number): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < 600_000) {
    if ((await tailEvents(port)) === 0) return (performance.now() - started) / 1000;
    await sleep(100);
  }
  return Infinity;
}

interface FoldFigures {
  tailMax: number;
  drainS: number;
  reportIdleMs: number;
  reportLoadedMs: number;
}

/** The load, with the tail sampled and the report timed beside it (one request at a time). */
async function loadWatched(port: number, apiKey: string) {
  let loading = true;
  let tailMax = 0;
  const loaded: number[] = [];
  const watcher = (async () => {
    while (loading) {
      loaded.push(await timeReport(port, apiKey));
      tailMax = Math.max(tailMax, await tailEvents(port));
      await sleep(50);
    }
  })();
  const result = await load(port, apiKey);
  loading = false;
  await watcher;
  return { result, tailMax, reportLoadedMs: median(loaded) };
}

async function run(kind: string, port: number) {
  const server = await startServer(kind, port);
  try {
    await load(port, server.apiKey); // warm-up is short: 1/5 of the run is enough for the JIT
    if (kind === 'reference') return { ...(await load(port, server.apiKey)), fold: null };
    await drain(port);
    // The report's code warm before it is timed, as it is under the load (which times it some
    // 150 times): 50 untimed reports, 20 ms apart (the plan's other requests may come 100 a
    // second; a faster warm-up is answered 429).
    for (let i = 0; i < 50; i++) {
      await timeReport(port, server.apiKey);
      await sleep(20);
    }
    const idle: number[] = [];
    for (let i = 0; i < 30; i++) idle.push(await timeReport(port, server.apiKey));
    const { result, tailMax, reportLoadedMs } = await loadWatched(port, server.apiKey);
    const fold: FoldFigures = {
      tailMax,
      drainS: await drain(port),
      reportIdleMs: median(idle),
      reportLoadedMs,
    };
    return { ...result, fold };
  } finally {
    server.child.kill('SIGTERM');
    await new Promise((r) => server.child.once('exit', r));
  }
}

const kinds = (process.env.BENCH_ENGINES ?? 'reference,sqlite,postgres').split(',');
console.log(
  `POST /v1/track, ${CONNECTIONS} connections, ${DURATION_S} s, ${Buffer.byteLength(BODY)}-byte body${VARIED ? ', varied agent, task type and client' : ''}`,
);
const results: Record<string, Awaited<ReturnType<typeof run>>> = {};
let port = 18_080;
for (const kind of kinds) results[kind] = await run(kind, port++);
const reference = results.reference?.rps;
console.log('target        req/s     p50 ms  p99 ms  max ms  non-2xx  errors  vs reference');
for (const [kind, r] of Object.entries(results)) {
  const ratio = reference ? `${((r.rps / reference) * 100).toFixed(1)}%` : '-';
  console.log(
    `${kind.padEnd(12)} ${r.rps.toFixed(0).padStart(7)}  ${String(r.p50).padStart(7)}  ${String(r.p99).padStart(6)}  ${String(r.max).padStart(6)}  ${String(r.non2xx).padStart(7)}  ${String(r.errors).padStart(6)}  ${ratio}`,
  );
}
console.log(`\nThe folding stage under that load; report: GET ${REPORT_PATH}`);
console.log('target       tail max  drained after  report idle p50  under load p50  ratio');
for (const [kind, r] of Object.entries(results)) {
  if (!r.fold) continue;
  const f = r.fold;
  console.log(
    `${kind.padEnd(12)} ${String(f.tailMax).padStart(8)}  ${`${f.drainS.toFixed(1)} s`.padStart(13)}  ${`${f.reportIdleMs.toFixed(1)} ms`.padStart(15)}  ${`${f.reportLoadedMs.toFixed(1)} ms`.padStart(14)}  ${(f.reportLoadedMs / f.reportIdleMs).toFixed(1).padStart(4)}×`,
  );
}
