import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { Worker } from 'node:worker_threads';
import SQLite from 'better-sqlite3';
import {
  CompiledQuery,
  Kysely,
  PostgresAdapter,
  PostgresDialect,
  SqliteDialect,
  sql,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
  type Transaction,
  type TransactionSettings,
} from 'kysely';
import pg from 'pg';
import { DEFAULT_DATABASE_TIMEOUTS, type DatabaseTimeouts } from '../config.js';
import { attachEventsFile, eventsFilePath, EVENTS_SCHEMA, moveToEventsFile } from './events-file.js';
import { migrations } from './migrations/index.js';
import type { Database } from './schema.js';

const require = createRequire(import.meta.url);

export type Engine = 'sqlite' | 'postgres';
export type Db = Kysely<Database>;
/** A verb takes either the database or an open transaction. */
export type DbOrTrx = Kysely<Database> | Transaction<Database>;

export interface Storage {
  engine: Engine;
  db: Db;
  close(): Promise<void>;
}

// int8 and numeric come back as strings by default; every value we keep fits in 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => Number(v));

/**
 * A query whose text starts with this comment returns each row as an array of its columns in
 * SELECT order instead of an object (better-sqlite3 `raw`, pg `rowMode: 'array'`): reports return
 * tens of thousands of rows, and building an object per row costs more than the query's GROUP BY
 * (agent × client × week over 90 days, 58,000 rows on SQLite: 151 → 109 ms).
 */
export const ARRAY_ROWS = '/* array rows */ ';

/**
 * PostgreSQL: a text starting with this comment holds several statements without parameters,
 * sent together (the simple query protocol, one round trip); the query answers the rows of the
 * last one. Opening a report's snapshot this way starts its transaction, sets it up and reads the
 * folding stage's state in one round trip instead of three (storage/snapshot.ts).
 */
export const LAST_RESULT = '/* last result */ ';

/** Runs a compiled SELECT and returns its rows as arrays (see ARRAY_ROWS). */
export async function selectArrays(db: DbOrTrx, compiled: CompiledQuery<unknown>): Promise<unknown[][]> {
  const { rows } = await db.executeQuery<unknown[]>({ ...compiled, sql: ARRAY_ROWS + compiled.sql });
  return rows;
}

export interface OpenOptions {
  /** PostgreSQL only: the schema to work in (tests use one schema per file). */
  schema?: string;
  poolSize?: number;
  /** Bounds on database waits (defaults: DEFAULT_DATABASE_TIMEOUTS); a statement timeout of 0 is none. */
  timeouts?: Partial<DatabaseTimeouts>;
  /**
   * SQLite file: the write connection alone, without the checkpoint thread and the read
   * connection, which the process that opened the file first already runs (the folding thread,
   * tracking/fold-thread.ts).
   */
  connectionOnly?: boolean;
  /**
   * Told about connection errors that belong to no query (a pooled connection dropped by a
   * restarting server). Without it they are ignored; they never reach the process.
   */
  onConnectionError?: (error: Error) => void;
}

/** A database wait that ran out of time (answered 503 like an unreachable database). */
export class DatabaseTimeoutError extends Error {
  readonly code = 'TALLY_DB_TIMEOUT';
}

/** How much longer than `statement_timeout` the client waits before it drops the connection. */
const CLIENT_GRACE_MS = 1_000;

