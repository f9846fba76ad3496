/**
 * npm run bench:webhooks — tracks events at a steady rate (BENCH_RATE, default 500/s, for
 * BENCH_DURATION_S, default 20 s) with POST /v1/track against Tally with its folding stage and
 * delivery worker running (bench/webhooks-server.ts), on SQLite or, with BENCH_ENGINE=postgres,
 * on a PostgreSQL database of its own. One webhook is subscribed to `event.created` and points
 * at a local receiver. Prints deliveries/s, the backlog when sending stops and at the end, and
 * the delay from each 201 to the receipt of its delivery (p50, p99, max).
 *
 * BENCH_BACKFILL=N: meanwhile a second organisation backfills N events through
 * POST /v1/track/batch (bench/backfill.ts: 500 per request, BENCH_IN_FLIGHT requests at once,
 * default 4, `occurred_at` over 89 days). The live events then go on until 10 s after the
 * backfill ends, and their delay is printed apart for those tracked while it ran and after: what
 * another organisation's backfill costs a live one's webhooks (README "Backfills wait for the
 * folding stage"; TALLY_INGEST_MAX_LAG_SECONDS is passed to the server).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { Pool } from 'undici';
import { openStorage } from '../src/storage/db.js';
import { sendBackfill } from './backfill.js';
import { metricValue } from './server-process.js';

const RATE = Number(process.env.BENCH_RATE ?? 500);
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 20);
/** Seconds of tracking at the same rate before the measured ones, while the server's code warms. */
const WARMUP_S = Number(process.env.BENCH_WARMUP_S ?? 5);
const ENGINE = process.env.BENCH_ENGINE === 'postgres' ? 'postgres' : 'sqlite';
const BACKFILL = Number(process.env.BENCH_BACKFILL ?? 0);
const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 4);
/** How long the live events go on once the backfill has ended. */
const AFTER_BACKFILL_MS = 10_000;
const PG_URL = process.env.TALLY_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** A fresh database for the server, and how to remove it. */
async function database(): Promise<{ url: string; drop(): Promise<void> }> {
  if (ENGINE === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'tally-bench-webhooks-'));
    return {
      url: `sqlite:${join(dir, 'tally.db')}`,
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const name = `bench_webhooks_${process.pid}`;
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    await client.query(statement);
    await client.end();
  };
  await admin(`DROP DATABASE IF EXISTS ${name}`);
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(PG_URL);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

const target = await database();
// BENCH_PROFILE_DIR: the server writes a V8 CPU profile of each of its threads there on exit.
const profile = process.env.BENCH_PROFILE_DIR;
const child = spawn(
  process.execPath,
  [
    ...(profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : []),
    '--import',
    'tsx',
    'bench/webhooks-server.ts',
    target.url,
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
const { port, apiKey, backfillKey } = await new Promise<{
  port: number;
  apiKey: string;
  backfillKey: string;
}>((resolve, reject) => {
  createInterface({ input: child.stdout }).once('line', (line) => resolve(JSON.parse(line)));
  child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
});

// The receiver: notes when each event's delivery arrives.
const receivedAt = new Map<string, number>();
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const at = performance.now();
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data: { event_id: string } };
    if (!receivedAt.has(body.data.event_id)) receivedAt.set(body.data.event_id, at);
    res.writeHead(200).end('ok');
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const receiverPort = (receiver.address() as AddressInfo).port;

const api = new Pool(`http://127.0.0.1:${port}`, { connections: 32 });
const headers = { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` };
const hook = await api.request({
  method: 'POST',
  path: '/v1/webhooks',
  headers,
  body: JSON.stringify({ url: `http://127.0.0.1:${receiverPort}/hook`, event_types: ['event.created'] }),
});
if (hook.statusCode !== 201) throw new Error(`webhook creation failed: ${await hook.body.text()}`);
await hook.body.dump();

