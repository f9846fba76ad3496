/**
 * npm run bench:ingest — a backfill: BENCH_EVENTS events (default 1,000,000) through
 * POST /v1/track/batch, 500 per request (BENCH_IN_FLIGHT requests at once, default 4), each a
 * random agent of 200, task type of 50 and client of 20, `occurred_at` spread at random over the
 * 89 days before now, against Tally on SQLite and on PostgreSQL (BENCH_ENGINES), each server in
 * its own process with its folding stage running (bench/servers.ts). Prints, per engine:
 * - the events/s of the load;
 * - the floor: the rate at which the same engine takes the same rows straight into a table with
 *   the events table's columns and indexes (a freshly migrated database's `events`), one
 *   transaction per 500 rows, from this process; half of its rows go in before the load and half
 *   after, so a slow spell of the machine weighs on both sides of the ratio;
 * - the largest fold lag during the load (/metrics, sampled every second): how long an event
 *   tracked meanwhile, a live one too, waits behind the backfill to be folded;
 * - the time from the end of the load until the fold lag (/metrics) is back under 1 s, and until
 *   the stage has built again the week and month rows the backlog left to its day rows
 *   (tally_fold_closing_days at most 1: a day may end meanwhile);
 * - the latency of a read (GET /v1/task-types, which reads the organisation's custom task
 *   types) and of a write to the main file (PATCH /v1/settings), both sent every 200 ms from the
 *   start of the load until the lag is back under 1 s, each on time whatever the ones before it
 *   still wait for. On SQLite a folding pass holds the main file's write lock for seconds
 *   (fold/thread.ts): the write waits for the rest of the pass under way; API and dashboard reads
 *   use the read connection (http/app-types.ts) and wait for no pass;
 * - how many batches waited for the folding stage, and how long in all (TALLY_INGEST_MAX_LAG_SECONDS,
 *   fold/ingest-gate.ts: a batch waits while the stage is further behind than that).
 *
 * With BENCH_RESTATE=1 (or =only, without the backfill), then a restatement's throughput per engine (bench/restate.ts): adjusted
 * events/s beside the rate at which the same engine takes the same events at all, the seconds of
 * its publication, and the latency of POST /v1/track beside it, before, while it stages, while it
 * publishes and after.
 *
 * TALLY_FOLD_BATCH sets the events per folding pass (README "Ingest behind a watermark");
 * TALLY_INGEST_MAX_LAG_SECONDS=0 lets every batch in at once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { Pool } from 'undici';
import { migrateToLatest, openStorage, type Storage } from '../src/storage/db.js';
import { insertEachRow, insertRows } from '../src/storage/insert-rows.js';
import type { EventRow } from '../src/storage/schema.js';
import { EVENT_COLUMNS } from '../src/tracking/event-writes.js';
import { benchEvent, type BenchEvent, PER_REQUEST, rng, sendBackfill } from './backfill.js';
import { benchRestatement } from './restate.js';
import { metricValue, startServer } from './server-process.js';

const TOTAL = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 4);
const PG_URL = process.env.TALLY_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** The stored row of a benchmark event, as tracking would store it (for the floor). */
function floorRow(e: BenchEvent, i: number, now: number): Omit<EventRow, 'ingest_seq'> {
  return {
    id: `evt_${now.toString(36)}${String(i).padStart(16, '0')}`,
    org_id: 'org_floor',
    agent_id: e.agent_id,
    task_type: e.task_type,
    outcome: e.outcome,
    client_id: e.metadata.client_id ?? null,
    resolved_baseline_minutes: 8,
    resolved_baseline_source: 'builtin',
    resolved_hourly_rate_micros: 50_000_000,
    currency: 'EUR',
    agent_duration_seconds: e.agent_duration_seconds,
    hours_saved_micros: 133_333,
    cost_saved_micros: 6_666_666,
    agent_cost_micros: 12_300,
    resolved_cost_source: 'provided',
    model: e.model,
    tokens_in: null,
    tokens_out: null,
    metadata: JSON.stringify(e.metadata),
    audit_sample: null,
    pricing: null,
    occurred_at: Date.parse(e.occurred_at),
    received_at: now,
    idempotency_key: null,
  };
}

// The floor writes the same columns as tracking does.
const FLOOR_COLUMNS = EVENT_COLUMNS;

