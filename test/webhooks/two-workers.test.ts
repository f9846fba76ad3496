import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStorage, type Storage } from '../../src/storage/db.js';
import { DeliveryWorker } from '../../src/webhooks/worker.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { ALLOW_PRIVATE, subscribe, track } from './helpers.js';
import { startReceiver, type Receiver } from './receiver.js';

// SQLite serialises every writer on one connection, so concurrent claiming is a PostgreSQL
// question only.
describe.skipIf(!ENGINES.includes('postgres'))(
  'two workers on one PostgreSQL (SKIP LOCKED; PostgreSQL only)',
  () => {
    let h: Harness;
    let second: Storage;
    let r: Receiver;
    beforeAll(async () => {
      r = await startReceiver();
      h = await createHarness('postgres', { env: ALLOW_PRIVATE });
      second = openStorage(h.storage.url, { schema: h.storage.schema });
    });
    afterAll(async () => {
      await r.close();
      await second.close();
      await h.close();
    });

    it('never delivers the same attempt twice', async () => {
      await subscribe(h, r.url);
      await subscribe(h, r.url);
      const events = 60;
      for (let i = 0; i < events; i++) await track(h, `agent-${i % 7}`);
      const a = new DeliveryWorker(h.ctx, { mailTransport: null, concurrency: 8, perWebhook: 8 });
      const b = new DeliveryWorker(
        { ...h.ctx, db: second.db },
        { mailTransport: null, concurrency: 8, perWebhook: 8 },
      );
      let sentA = 0;
      let sentB = 0;
      for (let round = 0; round < 40; round++) {
        const [na, nb] = await Promise.all([a.runOnce(), b.runOnce()]);
        sentA += na;
        sentB += nb;
        if (na + nb === 0) break;
      }
      await Promise.all([a.stop(), b.stop()]);
      expect(sentA + sentB).toBe(events * 2);
      expect(sentA).toBeGreaterThan(0);
      expect(sentB).toBeGreaterThan(0);
      expect(r.received).toHaveLength(events * 2);
      expect(r.received.every((m) => m.headers['x-tally-attempt'] === '1')).toBe(true);
      // Each message goes to each of the two webhooks exactly once.
      const perMessage = new Map<string, number>();
      for (const m of r.received) {
        const id = String(m.headers['x-tally-message-id']);
        perMessage.set(id, (perMessage.get(id) ?? 0) + 1);
      }
      expect(perMessage.size).toBe(events);
      expect([...perMessage.values()].every((n) => n === 2)).toBe(true);
      const attempts = await h.ctx.db
        .selectFrom('webhook_attempts')
        .select(['delivery_id', 'attempt'])
        .execute();
      expect(attempts).toHaveLength(events * 2);
      expect(new Set(attempts.map((x) => x.delivery_id)).size).toBe(events * 2);
      // 120 real deliveries by two workers: slow on a loaded 2-core machine, not wrong.
    }, 120_000);
  },
);
