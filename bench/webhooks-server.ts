/**
 * The server half of `npm run bench:webhooks`: Tally with TALLY_ROLE=all (API, folding stage and
 * delivery worker in one process, as `tally serve`), on a free loopback port, over the database
 * URL it is given. Creates two Enterprise organisations, `bench` (the live events) and `backfill`
 * (BENCH_BACKFILL), with the per-second track rate lifted: the bench measures delivery, not the
 * rate limit. Prints one JSON line `{port, apiKey, backfillKey}` once ready.
 */
import { DEFAULT_PLANS } from '../src/billing/plans.js';
import { loadConfig } from '../src/config.js';
import { newSecretKey } from '../src/crypto/secret-box.js';
import { createOrganization } from '../src/orgs/organizations.js';
import { startService } from '../src/service.js';
import { systemClock } from '../src/clock.js';

const url = process.argv[2];
if (!url) throw new Error('usage: webhooks-server.ts <database url>');
const base = loadConfig({
  TALLY_DATABASE_URL: url,
  TALLY_PORT: '0',
  TALLY_LOG_LEVEL: 'error',
  TALLY_ROLE: process.env.BENCH_ROLE ?? 'all',
  TALLY_WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
  // How far behind the stage may be before batches wait for it (fold/ingest-gate.ts).
  TALLY_INGEST_MAX_LAG_SECONDS: process.env.TALLY_INGEST_MAX_LAG_SECONDS,
  // The run's webhooks are created and delivered by this process: a key of its own will do.
  TALLY_SECRET_KEY: process.env.TALLY_SECRET_KEY ?? newSecretKey(),
});
const config = {
  ...base,
  plans: { ...base.plans, enterprise: { ...DEFAULT_PLANS.enterprise, track_rate_per_second: 10_000_000 } },
};
// Keep the bootstrap key's banner off stdout: the parent reads one JSON line from it.
const write = process.stdout.write.bind(process.stdout);
process.stdout.write = (() => true) as typeof process.stdout.write;
const service = await startService(config, systemClock);
process.stdout.write = write;
const address = service.app?.server.address();
const port = typeof address === 'object' && address ? address.port : 0;
const ctx = {
  db: service.storage.db,
  engine: service.storage.engine,
  clock: systemClock,
  config,
  storage: service.storage,
};
const { api_key: apiKey } = await createOrganization({ ctx, input: { name: 'bench', plan: 'enterprise' } });
const { api_key: backfillKey } = await createOrganization({
  ctx,
  input: { name: 'backfill', plan: 'enterprise' },
});
process.stdout.write(`${JSON.stringify({ port, apiKey, backfillKey })}\n`);
process.once('SIGTERM', () => void service.stop().then(() => process.exit(0)));