export function openStorage(url: string, options: OpenOptions = {}): Storage {
  const timeouts = { ...DEFAULT_DATABASE_TIMEOUTS, ...options.timeouts };
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length) || ':memory:';
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
    const close = () => db.destroy();
    if (path === ':memory:') return { engine: 'sqlite', db, close };
    // WAL checkpoints (copying committed pages into the database file, and an fsync) off the
    // event loop: a thread of its own checkpoints what it can every CHECKPOINT_EVERY_MS, without
    // waiting for anyone (PASSIVE). The connection's own checkpoint, which runs inside the
    // commit that crosses its threshold and holds every request behind it, stays only as a
    // backstop for a WAL the thread cannot keep small.
    database.pragma(`wal_autocheckpoint = ${BACKSTOP_CHECKPOINT_PAGES}`);
    if (options.connectionOnly) return { engine: 'sqlite', db, close };
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
    sqliteReaders.set(db, reader);
    sqliteWriters.set(reader, db);
    // A third connection for track batches (tracking/batcher.ts). They write the events file
    // only, so they commit while a folding pass holds the main file's write lock; on the first
    // connection they would queue behind the pass, which holds that connection (fold-thread.ts).
    const trackDatabase = new SQLite(path);
    trackDatabase.pragma(`busy_timeout = ${timeouts.busyTimeoutMs}`);
    trackDatabase.pragma('cache_size = -65536');
    attachEventsFile(trackDatabase, path);
    trackDatabase.pragma(`wal_autocheckpoint = ${BACKSTOP_CHECKPOINT_PAGES}`);
    const tracker = new Kysely<Database>({
      dialect: new SqliteDialect({ database: withStatementCache(trackDatabase) }),
    });
    sqliteHandles.set(tracker.getExecutor().adapter, trackDatabase);
    sqliteTrackWriters.set(db, tracker);
    return {
      engine: 'sqlite',
      db,
      close: async () => {
        await checkpointer.terminate();
        await tracker.destroy();
        await reader.destroy();
        await db.destroy();
      },
    };
  }
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize ?? 20,
    // Bounds both opening a connection and waiting for a free one in the pool.
    connectionTimeoutMillis: timeouts.connectTimeoutMs,
    // A dead peer (a partition) is noticed by the kernel, not only by the next query's timer.
    keepAlive: true,
    // A session the client lost mid-transaction (a partition) must not hold its locks until the
    // server's keepalive notices, hours later.
    ...(timeouts.statementTimeoutMs > 0
      ? {
          statement_timeout: timeouts.statementTimeoutMs,
          idle_in_transaction_session_timeout: 2 * timeouts.statementTimeoutMs,
        }
      : {}),
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  });
  // A connection the server drops (a restart: 57P01, or a reset) emits `error` on its client,
  // idle in the pool or checked out by Kysely between two queries. An `error` event without a
  // listener kills the process; the queries on that client fail on their own and answer 503.
  const onConnectionError = options.onConnectionError ?? (() => undefined);
  pool.on('error', onConnectionError);
  pool.on('connect', (client) => {
    client.on('error', onConnectionError);
    reusePreparedStatements(client);
    if (timeouts.statementTimeoutMs > 0) boundQueries(client, timeouts.statementTimeoutMs + CLIENT_GRACE_MS);
  });
  const db = new Kysely<Database>({ dialect: new SnapshotPostgresDialect({ pool }) });
  return { engine: 'postgres', db, close: () => db.destroy() };
}

/** The start of a read-only snapshot (storage/snapshot.ts), which SnapshotDriver defers. */
const SNAPSHOT_BEGIN = 'START TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY';

/**
 * PostgreSQL's dialect, whose read-only REPEATABLE READ transactions (the snapshots of reports,
 * usage and exports) send their START TRANSACTION with their first query rather than on its own:
 * in one round trip with it when that query is a LAST_RESULT text, just before it otherwise. The
 * snapshot is taken at the first query either way, not at the start. A transaction that runs no
 * query sends nothing at all.
 */
class SnapshotPostgresDialect extends PostgresDialect {
  override createDriver(): Driver {
    return new SnapshotDriver(super.createDriver());
  }
}

class DeferredBeginConnection implements DatabaseConnection {
  begin: string | null = null;

  constructor(readonly inner: DatabaseConnection) {}

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const begin = this.begin;
    if (begin === null) return this.inner.executeQuery<R>(compiled);
    this.begin = null;
    if (compiled.sql.startsWith(LAST_RESULT) && compiled.parameters.length === 0) {
      const statements = compiled.sql.slice(LAST_RESULT.length);
      return this.inner.executeQuery<R>(CompiledQuery.raw(`${LAST_RESULT}${begin}; ${statements}`));
    }
    await this.inner.executeQuery(CompiledQuery.raw(begin));
    return this.inner.executeQuery<R>(compiled);
  }

  async *streamQuery<R>(compiled: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    if (this.begin !== null) {
      await this.inner.executeQuery(CompiledQuery.raw(this.begin));
      this.begin = null;
    }
    yield* this.inner.streamQuery<R>(compiled, chunkSize);
  }
}

class SnapshotDriver implements Driver {
  constructor(private readonly inner: Driver) {}

