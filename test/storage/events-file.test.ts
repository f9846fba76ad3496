import { rmSync } from 'node:fs';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import type { OrgCtx } from '../../src/context.js';
import { createOrganization, getOrganization } from '../../src/orgs/organizations.js';
import { migrateToLatest, openStorage, type Db, type Storage } from '../../src/storage/db.js';
import { EVENTS_FILE_TABLES, moveToEventsFile } from '../../src/storage/events-file.js';
import { migrations } from '../../src/storage/migrations/index.js';
import { inSnapshot, readFoldState } from '../../src/storage/snapshot.js';
import { foldOnce } from '../../src/fold/pass.js';
import { tailState } from '../../src/fold/tail.js';
import { trackEvent } from '../../src/tracking/track.js';
import { createWebhook } from '../../src/webhooks/subscriptions.js';
import { createTestStorage, ENGINES } from '../support/engines.js';
import { tempFile } from '../support/temp.js';
import { expectFoldedOnce } from '../fold/folded-once.js';
import { TEST_SECRET_KEY } from '../support/secret-key.js';

/**
 * SQLite keeps what a track request writes (events, agents, idempotency keys) in a file of its
 * own, `<file>-events`, so that tracking commits while a folding pass writes the main file
 * (storage/events-file.ts). Databases from before the split are moved at start-up.
 */

/** A SQLite file laid out as before the split: every migration applied, every table in the main file. */
async function openUnsplit(file: string): Promise<Storage> {
  const storage = openStorage(`sqlite:${file}`);
  await sql`create table tally_migrations (name text primary key, applied_at bigint not null)`.execute(
    storage.db,
  );
  await storage.db.transaction().execute(async (trx) => {
    for (const name of Object.keys(migrations).sort()) {
      await migrations[name]?.up(trx);
      await sql`insert into tally_migrations (name, applied_at) values (${name}, 0)`.execute(trx);
    }
  });
  return storage;
}