/** A fresh, migrated database of `engine` for the floor, and how to remove it. */
async function floorStorage(
  engine: 'sqlite' | 'postgres',
): Promise<{ storage: Storage; drop(): Promise<void> }> {
  if (engine === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'tally-bench-floor-'));
    const storage = openStorage(`sqlite:${join(dir, 'floor.db')}`);
    await migrateToLatest(storage.db);
    return { storage, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const schema = `bench_floor_${process.pid}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
  await admin.end();
  const storage = openStorage(PG_URL, { schema, poolSize: 2 });
  await migrateToLatest(storage.db);
  return {
    storage,
    drop: async () => {
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await client.end();
    },
  };
}

/** Inserts rows [from, to) of the floor, 500 per transaction; returns the seconds it took. */
async function runFloor(storage: Storage, from: number, to: number, now: number): Promise<number> {
  const rand = rng(99 + from);
  const started = performance.now();
  for (let i = from; i < to; i += PER_REQUEST) {
    const rows: Array<Omit<EventRow, 'ingest_seq'>> = [];
    for (let j = i; j < Math.min(to, i + PER_REQUEST); j++)
      rows.push(floorRow(benchEvent(rand, now), j, now));
    await storage.db.transaction().execute(async (trx) => {
      if (storage.engine === 'sqlite') await insertEachRow(trx, 'events', FLOOR_COLUMNS, rows);
      else await insertRows(trx, 'events', FLOOR_COLUMNS, rows).execute();
    });
  }
  return (performance.now() - started) / 1000;
}

async function metric(api: Pool, name: string): Promise<number> {
  const res = await api.request({ method: 'GET', path: '/metrics' });
  return metricValue(await res.body.text(), name);
}

async function runEngine(engine: 'sqlite' | 'postgres', port: number) {
  const now = Date.now();
  const floor = await floorStorage(engine);
  const half = Math.floor(TOTAL / 2 / PER_REQUEST) * PER_REQUEST;
  let floorSeconds = await runFloor(floor.storage, 0, half, now);

  const server = await startServer(engine, port);
  const api = new Pool(`http://127.0.0.1:${port}`, { connections: IN_FLIGHT + 1 });
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${server.apiKey}` };
  let maxTail = 0;
  // A read and a write of the main file every 200 ms, each sent on time whether or not the ones
  // before it were answered (on connections of their own), so that they come at any point of a
  // pass: one that waited for the previous answer would come just after a pass began, since the
  // answer comes when a pass ends.
  const prober = new Pool(`http://127.0.0.1:${port}`, { connections: 64 });
  const reads: number[] = [];
  const writes: number[] = [];
  const timed = async (into: number[], method: 'GET' | 'PATCH', path: string, body?: string) => {
    const t0 = performance.now();
    const res = await prober.request({ method, path, headers, ...(body === undefined ? {} : { body }) });
    await res.body.arrayBuffer();
    if (res.statusCode !== 200) throw new Error(`${method} ${path} answered ${res.statusCode}`);
    into.push(performance.now() - t0);
  };
  let probing = true;
  const probes: Array<Promise<unknown>> = [];
  const probe = (async () => {
    while (probing) {
      // Settled at once (the failure is thrown below, after the run), so none goes unhandled.
      probes.push(timed(reads, 'GET', '/v1/task-types').catch((e: unknown) => e));
      const write = JSON.stringify({ name: 'bench' });
      probes.push(timed(writes, 'PATCH', '/v1/settings', write).catch((e: unknown) => e));
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  // The tail and the lag while the load runs (sampled every second): the lag is how long an event
  // tracked then, a live one too, waits to be folded (its webhook messages, its rollups).
  let loading = true;
  let maxLag = 0;
  const sampler = (async () => {
    while (loading) {
      maxTail = Math.max(maxTail, await metric(api, 'tally_fold_tail_events'));
      maxLag = Math.max(maxLag, await metric(api, 'tally_fold_lag_seconds'));
      await new Promise((r) => setTimeout(r, 1000));
    }
  })();
  const { failed, seconds: loadSeconds } = await sendBackfill({
    api,
    apiKey: server.apiKey,
    total: TOTAL,
    inFlight: IN_FLIGHT,
  });
  loading = false;
  await sampler;
  const endTail = await metric(api, 'tally_fold_tail_events');
  const held = {
    batches: await metric(api, 'tally_ingest_held_batches_total'),
    seconds: await metric(api, 'tally_ingest_held_seconds_total'),
  };
  const loadEnd = performance.now();
  let caughtUp = NaN;
  for (;;) {
    const lag = await metric(api, 'tally_fold_lag_seconds');
    if (lag < 1) {
      caughtUp = (performance.now() - loadEnd) / 1000;
      break;
    }
    if (performance.now() - loadEnd > 1_800_000) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  probing = false;
  await probe;
  // Then the weeks and days whose rows the backlog left to its day rows, built again (fold/plan.ts
  // planPart): reports read those days from their day rows until then.
  let closed = NaN;
  for (;;) {
    if ((await metric(api, 'tally_fold_closing_days')) <= 1) {
      closed = (performance.now() - loadEnd) / 1000;
      break;
    }
    if (performance.now() - loadEnd > 1_800_000) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const probeFailure = (await Promise.all(probes)).find((outcome) => outcome instanceof Error);
  await prober.close();
  await api.close();
  server.child.kill('SIGTERM');
  await new Promise((r) => server.child.once('exit', r));

  floorSeconds += await runFloor(floor.storage, half, TOTAL, now);
  await floor.storage.close();
  await floor.drop();
  if (probeFailure !== undefined) throw probeFailure;
  return {
    rate: TOTAL / loadSeconds,
    floor: TOTAL / floorSeconds,
    failed,
    maxTail: Math.max(maxTail, endTail),
    maxLag,
    endTail,
    caughtUp,
    closed,
    held,
    reads: reads.sort((a, b) => a - b),
    writes: writes.sort((a, b) => a - b),
  };
}

/** The q-quantile of sorted `values`. */
const quantile = (values: number[], q: number) =>
  values[Math.min(values.length - 1, Math.floor(q * values.length))] ?? NaN;

const engines = (process.env.BENCH_ENGINES ?? 'sqlite,postgres').split(',') as Array<'sqlite' | 'postgres'>;
const passes = process.env.TALLY_FOLD_BATCH
  ? `passes of ${process.env.TALLY_FOLD_BATCH} events`
  : 'default passes';
const lagBound = process.env.TALLY_INGEST_MAX_LAG_SECONDS;
const gate =
  lagBound === '0' ? 'batches never wait' : `batches wait while the lag is over ${lagBound || 12} s`;
console.log(
  `POST /v1/track/batch: ${TOTAL.toLocaleString('en')} events, ${PER_REQUEST} per request, ${IN_FLIGHT} requests in flight, occurred_at over 89 days; folding in ${passes}; ${gate}`,
);
console.log(
  'engine     events/s   floor/s  vs floor  failed  tail max  tail at end  lag max  lag < 1 s after  closed after  batches held (s)  a read p50 / p99 / max  a write (PATCH /v1/settings) p50 / p99 / max',
);
const spread = (values: number[]) =>
  `${[0.5, 0.99, 1].map((q) => `${quantile(values, q).toFixed(0)} ms`).join(' / ')} (${values.length})`;
let port = 18_180;
// BENCH_RESTATE=only: the restatement alone.
for (const engine of process.env.BENCH_RESTATE === 'only' ? [] : engines) {
  const r = await runEngine(engine, port++);
  console.log(
    `${engine.padEnd(9)} ${r.rate.toFixed(0).padStart(9)} ${r.floor.toFixed(0).padStart(9)} ${`${((r.rate / r.floor) * 100).toFixed(1)}%`.padStart(9)} ${String(r.failed).padStart(7)} ${String(r.maxTail).padStart(9)} ${String(r.endTail).padStart(12)} ${`${r.maxLag.toFixed(1)} s`.padStart(8)} ${`${r.caughtUp.toFixed(1)} s`.padStart(16)} ${`${r.closed.toFixed(1)} s`.padStart(13)} ${`${r.held.batches} (${r.held.seconds.toFixed(0)} s)`.padStart(17)}  ${spread(r.reads)}  ${spread(r.writes)}`,
  );
}

if (process.env.BENCH_RESTATE === '1' || process.env.BENCH_RESTATE === 'only') {
  const total = Number(process.env.BENCH_RESTATE_EVENTS ?? 100_000);
  console.log(
    `\nA restatement of ${total.toLocaleString('en')} events (staged 5,000 at a time, published in one transaction), POST /v1/track beside it`,
  );
  console.log(
    'engine     adjusted/s   events written/s (reference)   whole (s)   publication (s)   cleanup after it (s)   folded after it (s)',
  );
  const results: Array<[string, Awaited<ReturnType<typeof benchRestatement>>]> = [];
  for (const engine of engines) {
    const r = await benchRestatement(engine, total);
    console.log(
      `${engine.padEnd(9)} ${r.rate.toFixed(0).padStart(11)} ${r.written.toFixed(0).padStart(32)} ${r.seconds.toFixed(1).padStart(11)} ${r.publish.toFixed(1).padStart(17)} ${r.cleanup.toFixed(1).padStart(22)} ${r.folding.toFixed(1).padStart(21)}`,
    );
    results.push([engine, r]);
  }
  for (const [title, of] of [
    ['POST /v1/track', 'tracking'],
    ['PATCH /v1/settings (a write to the main file)', 'writes'],
  ] as const) {
    console.log(`\n${title} meanwhile, latency p50 / p99 / max (requests, failed)`);
    console.log('engine     window        p50 ms   p99 ms   max ms   requests  failed');
    for (const [engine, r] of results)
      for (const [name, l] of Object.entries(r[of]))
        console.log(
          `${engine.padEnd(9)}  ${name.padEnd(12)} ${[l.p50, l.p99, l.max].map((v, i) => (l.n === 0 ? '—' : v.toFixed(0)).padStart(i === 0 ? 7 : 8)).join(' ')} ${String(l.n).padStart(10)} ${String(l.failed).padStart(7)}`,
        );
  }
}
