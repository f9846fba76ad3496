import { statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCheckpointer } from '../../src/storage/checkpointer.js';
import { migrateToLatest, openStorage, type Storage } from '../../src/storage/db.js';
import { tempFile } from '../support/temp.js';

/**
 * SQLite file databases checkpoint their WAL in a thread of their own (storage/db.ts), so that
 * no request waits behind a checkpoint run inside a commit. SQLite only: PostgreSQL checkpoints
 * in its own server processes.
 */
describe('the SQLite checkpoint thread', () => {
  let path: string;
  let storage: Storage;
  beforeAll(async () => {
    path = tempFile('tally-checkpoint-', 'db.sqlite');
    storage = openStorage(`sqlite:${path}`);
    await migrateToLatest(storage.db);
  });
  afterAll(async () => {
    await storage.close();
  });

  it('copies committed pages into the database file while the write connection only commits', async () => {
    const { rows } = await sql<{ wal_autocheckpoint: number }>`PRAGMA wal_autocheckpoint`.execute(storage.db);
    // The write connection's own checkpoint is only a backstop, far above what is written here.
    expect(rows[0]?.wal_autocheckpoint).toBe(10_000);
    const before = statSync(path).size;
    await storage.db.transaction().execute(async (trx) => {
      await sql`CREATE TABLE filler (id integer PRIMARY KEY, body blob NOT NULL)`.execute(trx);
      // ~4 MB: about 1,000 pages, in the WAL once committed.
      for (let i = 0; i < 1_000; i++) {
        await sql`INSERT INTO filler (body) VALUES (randomblob(4000))`.execute(trx);
      }
    });
    // The thread checkpoints every 250 ms; the file grows once it has.
    let size = statSync(path).size;
    for (let i = 0; i < 200 && size < before + 4_000_000; i++) {
      await sleep(50);
      size = statSync(path).size;
    }
    expect(size).toBeGreaterThanOrEqual(before + 4_000_000);
  });

  it('a thread that cannot open its file ends without an error reaching the process', async () => {
    const worker = startCheckpointer(`${path}.missing-directory/db.sqlite`);
    const code = await new Promise<number>((resolve) => worker.once('exit', resolve));
    // It died of its error (exit code 1), which went to the thread's own listener, not here.
    expect(code).toBe(1);
  });
});