async function tablesOf(db: Db, schema: 'main' | 'ingest'): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    SELECT name FROM ${sql.table(`${schema}.sqlite_master`)}
    WHERE type IN ('table', 'index') AND tbl_name IN (${sql.join([...EVENTS_FILE_TABLES])})
    ORDER BY name`.execute(db);
  return rows.map((r) => r.name);
}

async function rowsOf(db: Db, schema: 'main' | 'ingest', table: string): Promise<unknown[]> {
  const { rows } = await sql`SELECT * FROM ${sql.table(`${schema}.${table}`)} ORDER BY 1, 2`.execute(db);
  return rows;
}

/** A service context on `storage` (folding left to the test, on a fixed clock) and a new organisation's. */
async function orgOn(storage: Storage, env: Record<string, string> = {}) {
  const config = loadConfig({ TALLY_LOG_LEVEL: 'silent', TALLY_SECRET_KEY: TEST_SECRET_KEY, ...env });
  const ctx = {
    db: storage.db,
    storage,
    engine: storage.engine,
    clock: new ManualClock('2026-11-20T12:00:00.000Z'),
    config,
  };
  const created = await createOrganization({ ctx, input: { name: 'Split', plan: 'enterprise' } });
  const org: OrgCtx = { ...ctx, org: await getOrganization({ ctx, id: created.org.id }), actorKeyId: null };
  return { ctx, org };
}

/** Tracks a few events (two with idempotency keys) through the API's own path. */
async function trackSome(storage: Storage): Promise<void> {
  const { org } = await orgOn(storage);
  for (const [agent, key] of [
    ['a', 'k-1'],
    ['b', null],
    ['b', 'k-2'],
  ] as const) {
    await trackEvent({
      ctx: org,
      idempotencyKey: key,
      input: { agent_id: agent, task_type: 'support_ticket_reply', outcome: 'success' },
    });
  }
}

describe('the events file (sqlite)', () => {
  it('moves the tables of a database from before the split, with every row and index, at start-up', async () => {
    const file = tempFile('tally-split-', 'old.db');
    const storage = await openUnsplit(file);
    try {
      await trackSome(storage);
      const before = await tablesOf(storage.db, 'main');
      expect(before).toEqual(expect.arrayContaining([...EVENTS_FILE_TABLES, 'events_ingest_seq']));
      const rows = Object.fromEntries(
        await Promise.all(
          EVENTS_FILE_TABLES.map(async (t) => [t, await rowsOf(storage.db, 'main', t)] as const),
        ),
      );
      expect(rows.events).toHaveLength(3);
      expect(rows.idempotency_keys).toHaveLength(2);

      expect(await migrateToLatest(storage.db)).toEqual([]);
      expect(await tablesOf(storage.db, 'main')).toEqual([]);
      expect(await tablesOf(storage.db, 'ingest')).toEqual(before);
      for (const table of EVENTS_FILE_TABLES)
        expect(await rowsOf(storage.db, 'ingest', table)).toEqual(rows[table]);
    } finally {
      await storage.close();
    }
    // The events are in the events file on disk, read without the main file.
    const events = new SQLite(`${file}-events`, { readonly: true });
    expect(events.prepare('SELECT count(*) AS n FROM events').get()).toEqual({ n: 3 });
    events.close();
  });

  it('finishes a move that was cut off: a partial copy in the events file is replaced', async () => {
    const file = tempFile('tally-split-', 'cut.db');
    const storage = await openUnsplit(file);
    try {
      await trackSome(storage);
      const events = await rowsOf(storage.db, 'main', 'events');
      // A copy as an interrupted move may have left it: the table, one stale row, no index.
      await sql`CREATE TABLE ingest.events AS SELECT * FROM main.events LIMIT 1`.execute(storage.db);
      await sql`UPDATE ingest.events SET agent_id = 'stale'`.execute(storage.db);

      await moveToEventsFile(storage.db);
      expect(await tablesOf(storage.db, 'main')).toEqual([]);
      expect(await rowsOf(storage.db, 'ingest', 'events')).toEqual(events);
      expect(await tablesOf(storage.db, 'ingest')).toEqual(expect.arrayContaining(['events_ingest_seq']));
    } finally {
      await storage.close();
    }
  });

  it('moves once when two processes start together on a database from before the split', async () => {
    const file = tempFile('tally-split-', 'two.db');
    const old = await openUnsplit(file);
    await trackSome(old);
    const events = await rowsOf(old.db, 'main', 'events');
    await old.close();
    // Two connections of their own, as two processes have; a short busy wait, so that the one
    // waiting for the other's lock gives up fast and tries again (migrateToLatest).
    const a = openStorage(`sqlite:${file}`, { timeouts: { busyTimeoutMs: 20 } });
    const b = openStorage(`sqlite:${file}`, { timeouts: { busyTimeoutMs: 20 } });
    try {
      await Promise.all([migrateToLatest(a.db), migrateToLatest(b.db)]);
      expect(await tablesOf(a.db, 'main')).toEqual([]);
      expect(await rowsOf(b.db, 'ingest', 'events')).toEqual(events);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('keeps the tables in the events file from the first start, in memory too', async () => {
    const storage = await createTestStorage('sqlite');
    try {
      await trackSome(storage);
      expect(await tablesOf(storage.db, 'main')).toEqual([]);
      expect(await rowsOf(storage.db, 'ingest', 'events')).toHaveLength(3);
    } finally {
      await storage.destroy();
    }
  });

  it('refuses to start on a main file whose events file is gone', async () => {
    const file = tempFile('tally-split-', 'lost.db');
    const first = openStorage(`sqlite:${file}`);
    await migrateToLatest(first.db);
    await first.close();
    rmSync(`${file}-events`);
    rmSync(`${file}-events-wal`, { force: true });
    rmSync(`${file}-events-shm`, { force: true });
    const again = openStorage(`sqlite:${file}`);
    try {
      await expect(migrateToLatest(again.db)).rejects.toThrow(
        /holds no events: a SQLite database is two files/,
      );
    } finally {
      await again.close();
    }
  });

  it('tracks while a pass holds the main file: the pass folds what it read, the next one the rest, each once', async () => {
    const storage = await createTestStorage('sqlite', { file: tempFile('tally-split-', 'pass.db') });
    try {
      const { ctx, org } = await orgOn(storage, { TALLY_WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
      await createWebhook({
        ctx: org,
        input: { url: 'http://127.0.0.1:9/hook', event_types: ['event.created', 'agent.first_event'] },
      });
      const agents = ['a', 'b', 'c'];
      const track = (i: number) =>
        trackEvent({
          ctx: org,
          idempotencyKey: null,
          input: { agent_id: agents[i % 3] as string, task_type: 'support_ticket_reply', outcome: 'success' },
        });
      for (let i = 0; i < 5; i++) await track(i);
      const first = await foldOnce(ctx, {
        // The pass holds the main file's write lock and the write connection: tracking commits
        // to the events file meanwhile (with one file it would wait for the pass to end).
        beforeCommit: async () => {
          await Promise.all([5, 6, 7, 8, 9].map(track));
        },
      });
      expect(first.folded).toBe(5);
      expect((await tailState(storage.db, 'sqlite')).events).toBe(5);
      expect((await foldOnce(ctx)).folded).toBe(5);
      await expectFoldedOnce(storage.db, 'sqlite', agents);
    } finally {
      await storage.destroy();
    }
  });

  it('reads the main file before the events file in a snapshot, whichever the first query reads', async () => {
    const file = tempFile('tally-split-', 'order.db');
    const storage = openStorage(`sqlite:${file}`);
    await migrateToLatest(storage.db);
    const other = new SQLite(file);
    try {
      const before = (await readFoldState(storage.db)).watermark;
      const seen = await inSnapshot(storage.db, 'sqlite', async (db) => {
        // The first query reads the events file only; then the folding stage (here, another
        // connection) moves the watermark.
        await db.selectFrom('events').select('id').limit(1).execute();
        other.prepare('UPDATE fold_state SET watermark = watermark + 1000 WHERE id = 1').run();
        return (await readFoldState(db)).watermark;
      });
      // The snapshot's main file is from its start: the watermark from before the move, so
      // the tail it reads is the events file's whole tail after that watermark.
      expect(seen).toEqual(before);
      expect((await readFoldState(storage.db)).watermark).toEqual(Number(before) + 1000);
    } finally {
      other.close();
      await storage.close();
    }
  });
});

describe.each(ENGINES)('moving to the events file elsewhere (%s)', (engine) => {
  it('is done once: a second start moves nothing and the events stay readable', async () => {
    const storage = await createTestStorage(engine);
    try {
      await trackSome(storage);
      await moveToEventsFile(storage.db);
      expect(await migrateToLatest(storage.db)).toEqual([]);
      const n = await storage.db
        .selectFrom('events')
        .select(sql<number>`count(*)`.as('n'))
        .executeTakeFirstOrThrow();
      expect(Number(n.n)).toBe(3);
    } finally {
      await storage.destroy();
    }
  });
});
