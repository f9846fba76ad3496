import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { MemoryRateLimiter } from '../../src/http/rate-limit.js';
import { buildApp } from '../../src/app.js';
import { createOrganization } from '../../src/orgs/organizations.js';
import { migrateToLatest, openStorage, type Storage } from '../../src/storage/db.js';
import { settled, TIMED_OUT } from '../support/settled.js';
import { tempFile } from '../support/temp.js';
import { cookieOf, ORIGIN } from './support.js';

/**
 * On a SQLite file a folding pass holds the write connection for up to seconds
 * (fold/thread.ts). Pages and API reads read on the read connection, so they answer
 * meanwhile (SQLite only: PostgreSQL has a pool, and a database in memory has one connection).
 */
describe('reads while the write connection is held (sqlite file)', () => {
  let storage: Storage;
  let app: FastifyInstance;
  let apiKey: string;
  let cookie: string;

  beforeAll(async () => {
    storage = openStorage(`sqlite:${tempFile('tally-held-', 'db.sqlite')}`);
    await migrateToLatest(storage.db);
    const config = loadConfig({ TALLY_LOG_LEVEL: 'silent' });
    const clock = new ManualClock('2026-11-20T12:00:00.000Z');
    const ctx = { db: storage.db, engine: storage.engine, clock, config, storage };
    ({ api_key: apiKey } = await createOrganization({ ctx, input: { name: 'Held', plan: 'enterprise' } }));
    app = await buildApp({ storage, config, clock, rateLimiter: new MemoryRateLimiter() }, { logger: false });
    const track = await app.inject({
      method: 'POST',
      url: '/v1/track',
      headers: { authorization: `Bearer ${apiKey}` },
      payload: { agent_id: 'bot-1', task_type: 'support_ticket_reply', outcome: 'success' },
    });
    expect(track.statusCode).toBe(201);
    const signIn = await app.inject({
      method: 'POST',
      url: '/dashboard/login',
      headers: { origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ api_key: apiKey }).toString(),
    });
    expect(signIn.statusCode).toBe(303);
    cookie = cookieOf(signIn);
    // The first page takes the sign-in's notice, a write; the pages below write nothing.
    expect((await app.inject({ method: 'GET', url: '/dashboard', headers: { cookie } })).statusCode).toBe(
      200,
    );
  });
  afterAll(async () => {
    await app.close();
    await storage.close();
  });

  const PAGES = [
    '/dashboard',
    '/dashboard/reports',
    '/dashboard/events',
    '/dashboard/task-types',
    '/dashboard/webhooks',
    '/dashboard/usage',
    '/dashboard/settings',
  ];
  const API = [
    '/v1/task-types',
    '/v1/events',
    '/v1/webhooks',
    '/v1/settings',
    '/v1/audit-log',
    '/v1/reports/usage',
    '/v1/reports/time-saved?period=24h&group_by=agent',
  ];

  it('answers every page and API read while a pass holds the write connection', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const holder = storage.db.connection().execute(async () => {
      entered();
      await held;
    });
    await inside;
    try {
      for (const url of PAGES) {
        const res = await settled(app.inject({ method: 'GET', url, headers: { cookie } }));
        expect(
          res === TIMED_OUT ? `${url} waited for the write connection` : `${url} ${res.statusCode}`,
        ).toBe(`${url} 200`);
      }
      for (const url of API) {
        const res = await settled(
          app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${apiKey}` } }),
        );
        expect(
          res === TIMED_OUT ? `${url} waited for the write connection` : `${url} ${res.statusCode}`,
        ).toBe(`${url} 200`);
      }
    } finally {
      release();
      await holder;
    }
  });

  it('exports through the write connection, whose temporary table the read connection could not create', async () => {
    const api = await app.inject({
      method: 'GET',
      url: '/v1/reports/export?group_by=agent&period=24h',
      headers: { authorization: `Bearer ${apiKey}` },
    });
    expect(api.statusCode).toBe(200);
    expect(api.body).toContain('bot-1');
    const page = await app.inject({
      method: 'GET',
      url: '/dashboard/reports/export?period=24h',
      headers: { cookie },
    });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('bot-1');
  });
});