  init(): Promise<void> {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    return new DeferredBeginConnection(await this.inner.acquireConnection());
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    if (settings.isolationLevel === 'repeatable read' && settings.accessMode === 'read only') {
      (connection as DeferredBeginConnection).begin = SNAPSHOT_BEGIN;
      return;
    }
    await this.inner.beginTransaction(connection, settings);
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    if (!this.startedNothing(connection)) await this.inner.commitTransaction(connection);
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    if (!this.startedNothing(connection)) await this.inner.rollbackTransaction(connection);
  }

  savepoint: Driver['savepoint'] = (connection, name, compile) =>
    this.supported(this.inner.savepoint).call(this.inner, connection, name, compile);
  rollbackToSavepoint: Driver['rollbackToSavepoint'] = (connection, name, compile) =>
    this.supported(this.inner.rollbackToSavepoint).call(this.inner, connection, name, compile);
  releaseSavepoint: Driver['releaseSavepoint'] = (connection, name, compile) =>
    this.supported(this.inner.releaseSavepoint).call(this.inner, connection, name, compile);

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.inner.releaseConnection((connection as DeferredBeginConnection).inner);
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }

  /** A savepoint method of the wrapped driver (PostgreSQL's has them all). */
  private supported<M>(method: M | undefined): M {
    if (method === undefined) throw new Error('savepoints are not supported by this driver');
    return method;
  }

  /** Whether the transaction on `connection` was deferred and ran no query (then forgotten). */
  private startedNothing(connection: DatabaseConnection): boolean {
    const deferred = connection as DeferredBeginConnection;
    if (deferred.begin === null) return false;
    deferred.begin = null;
    return true;
  }
}

/**
 * SQLite: takes the write lock at the start of transaction `trx`, by a write that changes
 * nothing. A transaction that has read first cannot wait for another process's write (SQLite
 * refuses at once, busy_timeout does not apply); one that writes first waits, then reads what
 * that process committed.
 */
export async function takeSqliteWriteLock(trx: DbOrTrx): Promise<void> {
  await sql`UPDATE fold_state SET folded_at = folded_at WHERE id = 1`.execute(trx);
}

/** Runs `fn` in `db` when it is a transaction already, else in a new transaction of its own. */
export function inTransaction<T>(db: DbOrTrx, fn: (trx: DbOrTrx) => Promise<T>): Promise<T> {
  return db.isTransaction ? fn(db) : db.transaction().execute(fn);
}

/** How often the checkpoint thread of a SQLite file database checkpoints its WAL. */
const CHECKPOINT_EVERY_MS = 250;
/** The WAL size (in pages) at which the write connection checkpoints itself, as a backstop. */
const BACKSTOP_CHECKPOINT_PAGES = 10_000;

/**
 * A worker thread with a connection of its own that runs `PRAGMA wal_checkpoint(PASSIVE)` on
 * the file every CHECKPOINT_EVERY_MS (a busy or failed one is simply tried again). It does not
 * keep the process alive. The thread's code is passed as text, so that it runs the same from
 * the sources (tests, tsx) and from dist.
 */
export function startCheckpointer(path: string): Worker {
  const source = `
    const { workerData } = require('node:worker_threads');
    const Database = require(workerData.driver);
    const database = new Database(workerData.path);
    database.pragma('busy_timeout = 0');
    database.prepare('ATTACH DATABASE ? AS ' + workerData.schema).run(workerData.events);
    setInterval(() => {
      try { database.pragma('wal_checkpoint(PASSIVE)'); } catch {}
    }, workerData.everyMs);`;
  const worker = new Worker(source, {
    eval: true,
    workerData: {
      driver: require.resolve('better-sqlite3'),
      path,
      events: eventsFilePath(path),
      schema: EVENTS_SCHEMA,
      everyMs: CHECKPOINT_EVERY_MS,
    },
  });
  // A thread that could not open the file (or died) leaves the backstop to checkpoint; its
  // error must not reach the process as an unhandled 'error' event.
  worker.on('error', () => undefined);
  worker.unref();
  return worker;
}

/** The read connection of each SQLite file database (see openStorage). */
const sqliteReaders = new WeakMap<DbOrTrx, Kysely<Database>>();

/**
 * SQLite: the connection that takes snapshot reads off the write connection, for `db` outside
 * a transaction (inside one, its reads must see its own writes). Null elsewhere.
 */
export function snapshotReader(db: DbOrTrx): Kysely<Database> | null {
  if (db.isTransaction) return null;
  return sqliteReaders.get(db) ?? null;
}

