import SQLite from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { MemoryRateLimiter } from '../../src/http/rate-limit.js';
import { buildApp } from '../../src/app.js';
import { createOrganization } from '../../src/orgs/organizations.js';
import { migrateToLatest, openStorage } from '../../src/storage/db.js';
import { tempFile } from '../support/temp.js';

const TRACK = { agent_id: 'bot-1', task_type: 'support_ticket_reply', outcome: 'success' };

/** Tally on a fresh SQLite file whose writes wait 100 ms for another process's lock. */
async function start() {
  const file = tempFile('tally-busy-', 't.db');
  const config = loadConfig({ TALLY_LOG_LEVEL: 'silent', TALLY_SQLITE_BUSY_TIMEOUT_MS: '100' });
  const storage = openStorage(`sqlite:${file}`, { timeouts: config.database });
  await migrateToLatest(storage.db);
  const clock = new ManualClock('2026-11-20T12:00:00.000Z');
  const ctx = { db: storage.db, engine: storage.engine, clock, config, storage };
  const { api_key: apiKey } = await createOrganization({ ctx, input: { name: 'Acme', plan: 'pro' } });
  const app = await buildApp(
    { storage, config, clock, rateLimiter: new MemoryRateLimiter() },
    { logger: false },
  );
  return { file, storage, app, apiKey };
}

describe('a SQLite database locked by another process', () => {
  it("answers 503 with Retry-After, in bounded time, while another process holds the events file's write lock; 201 once it is gone", async () => {
    const { file, storage, app, apiKey } = await start();
    // Another process holds the write lock of the events file, which a track request writes
    // (storage/events-file.ts): an exclusive transaction it does not end.
    const other = new SQLite(`${file}-events`);
    other.pragma('busy_timeout = 5000');
    const track = () =>
      app.inject({
        method: 'POST',
        url: '/v1/track',
        headers: { authorization: `Bearer ${apiKey}` },
        payload: TRACK,
      });
    try {
      // Warm: the first request compiles the route's schemas.
      expect((await track()).statusCode).toBe(201);
      other.exec('BEGIN EXCLUSIVE');
      const started = performance.now();
      const locked = await track();
      expect(locked.statusCode).toBe(503);
      expect(locked.json()).toMatchObject({ error: { code: 'service_unavailable' } });
      expect(locked.headers['retry-after']).toBeDefined();
      // Bounded: a few busy waits of TALLY_SQLITE_BUSY_TIMEOUT_MS at most (the batcher retries a
      // busy commit), never an unbounded wait.
      expect(performance.now() - started).toBeLessThan(10_000);

      other.exec('ROLLBACK');
      const free = await track();
      expect(free.statusCode).toBe(201);
    } finally {
      other.close();
      await app.close();
      await storage.close();
    }
  });

  it("commits a track request while another process holds the main file's write lock, as a folding pass does", async () => {
    const { file, storage, app, apiKey } = await start();
    const other = new SQLite(file);
    try {
      other.exec('BEGIN IMMEDIATE');
      other.exec('UPDATE fold_state SET folded_at = folded_at');
      const response = await app.inject({
        method: 'POST',
        url: '/v1/track',
        headers: { authorization: `Bearer ${apiKey}` },
        payload: TRACK,
      });
      expect(response.statusCode).toBe(201);
      // Committed: another connection reads it while the main file is still locked.
      const reader = new SQLite(`${file}-events`, { readonly: true });
      const stored = reader.prepare('SELECT agent_id FROM events WHERE id = ?').get(response.json().event_id);
      reader.close();
      expect(stored).toEqual({ agent_id: 'bot-1' });
      other.exec('ROLLBACK');
    } finally {
      other.close();
      await app.close();
      await storage.close();
    }
  });
});
