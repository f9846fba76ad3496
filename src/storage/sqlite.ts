import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import type { DatabaseTimeouts } from '../config.js';
import { BACKSTOP_CHECKPOINT_PAGES, startCheckpointer } from './checkpointer.js';
import { attachEventsFile } from './events-file.js';
import { ARRAY_ROWS } from './query-modes.js';
import type { Database } from './schema.js';
import type { DbOrTrx, Storage } from './types.js';

/**
 * Opens a SQLite database (`:memory:` or a file). A file gets a write connection, a read
 * connection, a track connection and a checkpoint thread (see Storage); `connectionOnly`, the
 * write connection alone.
 */
export function openSqlite(path: string, timeouts: DatabaseTimeouts, connectionOnly = false): Storage {
  const single = (db: Kysely<Database>): Storage => ({
    engine: 'sqlite',
    db,
    reader: null,
    tracker: null,
    close: () => db.destroy(),
  });
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const database = new SQLite(path);
  // First, so that switching to WAL waits for another process opening the file too.
  database.pragma(`busy_timeout = ${timeouts.busyTimeoutMs}`);
  // WAL with synchronous=NORMAL: a committed transaction survives a process crash; an OS
  // crash may lose the last commits (documented in the README).
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  // 64 MiB of page cache (the default is 2 MiB): reports read many rollup and event pages.
  database.pragma('cache_size = -65536');
  // The tables a track request writes, in a file of their own (storage/events-file.ts).
  attachEventsFile(database, path);
  const db = new Kysely<Database>({
    dialect: new SqliteDialect({ database: withStatementCache(database) }),
  });
  sqliteHandles.set(db.getExecutor().adapter, database);
  if (path === ':memory:') return single(db);
  // WAL checkpoints (copying committed pages into the database file, and an fsync) off the
  // event loop: a thread of its own checkpoints what it can every CHECKPOINT_EVERY_MS, without
  // waiting for anyone (PASSIVE). The connection's own checkpoint, which runs inside the
  // commit that crosses its threshold and holds every request behind it, stays only as a
  // backstop for a WAL the thread cannot keep small.
  database.pragma(`wal_autocheckpoint = ${BACKSTOP_CHECKPOINT_PAGES}`);
  if (connectionOnly) return single(db);
  const checkpointer = startCheckpointer(path);
  // A second connection for snapshot reads (reports, usage, the tail: inSnapshot). WAL lets it
  // read while the first one writes, so a report never waits for a track batch or a folding
  // pass holding the write connection; a read transaction started after a commit sees it.
  const readerDatabase = new SQLite(path);
  readerDatabase.pragma(`busy_timeout = ${timeouts.busyTimeoutMs}`);
  readerDatabase.pragma('cache_size = -65536');
  attachEventsFile(readerDatabase, path);
  readerDatabase.pragma('query_only = ON');
  const reader = new Kysely<Database>({
    dialect: new SqliteDialect({ database: withStatementCache(readerDatabase) }),
  });
  // A third connection for track batches (tracking/batcher.ts). They write the events file
  // only, so they commit while a folding pass holds the main file's write lock; on the first
  // connection they would queue behind the pass, which holds that connection (fold/thread.ts).
  const trackDatabase = new SQLite(path);
  trackDatabase.pragma(`busy_timeout = ${timeouts.busyTimeoutMs}`);
  trackDatabase.pragma('cache_size = -65536');
  attachEventsFile(trackDatabase, path);
  trackDatabase.pragma(`wal_autocheckpoint = ${BACKSTOP_CHECKPOINT_PAGES}`);
  const tracker = new Kysely<Database>({
    dialect: new SqliteDialect({ database: withStatementCache(trackDatabase) }),
  });
  sqliteHandles.set(tracker.getExecutor().adapter, trackDatabase);
  return {
    engine: 'sqlite',
    db,
    reader,
    tracker,
    close: async () => {
      await checkpointer.terminate();
      await tracker.destroy();
      await reader.destroy();
      await db.destroy();
    },
  };
}

/** The better-sqlite3 handle behind each SQLite Kysely (its transactions share the adapter). */
const sqliteHandles = new WeakMap<object, SQLite.Database>();

/**
 * SQLite, inside a transaction only: the connection's own better-sqlite3 handle, to run one
 * prepared statement many times in a loop. A Kysely query's promise and executor plumbing costs
 * several times what a small statement does, and a fold or a batch of events runs thousands. Only a transaction holds SQLite's one connection for its whole callback, so no
 * other query can be interleaved with the statements run here (outside one: null).
 */
export function sqliteHandle(db: DbOrTrx): SQLite.Database | null {
  if (!db.isTransaction) return null;
  return sqliteHandles.get(db.getExecutor().adapter) ?? null;
}

/**
 * Kysely prepares every query anew; preparing costs as much as running a small statement.
 * Statements are reused by SQL text (safe: one connection, and better-sqlite3 runs them
 * synchronously, so a statement is never in use twice at once). `prepare` is replaced on the
 * instance itself, not through a Proxy: every query calls it, and a Proxy would make a new
 * function on each call and trap every other property read too.
 */
function withStatementCache(database: SQLite.Database, size = 500): SQLite.Database {
  const cache = new Map<string, SQLite.Statement>();
  const prepare = database.prepare.bind(database);
  database.prepare = ((source: string) => {
    let statement = cache.get(source);
    if (statement) {
      cache.delete(source);
    } else {
      statement = prepare(source);
      if (source.startsWith(ARRAY_ROWS)) statement.raw(true);
      if (cache.size >= size) {
        const oldest = cache.keys().next();
        if (!oldest.done) cache.delete(oldest.value);
      }
    }
    cache.set(source, statement);
    return statement;
  }) as SQLite.Database['prepare'];
  return database;
}