const createdAt = new Map<string, number>();
let failures = 0;
const body = JSON.stringify({
  agent_id: 'bench-agent',
  task_type: 'support_ticket_reply',
  outcome: 'success',
});
async function trackOne(): Promise<void> {
  const res = await api.request({ method: 'POST', path: '/v1/track', headers, body });
  const text = await res.body.text();
  if (res.statusCode !== 201) {
    failures++;
    return;
  }
  createdAt.set((JSON.parse(text) as { event_id: string }).event_id, performance.now());
}

const metric = async (name: string) => {
  const res = await api.request({ method: 'GET', path: '/metrics' });
  return metricValue(await res.body.text(), name);
};

process.stderr.write(
  `tracking ${RATE}/s for ${WARMUP_S} s of warm-up, then ${DURATION_S} s${BACKFILL > 0 ? `, and until 10 s after a backfill of ${BACKFILL} events` : ''}…\n`,
);
const start = performance.now();
const measuredFrom = start + WARMUP_S * 1000;
let stopAt = measuredFrom + DURATION_S * 1000;
// The backfill, from the other organisation on connections of its own; the live events go on
// until 10 s after it ends.
let backfillEnd = Number.POSITIVE_INFINITY;
const backfillPool = new Pool(`http://127.0.0.1:${port}`, { connections: IN_FLIGHT });
const backfill =
  BACKFILL > 0
    ? new Promise((r) => setTimeout(r, WARMUP_S * 1000))
        .then(() =>
          sendBackfill({ api: backfillPool, apiKey: backfillKey, total: BACKFILL, inFlight: IN_FLIGHT }),
        )
        .then((result) => {
          backfillEnd = performance.now();
          stopAt = Math.max(stopAt, backfillEnd + AFTER_BACKFILL_MS);
          return result;
        })
    : null;
// The fold lag (/metrics) sampled every second while the events go: how far behind the stage is.
let sending = true;
let maxLag = 0;
const sampler = (async () => {
  while (sending) {
    maxLag = Math.max(maxLag, await metric('tally_fold_lag_seconds'));
    await new Promise((r) => setTimeout(r, 1000));
  }
})();
const inflight: Promise<void>[] = [];
for (let i = 0; ; i++) {
  // Paced by the schedule, not by responses: a slow server does not lower the offered rate.
  const due = start + (i * 1000) / RATE;
  if (due >= stopAt && (backfill === null || backfillEnd < Number.POSITIVE_INFINITY)) break;
  const wait = due - performance.now();
  if (wait > 1) await new Promise((r) => setTimeout(r, wait));
  inflight.push(trackOne());
}
const offered = inflight.length;
await Promise.all(inflight);
const backfilled = await backfill;
const sendEnd = performance.now();
sending = false;
await sampler;
const db = openStorage(target.url).db;
const backlog = async () =>
  Number(
    (
      await db
        .selectFrom('webhook_deliveries')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('status', '=', 'pending')
        .executeTakeFirstOrThrow()
    ).n,
  );
const backlogAtStop = await backlog();
const deadline = performance.now() + (BACKFILL > 0 ? 120_000 : 15_000);
while (receivedAt.size < createdAt.size && performance.now() < deadline)
  await new Promise((r) => setTimeout(r, 50));
// Receipts come before their results are recorded; give the records a moment to land.
let backlogAtEnd = await backlog();
while (backlogAtEnd > 0 && performance.now() < deadline) {
  await new Promise((r) => setTimeout(r, 100));
  backlogAtEnd = await backlog();
}

/** p50, p99 and max of the delays of the events tracked in [from, to). */
function delays(from: number, to: number): string {
  const values = [...createdAt].flatMap(([id, t]) => {
    const r = receivedAt.get(id);
    return r === undefined || t < from || t >= to ? [] : [r - t];
  });
  values.sort((a, b) => a - b);
  const pct = (p: number) =>
    values[Math.min(values.length - 1, Math.floor((p / 100) * values.length))] ?? NaN;
  return `p50 ${pct(50).toFixed(1)} ms, p99 ${pct(99).toFixed(1)} ms, max ${(values[values.length - 1] ?? NaN).toFixed(1)} ms (${values.length} events)`;
}
/**
 * Where the delay of the measured events goes, on the server's clock, for their first attempts
 * (p50 / p99): waiting (the event received → its attempt starts: folded into a message, then
 * claimed by the worker), sent (→ the receiver answered and the outcome is being recorded).
 */
