/**
 * The restatement part of `npm run bench:ingest` (BENCH_RESTATE=1): on a fresh database of each
 * engine, BENCH_RESTATE_EVENTS events (default 100,000) of one organisation are written straight
 * into the events table, 500 per transaction (the reference, measured in the same run: the rate
 * at which the engine takes the rows at all), then a restatement that reprices every one of them
 * (a baseline of 8 minutes becomes 10) is applied (src/ledger/restatement.ts): staged in batches
 * of 5,000, then published in one transaction. Prints the adjusted events/s of the whole
 * application and the seconds of its publication.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { ManualClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { applyRestatement } from '../src/ledger/restatement.js';
import { getOrganization } from '../src/orgs/organization-record.js';
import { createOrganization } from '../src/orgs/organizations.js';
import { migrateToLatest, openStorage, type Storage } from '../src/storage/db.js';
import { insertEachRow, insertRows } from '../src/storage/insert-rows.js';
import type { EventRow } from '../src/storage/schema.js';
import { EVENT_COLUMNS } from '../src/tracking/event-writes.js';

const PG_URL = process.env.TALLY_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

async function freshStorage(
  engine: 'sqlite' | 'postgres',
): Promise<{ storage: Storage; drop(): Promise<void> }> {
  if (engine === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'tally-bench-restate-'));
    const storage = openStorage(`sqlite:${join(dir, 'restate.db')}`);
    await migrateToLatest(storage.db);
    return { storage, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const schema = `bench_restate_${process.pid}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
  await admin.end();
  const storage = openStorage(PG_URL, { schema, poolSize: 4 });
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

export async function benchRestatement(engine: 'sqlite' | 'postgres', total: number) {
  const { storage, drop } = await freshStorage(engine);
  try {
    const now = Date.now();
    const clock = new ManualClock(new Date(now));
    const config = loadConfig({ TALLY_LOG_LEVEL: 'silent' });
    const base = { db: storage.db, engine, clock, config, storage };
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
    let publishFrom = 0;
    const t0 = performance.now();
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
        afterBatch: (seen) => {
          if (seen === total) publishFrom = performance.now();
        },
      },
    );
    const seconds = (performance.now() - t0) / 1000;
    const publish = publishFrom === 0 ? NaN : (performance.now() - publishFrom) / 1000;
    return {
      written: total / written,
      adjusted: view.events_adjusted,
      rate: view.events_adjusted / seconds,
      seconds,
      publish,
    };
  } finally {
    await storage.close();
    await drop();
  }
}
