import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { DeliveryWorker } from '../../src/webhooks/worker.js';
import { createTestStorage } from '../support/engines.js';

describe('the worker loop while the database is away', () => {
  it('keeps running, backs off instead of failing every poll, and stops at once', async () => {
    const storage = await createTestStorage('sqlite');
    const config = loadConfig({ TALLY_LOG_LEVEL: 'silent' });
    const clock = new ManualClock('2026-11-20T12:00:00.000Z');
    // Every query now fails, as they do while the database is unreachable.
    await storage.destroy();
    const errors: string[] = [];
    const worker = new DeliveryWorker(
      { db: storage.db, engine: 'sqlite', clock, config, storage },
      { mailTransport: null, idlePollMs: 50, onError: (_error, what) => errors.push(what) },
    );
    worker.start();
    await sleep(1_600);
    // At a fixed 50 ms poll this would be about 30 failed passes; backing off (100, 200, 400,
    // 800 ms…) it is a handful, and the loop is still alive.
    expect(errors.length).toBeGreaterThanOrEqual(2);
    expect(errors.length).toBeLessThanOrEqual(8);
    const stopping = performance.now();
    await worker.stop();
    expect(performance.now() - stopping).toBeLessThan(1_000);
  });
});