async function stages(): Promise<string> {
  const attempts = await db
    .selectFrom('webhook_attempts as a')
    .innerJoin('webhook_deliveries as d', 'd.id', 'a.delivery_id')
    .innerJoin('webhook_messages as m', 'm.id', 'd.message_id')
    .select(['m.payload', 'a.started_at', 'a.finished_at'])
    .where('a.attempt', '=', 1)
    .execute();
  const ids = new Set([...createdAt].flatMap(([id, t]) => (t >= measuredFrom ? [id] : [])));
  const received = new Map<string, number>();
  for (const e of await db
    .selectFrom('events')
    .select(['id', 'received_at'])
    .where('agent_id', '=', 'bench-agent')
    .execute())
    if (ids.has(e.id)) received.set(e.id, Number(e.received_at));
  const waited: number[] = [];
  const sent: number[] = [];
  for (const a of attempts) {
    const at = received.get((JSON.parse(a.payload) as { event_id: string }).event_id);
    if (at === undefined) continue;
    waited.push(Number(a.started_at) - at);
    sent.push(Number(a.finished_at) - Number(a.started_at));
  }
  const show = (values: number[]) => {
    values.sort((x, y) => x - y);
    const q = (p: number) => values[Math.min(values.length - 1, Math.floor(p * values.length))] ?? NaN;
    return `${q(0.5).toFixed(0)} / ${q(0.99).toFixed(0)} ms`;
  };
  return `waiting ${show(waited)}, sent ${show(sent)} (${sent.length} first attempts)`;
}
const receipts = [...createdAt.keys()]
  .flatMap((id) => receivedAt.get(id) ?? [])
  .filter((t) => t >= measuredFrom)
  .sort((a, b) => a - b);
const spanS = ((receipts[receipts.length - 1] ?? 0) - (receipts[0] ?? 0)) / 1000;

const lines = [
  `engine:                     ${ENGINE}`,
  `events tracked (201):       ${createdAt.size} of ${offered} in ${((sendEnd - start) / 1000).toFixed(1)} s (${failures} non-201)`,
  `offered rate:               ${RATE}/s`,
  `deliveries received:        ${receivedAt.size}`,
  `deliveries/s:               ${(receipts.length / spanS).toFixed(0)} (after the warm-up)`,
  `backlog when sending ended: ${backlogAtStop}`,
  `backlog at the end:         ${backlogAtEnd}`,
  `fold lag max (sampled 1/s): ${maxLag.toFixed(1)} s`,
  `delay 201 → receipt:        ${delays(measuredFrom, Number.POSITIVE_INFINITY)}`,
  `  where it goes (p50 / p99): ${await stages()}`,
  `  during the warm-up:        ${delays(start, measuredFrom)} (not counted above)`,
];
if (backfilled) {
  const gate = process.env.TALLY_INGEST_MAX_LAG_SECONDS;
  const held = {
    batches: await metric('tally_ingest_held_batches_total'),
    seconds: await metric('tally_ingest_held_seconds_total'),
  };
  lines.push(
    `backfill (other org):       ${BACKFILL} events in ${backfilled.seconds.toFixed(1)} s, ${(BACKFILL / backfilled.seconds).toFixed(0)} events/s, ${backfilled.failed} not stored; ${gate === '0' ? 'batches never wait' : `batches wait while the lag is over ${gate || 12} s`}: ${held.batches} waited (${held.seconds.toFixed(0)} s)`,
    `  delay while it ran:       ${delays(measuredFrom, backfillEnd)}`,
    `  delay in the 10 s after:  ${delays(backfillEnd, Number.POSITIVE_INFINITY)}`,
  );
}
process.stdout.write(`${lines.join('\n')}\n`);

await db.destroy();
await api.close();
await backfillPool.close();
receiver.close();
child.kill('SIGTERM');
await new Promise((r) => child.once('exit', r));
await target.drop();
