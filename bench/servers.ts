/**
 * The servers the benchmarks load, each run in its own process so the load generator does not
 * share their event loop: `tsx bench/servers.ts reference|sqlite|postgres PORT`.
 * Prints one JSON line `{"ready": true, "apiKey": …}` once listening. Tally runs its folding
 * stage in the same process, as `tally serve` does (on SQLite, its passes in a thread of their
 * own; BENCH_NO_THREAD=1 folds on the event loop instead, for comparison).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import pg from 'pg';
import { systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { DEFAULT_PLANS } from '../src/billing/plans.js';
import { buildApp } from '../src/app.js';
import { createRateLimiter } from '../src/service.js';
import { createOrganization } from '../src/orgs/organizations.js';
import { migrateToLatest, openStorage } from '../src/storage/db.js';
import { onTrackCommitted } from '../src/tracking/track.js';
import { FoldStage } from '../src/fold/stage.js';
import { foldThreadFor } from '../src/fold/thread.js';

const [kind = 'reference', portText = '0'] = process.argv.slice(2);
const port = Number(portText);

async function reference() {
  const app = Fastify({ logger: false });
  app.post('/v1/track', async (_request, reply) => reply.code(201).send({ ok: true, id: 'evt_reference' }));
  await app.listen({ host: '127.0.0.1', port });
  return { apiKey: '' };
}

async function tally(engine: 'sqlite' | 'postgres') {
  let url: string;
  let schema: string | undefined;
  let dir: string | undefined;
  if (engine === 'sqlite') {
    dir = mkdtempSync(join(tmpdir(), 'tally-bench-'));
    url = `sqlite:${join(dir, 'tally.db')}`;
  } else {
    url = process.env.TALLY_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
    schema = `bench_${process.pid}`;
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
    await client.end();
  }
  // The benchmark measures throughput, not the per-key rate limit: lift the Enterprise rate.
  const config = {
    ...loadConfig({
      TALLY_DATABASE_URL: url,
      TALLY_LOG_LEVEL: 'silent',
      // Events per folding pass (README "Ingest behind a watermark"), to measure other sizes.
      TALLY_FOLD_BATCH: process.env.TALLY_FOLD_BATCH,
      // How far behind the stage may be before batches wait for it (fold/ingest-gate.ts).
      TALLY_INGEST_MAX_LAG_SECONDS: process.env.TALLY_INGEST_MAX_LAG_SECONDS,
    }),
    plans: {
      ...DEFAULT_PLANS,
      enterprise: { ...DEFAULT_PLANS.enterprise, track_rate_per_second: 10_000_000 },
    },
  };
  const storage = openStorage(url, { schema });
  await migrateToLatest(storage.db);
  const ctx = { db: storage.db, engine: storage.engine, clock: systemClock, config, storage };
  const { api_key: apiKey } = await createOrganization({ ctx, input: { name: 'bench', plan: 'enterprise' } });
  // As in `tally serve`: the folding stage runs beside the API (DESIGN §11), its passes in a
  // thread of their own on a SQLite file, and tracking wakes it.
  const thread = process.env.BENCH_NO_THREAD === '1' ? null : foldThreadFor(ctx, url, storage.db);
  const fold = new FoldStage(ctx, thread ? { runPass: (pass) => thread.run(pass) } : {});
  onTrackCommitted({ db: storage.db, storage }, () => fold.wake());
  const app = await buildApp(
    { storage, config, clock: systemClock, rateLimiter: createRateLimiter(config), fold },
    { logger: false },
  );
  await app.listen({ host: '127.0.0.1', port });
  await thread?.start();
  fold.start();
  const cleanup = async () => {
    await app.close();
    await fold.stop();
    await thread?.close();
    await storage.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
    if (schema) {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await client.end();
    }
    process.exit(0);
  };
  process.once('SIGTERM', () => void cleanup());
  return { apiKey };
}

const started =
  kind === 'reference' ? await reference() : await tally(kind === 'postgres' ? 'postgres' : 'sqlite');
process.stdout.write(`${JSON.stringify({ ready: true, ...started })}\n`);