/** The write connection behind each SQLite read connection. */
const sqliteWriters = new WeakMap<DbOrTrx, Db>();

/**
 * The database to read on outside a transaction: a SQLite file's read connection, which never
 * waits for the write connection (a folding pass holds that for up to seconds, fold-thread.ts);
 * `db` itself elsewhere. Only for reads: the read connection refuses any write.
 */
export function readDb(db: DbOrTrx): DbOrTrx {
  return snapshotReader(db) ?? db;
}

/** The write connection of `db` when it is a SQLite read connection; `db` itself otherwise. */
export function writerOf(db: DbOrTrx): DbOrTrx {
  return sqliteWriters.get(db) ?? db;
}

/** The track connection of each SQLite file database (see openStorage). */
const sqliteTrackWriters = new WeakMap<Db, Db>();

/**
 * The database track batches commit on: a SQLite file's track connection, which writes the
 * events file alone (storage/events-file.ts); `db` itself elsewhere.
 */
export function trackWriter(db: Db): Db {
  return sqliteTrackWriters.get(db) ?? db;
}

/** The better-sqlite3 handle behind each SQLite Kysely (its transactions share the adapter). */
const sqliteHandles = new WeakMap<object, SQLite.Database>();

/**
 * SQLite, inside a transaction only: the connection's own better-sqlite3 handle, to run one
 * prepared statement many times in a loop. A Kysely query costs some 20–30 µs of promise and
 * executor plumbing around a statement that runs in 2–5; a fold or a batch of events runs
 * thousands. Only a transaction holds SQLite's one connection for its whole callback, so no
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

/**
 * `statement_timeout` ends a slow statement on a server that answers; a server that stopped
 * answering (a network partition) needs a timer on our side. When it fires, the connection is
 * destroyed rather than left with a query in flight: its pending queries fail, and the pool
 * drops the client instead of handing it out again (pg-pool checks `_queryable` on release).
 */
function boundQueries(client: pg.PoolClient, timeoutMs: number): void {
  type Query = (text: unknown, values?: unknown) => unknown;
  const target = client as unknown as {
    query: Query;
    connection?: { stream?: { destroy(error?: Error): void } };
  };
  const query = target.query.bind(client);
  target.query = (text, values) => {
    const result = query(text, values);
    // Only Kysely's plain queries return a promise; cursors (streamed exports) bring their own pace.
    if (typeof text !== 'string' || !(result instanceof Promise)) return result;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        const error = new DatabaseTimeoutError(`The database did not answer within ${timeoutMs} ms.`);
        reject(error);
        target.connection?.stream?.destroy(error);
      }, timeoutMs);
      result.then(resolve, reject).finally(() => clearTimeout(timer));
    });
  };
}

const preparedNames = new Map<string, string>();
const MAX_PREPARED = 100;
const MAX_PREPARED_PARAMETERS = 64;

/**
 * PostgreSQL parses and plans an unnamed statement on every run, which costs more than running
 * the small reads of the hot path (key lookup, catalogue and webhook reads) and as much as the
 * tracking write (its rows go in as arrays, storage/insert-rows.ts). Statements with a few
 * parameters are prepared under a name, once per connection, and reused. Bounds: at most
 * MAX_PREPARED statement texts (server memory per connection; first come, first prepared);
 * multi-row VALUES lists, whose text changes with their row count, mostly have more parameters
 * than MAX_PREPARED_PARAMETERS and stay unnamed; and so does any
 * `*`: a prepared statement whose columns change (another instance migrating) fails with
 * "cached plan must not change result type".
 */
function reusePreparedStatements(client: pg.PoolClient): void {
  type Query = (text: unknown, values?: unknown) => unknown;
  const target = client as unknown as { query: Query };
  const query = target.query.bind(client);
  target.query = (text, values) => {
    if (typeof text === 'string' && text.startsWith(LAST_RESULT)) {
      const results = query(text) as Promise<pg.QueryResult | pg.QueryResult[]>;
      return results.then((r) => (Array.isArray(r) ? r[r.length - 1] : r));
    }
    if (typeof text === 'string' && text.startsWith(ARRAY_ROWS)) {
      // Never named: reports are planned for their own parameters (a generic plan of the
      // three-key report ran 50 → 73 ms).
      return query({ text, values, rowMode: 'array' });
    }
    if (typeof text !== 'string' || !Array.isArray(values) || values.length === 0) return query(text, values);
    let name = preparedNames.get(text);
    if (name === undefined) {
      if (
        preparedNames.size >= MAX_PREPARED ||
        values.length > MAX_PREPARED_PARAMETERS ||
        text.includes('*')
      ) {
        return query(text, values);
      }
      name = `tally_${preparedNames.size}`;
      preparedNames.set(text, name);
    }
    return query({ name, text, values });
  };
}

