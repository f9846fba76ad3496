/**
 * The server half of `npm run bench:webhooks`: Tally on SQLite with TALLY_ROLE=all (API and
 * delivery worker in one process), on a free loopback port. Prints one JSON line
 * `{port, apiKey}` once ready.
 */
import { loadConfig } from '../src/config.js';
import { createOrganization } from '../src/orgs/organizations.js';
import { startService } from '../src/service.js';
import { systemClock } from '../src/clock.js';

const file = process.argv[2];
if (!file) throw new Error('usage: webhooks-server.ts <sqlite file>');
const config = loadConfig({
  TALLY_DATABASE_URL: `sqlite:${file}`,
  TALLY_PORT: '0',
  TALLY_LOG_LEVEL: 'error',
  TALLY_ROLE: process.env.BENCH_ROLE ?? 'all',
  TALLY_WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
});
// Keep the bootstrap key's banner off stdout: the parent reads one JSON line from it.
const write = process.stdout.write.bind(process.stdout);
process.stdout.write = (() => true) as typeof process.stdout.write;
const service = await startService(config, systemClock);
process.stdout.write = write;
const address = service.app?.server.address();
const port = typeof address === 'object' && address ? address.port : 0;
const { api_key: apiKey } = await createOrganization({
  ctx: { db: service.storage.db, engine: service.storage.engine, clock: systemClock, config },
  input: { name: 'bench', plan: 'enterprise' },
});
process.stdout.write(`${JSON.stringify({ port, apiKey })}\n`);
process.once('SIGTERM', () => void service.stop().then(() => process.exit(0)));
