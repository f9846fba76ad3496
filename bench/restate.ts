/**
 * The restatement part of `npm run bench:ingest` (BENCH_RESTATE=1): on a fresh database of each
 * engine, BENCH_RESTATE_EVENTS events (default 100,000) of one organisation are written straight
 * into the events table, 500 per transaction (the reference, measured in the same run: the rate
 * at which the engine takes the rows at all), then a restatement that reprices every one of them
 * (a baseline of 8 minutes becomes 10) is applied (src/ledger/restatement.ts): staged in batches
 * of 5,000, then published in one transaction (in chunks of rows, src/ledger/restatement.ts). Prints the adjusted events/s of the whole
 * application and the seconds of its publication (the transaction: what holds the write lock)
 * and of the removal of the staged rows after it.
 *
 * Tracking goes on meanwhile, as in `tally serve`, where POST /v1/restatements applies a large
 * restatement in the background of the API process: the organisation's events go through
 * POST /v1/track of a Tally HTTP server (src/app.ts, with its folding stage, in a thread on
 * SQLite) in this same process, BENCH_RESTATE_TRACK_RATE requests a second (default 100) on a
 * fixed schedule, each timed from when it was due (keepTracking). Prints the tracking latency
 * p50 / p99 / max and the failed requests due in a reference window before the restatement (3 s, once the
 * folding stage has folded the seeded events), while it stages, while it publishes, while the
 * staged rows are removed after it, and in a window of 3 s after it (the folding stage takes up
 * the entries). The load generator shares the event
 * loop with the server and the restatement: on SQLite, whose statements run synchronously on it,
 * a long statement holds them all, which is what a request to that process waits for.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { Pool } from 'undici';
import { buildApp } from '../src/app.js';
import { DEFAULT_PLANS } from '../src/billing/plans.js';
import { systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { FoldStage } from '../src/fold/stage.js';
import { foldLag, readTail } from '../src/fold/tail.js';
import { foldThreadFor } from '../src/fold/thread.js';
import { applyRestatement } from '../src/ledger/restatement.js';
import { getOrganization } from '../src/orgs/organization-record.js';
import { createOrganization } from '../src/orgs/organizations.js';
import { createRateLimiter } from '../src/service.js';
import { migrateToLatest, openStorage, type Storage } from '../src/storage/db.js';
import { insertEachRow, insertRows } from '../src/storage/insert-rows.js';
import type { EventRow } from '../src/storage/schema.js';
import { EVENT_COLUMNS } from '../src/tracking/event-writes.js';
import { onTrackCommitted } from '../src/tracking/track.js';
import { benchEvent, rng } from './backfill.js';

const PG_URL = process.env.TALLY_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

async function freshStorage(
  engine: 'sqlite' | 'postgres',
): Promise<{ storage: Storage; url: string; drop(): Promise<void> }> {
  if (engine === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'tally-bench-restate-'));
    const url = `sqlite:${join(dir, 'restate.db')}`;
    const storage = openStorage(url);
    await migrateToLatest(storage.db);
    return { storage, url, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const schema = `bench_restate_${process.pid}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
  await admin.end();
  const storage = openStorage(PG_URL, { schema });
  await migrateToLatest(storage.db);
  return {
    storage,
    url: PG_URL,
    drop: async () => {
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await client.end();
    },
  };
}

function row(orgId: string, i: number, now: number): Omit<EventRow, 'ingest_seq'> {
  return {
    id: `evt_${now.toString(36)}${String(i).padStart(16, '0')}`,
    org_id: orgId,
    agent_id: `agent-${i % 200}`,
    task_type: `type-${i % 50}`,
    outcome: 'success',
    client_id: `client-${i % 20}`,
    resolved_baseline_minutes: 8,
    resolved_baseline_source: 'builtin',
    resolved_hourly_rate_micros: 50_000_000,
    currency: 'EUR',
    agent_duration_seconds: null,
    hours_saved_micros: 133_333,
    cost_saved_micros: 6_666_650,
    agent_cost_micros: 12_300,
    resolved_cost_source: 'provided',
    model: null,
    tokens_in: null,
    tokens_out: null,
    metadata: null,
    audit_sample: null,
    pricing: null,
    occurred_at: now - (i % 89) * 86_400_000,
    received_at: now,
    idempotency_key: null,
  };
}

const RATE = Number(process.env.BENCH_RESTATE_TRACK_RATE ?? 100);
const WINDOW_MS = 3_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One tracking request: when it was due and answered (performance.now()), and whether it failed. */
interface Sample {
  from: number;
  to: number;
  failed: boolean;
}

