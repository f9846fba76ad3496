import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { buildApp } from '../../src/app.js';
import { MemoryRateLimiter } from '../../src/http/rate-limit.js';
import { createOrganization } from '../../src/orgs/organizations.js';
import { openStorage, type Storage } from '../../src/storage/db.js';
import { createTestStorage, ENGINES, type TestStorage } from '../support/engines.js';
import { tempFile } from '../support/temp.js';

/** Two service instances (own connections, own batchers) on one database, as in scale-out. */
describe.each(ENGINES)('idempotency across two instances on one database (%s)', (engine) => {
  let primary: TestStorage;
  let secondary: Storage;
  let apps: FastifyInstance[];
  let apiKey: string;

  beforeAll(async () => {
    const file = engine === 'sqlite' ? tempFile('tally-idem-', 't.db') : undefined;
    primary = await createTestStorage(engine, { file });
    secondary = openStorage(primary.url, { schema: primary.schema });
    const config = loadConfig({ TALLY_LOG_LEVEL: 'silent' });
    // A fixed time, so the result does not depend on the date the suite runs on.
    const clock = new ManualClock('2026-11-20T12:00:00.000Z');
    apps = await Promise.all(
      [primary, secondary].map((storage) =>
        buildApp({ storage, config, clock, rateLimiter: new MemoryRateLimiter() }, { logger: false }),
      ),
    );
    const ctx = { db: primary.db, engine, clock, config, storage: primary };
    apiKey = (await createOrganization({ ctx, input: { name: 'Twins', plan: 'enterprise' } })).api_key;
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await secondary.close();
    await primary.destroy();
  });

  it('simultaneous first calls with one key through both instances create one event', async () => {
    for (const round of [1, 2, 3]) {
      const key = `twin-run-${round}`;
      const calls = Array.from({ length: 24 }, (_, i) =>
        (apps[i % 2] as FastifyInstance).inject({
          method: 'POST',
          url: '/v1/track',
          headers: { authorization: `Bearer ${apiKey}`, 'idempotency-key': key },
          payload: { agent_id: `agent-${round}`, task_type: 'legal_nda_review', outcome: 'success' },
        }),
      );
      const responses = await Promise.all(calls);
      expect(responses.map((r) => r.statusCode)).toEqual(Array(24).fill(201));
      expect(new Set(responses.map((r) => r.json().event_id)).size).toBe(1);
      const stored = await primary.db
        .selectFrom('events')
        .select('id')
        .where('idempotency_key', '=', key)
        .execute();
      expect(stored).toHaveLength(1);
    }
  });
});