/**
 * Migrates the database of `storage`. On PostgreSQL through a connection of its own without a
 * statement timeout: a migration may rewrite a large table, which must not be cut off like a
 * request's statement. (SQLite has no statement timeout, and `:memory:` is one per connection.)
 */
export async function migrateStorage(
  storage: Storage,
  url: string,
  options: OpenOptions = {},
): Promise<string[]> {
  if (storage.engine === 'sqlite') return migrateToLatest(storage.db);
  const migrating = openStorage(url, {
    ...options,
    poolSize: 1,
    timeouts: { ...options.timeouts, statementTimeoutMs: 0 },
  });
  try {
    return await migrateToLatest(migrating.db);
  } finally {
    await migrating.close();
  }
}

/**
 * Applies pending migrations in name order, all in one transaction, and returns their names.
 * Our own small runner rather than Kysely's Migrator: that one lists the tables of every schema
 * on the server, which fails whenever another schema is dropped meanwhile. On PostgreSQL an
 * advisory lock per schema makes concurrent starts wait for each other.
 */
export async function migrateToLatest(db: Db): Promise<string[]> {
  let applied: string[] | null = null;
  for (let attempt = 1; ; attempt++) {
    try {
      applied ??= await migrateOnce(db);
      // SQLite: the tables a track request writes live in the events file (events-file.ts).
      await moveToEventsFile(db);
      return applied;
    } catch (error) {
      // SQLite: another process migrating the same file wrote after this one's transaction read,
      // which SQLite refuses at once ("database is locked"; busy_timeout does not wait there).
      // Again, after it: then its migrations are applied.
      const code = (error as { code?: unknown } | null)?.code;
      if (attempt >= 20 || typeof code !== 'string' || !code.startsWith('SQLITE_BUSY')) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
    }
  }
}

async function migrateOnce(db: Db): Promise<string[]> {
  return db.transaction().execute(async (trx) => {
    // PostgreSQL: processes starting together migrate one after the other, the table of applied
    // migrations included (two CREATE TABLE IF NOT EXISTS at once can both try to create it).
    if (trx.getExecutor().adapter instanceof PostgresAdapter) {
      await sql`select pg_advisory_xact_lock(hashtext('tally_migrations:' || current_schema()))`.execute(trx);
    }
    await sql`create table if not exists tally_migrations (name text primary key, applied_at bigint not null)`.execute(
      trx,
    );
    const done = await sql<{ name: string }>`select name from tally_migrations`.execute(trx);
    const applied = new Set(done.rows.map((r) => r.name));
    const pending = Object.keys(migrations)
      .sort()
      .filter((name) => !applied.has(name));
    for (const name of pending) {
      await migrations[name]?.up(trx);
      await sql`insert into tally_migrations (name, applied_at) values (${name}, ${Date.now()})`.execute(trx);
    }
    return pending;
  });
}

const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
  'SQLITE_CANTOPEN',
  'SQLITE_IOERR',
  'SQLITE_FULL',
  'TALLY_DB_TIMEOUT',
  '57014',
  '57P01',
  '57P02',
  '57P03',
  '53300',
]);

/** True for errors that mean "the database cannot be reached right now" (answered with 503). */
export function isUnavailableError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown }).code;
  // SQLite's extended codes name their primary one first (SQLITE_BUSY_SNAPSHOT is a SQLITE_BUSY).
  const primary =
    typeof code === 'string' && code.startsWith('SQLITE_') ? code.split('_', 2).join('_') : code;
  if (typeof primary === 'string' && (UNAVAILABLE_CODES.has(primary) || primary.startsWith('08')))
    return true;
  const message = (error as { message?: unknown }).message;
  return (
    typeof message === 'string' &&
    /Connection terminated|timeout exceeded when trying to connect|connect ECONNREFUSED|Client has encountered a connection error|Client was closed and is not queryable|driver has already been destroyed/i.test(
      message,
    )
  );
}