/** Latency p50 / p99 / max (ms), requests and failures of the samples. */
export interface Latency {
  p50: number;
  p99: number;
  max: number;
  n: number;
  failed: number;
}

function latencyOf(samples: readonly Sample[]): Latency {
  const ms = samples.map((s) => s.to - s.from).sort((a, b) => a - b);
  const q = (p: number) => ms[Math.min(ms.length - 1, Math.floor(p * ms.length))] ?? NaN;
  return {
    p50: q(0.5),
    p99: q(0.99),
    max: ms.at(-1) ?? NaN,
    n: ms.length,
    failed: samples.filter((s) => s.failed).length,
  };
}

/**
 * Sends `request` at `rate` a second until `stop()`, each request due at its time on a fixed
 * schedule and sent then whether or not the ones before it were answered; its latency counts
 * from when it was due. A stalled event loop sends nothing meanwhile, and the requests it owed
 * count the stall, as a client in another process would see it.
 */
function keepSending(
  port: number,
  apiKey: string,
  rate: number,
  request: () => { method: 'POST' | 'PATCH'; path: string; body: string; ok: number },
) {
  const api = new Pool(`http://127.0.0.1:${port}`, { connections: 32 });
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` };
  const samples: Sample[] = [];
  const sent: Array<Promise<void>> = [];
  const send = async (due: number) => {
    const { ok, ...options } = request();
    let failed = true;
    try {
      const res = await api.request({ ...options, headers });
      await res.body.arrayBuffer();
      failed = res.statusCode !== ok;
    } catch {
      failed = true;
    }
    samples.push({ from: due, to: performance.now(), failed });
  };
  let running = true;
  const every = 1000 / rate;
  const scheduler = (async () => {
    let due = performance.now();
    while (running) {
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      sent.push(send(due));
      due += every;
    }
  })();
  return {
    samples,
    async stop() {
      running = false;
      await scheduler;
      await Promise.all(sent);
      await api.close();
    },
  };
}

/** POST /v1/track at RATE a second (keepSending). */
function keepTracking(port: number, apiKey: string) {
  const rand = rng(7);
  return keepSending(port, apiKey, RATE, () => ({
    method: 'POST',
    path: '/v1/track',
    body: JSON.stringify(benchEvent(rand, Date.now())),
    ok: 201,
  }));
}

/**
 * A write to the main file, PATCH /v1/settings, 5 times a second (keepSending): on SQLite it
 * waits for a folding pass under way, which holds the main file's write lock.
 */
function keepWriting(port: number, apiKey: string) {
  return keepSending(port, apiKey, 5, () => ({
    method: 'PATCH',
    path: '/v1/settings',
    body: JSON.stringify({ name: 'bench' }),
    ok: 200,
  }));
}

export async function benchRestatement(engine: 'sqlite' | 'postgres', total: number) {
  const { storage, url, drop } = await freshStorage(engine);
  try {
    const now = Date.now();
    // The benchmark measures the restatement beside tracking, not the per-key rate limit.
    const config = {
      ...loadConfig({ TALLY_LOG_LEVEL: 'silent' }),
      plans: {
        ...DEFAULT_PLANS,
        enterprise: { ...DEFAULT_PLANS.enterprise, track_rate_per_second: 10_000_000 },
      },
    };
    const base = { db: storage.db, engine, clock: systemClock, config, storage };
    const created = await createOrganization({ ctx: base, input: { name: 'Bench', plan: 'enterprise' } });
    const org = await getOrganization({ ctx: base, id: created.org.id });
    const started = performance.now();
    for (let i = 0; i < total; i += 500) {
      const rows: Array<Omit<EventRow, 'ingest_seq'>> = [];
      for (let j = i; j < Math.min(total, i + 500); j++) rows.push(row(org.id, j, now));
      await storage.db.transaction().execute(async (trx) => {
        if (engine === 'sqlite') await insertEachRow(trx, 'events', EVENT_COLUMNS, rows);
        else await insertRows(trx, 'events', EVENT_COLUMNS, rows).execute();
      });
    }
    const written = (performance.now() - started) / 1000;

    // The API process as `tally serve` runs it: the folding stage beside it, woken by tracking.
    const thread = foldThreadFor(base, url, storage.db);
    const fold = new FoldStage(base, thread ? { runPass: (pass) => thread.run(pass) } : {});
    onTrackCommitted({ db: storage.db, storage }, () => fold.wake());
    const app = await buildApp(
      { storage, config, clock: systemClock, rateLimiter: createRateLimiter(config), fold },
      { logger: false },
    );
    await app.listen({ host: '127.0.0.1', port: 0 });
    await thread?.start();
    fold.start();
    const address = app.server.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    try {
      // The seeded events folded first: the restatement meets a service that has caught up.
      const folded = performance.now();
      while ((await foldLag(storage.reader ?? storage.db, engine, Date.now())).lagMs > 0) {
        if (performance.now() - folded > 1_800_000) throw new Error('the folding stage did not catch up');
        await sleep(500);
      }
      const tracking = keepTracking(port, created.api_key);
      const writing = keepWriting(port, created.api_key);
      // A second to warm up, then the reference window.
      await sleep(1000);
      const referenceFrom = performance.now();
      await sleep(WINDOW_MS);
      const t0 = performance.now();
      let publishFrom = NaN;
      let committedAt = NaN;
      const view = await applyRestatement(
        { ...base, org, actorKeyId: null },
        {
          restatementId: 'rst_bench',
          orgId: org.id,
          reason: 'bench',
          reprice: (event) =>
            Number(event.resolved_baseline_minutes) === 8
              ? { hoursSavedMicros: 166_667, costSavedMicros: 8_333_350, baselineMinutes: 10 }
              : null,
          // The last batch's end is the publication's start.
          afterBatch: () => {
            publishFrom = performance.now();
          },
          afterPublish: () => {
            committedAt = performance.now();
          },
        },
      );
      const t1 = performance.now();
      // Until the folding stage has folded the entries too: the adjustments' tail is empty (the
      // events' is not while tracking goes on).
      while ((await readTail(storage.reader ?? storage.db, engine, false)).headRecordedAt !== null) {
        if (performance.now() - t1 > 1_800_000) throw new Error('the folding stage did not fold the entries');
        await sleep(100);
      }
      const foldedAt = performance.now();
      await sleep(WINDOW_MS);
      await Promise.all([tracking.stop(), writing.stop()]);
      const end = performance.now();
      // Each request in the window it was due in.
      const windows: Array<[string, number, number]> = [
        ['reference', referenceFrom, t0],
        ['staging', t0, publishFrom],
        ['publication', publishFrom, committedAt],
        ['cleanup', committedAt, t1],
        ['folding', t1, foldedAt],
        ['after', foldedAt, end],
      ];
      const phasesOf = (samples: readonly Sample[]) => {
        const phases = new Map<string, Sample[]>(windows.map(([name]) => [name, []]));
        for (const s of samples) {
          const hit = windows.find(([, from, to]) => s.from >= from && s.from < to);
          if (hit) phases.get(hit[0])?.push(s);
        }
        return Object.fromEntries(windows.map(([name]) => [name, latencyOf(phases.get(name) ?? [])]));
      };
      return {
        written: total / written,
        adjusted: view.events_adjusted,
        rate: view.events_adjusted / ((t1 - t0) / 1000),
        seconds: (t1 - t0) / 1000,
        publish: (committedAt - publishFrom) / 1000,
        cleanup: (t1 - committedAt) / 1000,
        folding: (foldedAt - t1) / 1000,
        tracking: phasesOf(tracking.samples),
        writes: phasesOf(writing.samples),
      };
    } finally {
      await app.close();
      await fold.stop();
      await thread?.close();
    }
  } finally {
    await storage.close();
    await drop();
  }
}
