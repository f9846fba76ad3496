// A child process that applies a restatement through the assumptions' apply path and stops where
// it is told, for a test to kill it: STOP_AT=staged after the first staged batch, STOP_AT=publish
// inside the publishing transaction.
import { restate } from '../../src/assumptions/restatements.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { getOrganization } from '../../src/orgs/organization-record.js';
import { openStorage } from '../../src/storage/db.js';

const env = process.env;
const storage = openStorage(env.TALLY_DATABASE_URL ?? '');
const clock = new ManualClock(env.AT ?? '2026-11-20T12:00:00.000Z');
const config = loadConfig(env);
const base = { db: storage.db, engine: storage.engine, clock, config, storage };
const org = await getOrganization({ ctx: base, id: env.ORG_ID ?? '' });
const hang = () => new Promise<never>(() => undefined);
await restate({
  ctx: { ...base, org, actorKeyId: null },
  input: JSON.parse(env.CHANGE ?? '{}') as Parameters<typeof restate>[0]['input'],
  hooks: {
    wait: true,
    batch: 2,
    afterBatch: async () => {
      if (env.STOP_AT !== 'staged') return;
      process.stdout.write('staged\n');
      await hang();
    },
    beforePublish: async () => {
      if (env.STOP_AT !== 'publish') return;
      process.stdout.write('publishing\n');
      await hang();
    },
  },
});
process.stdout.write('applied\n');
await storage.close();
