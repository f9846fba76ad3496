import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import {
  Kysely,
  PostgresAdapter,
  PostgresDialect,
  SqliteDialect,
  sql,
  type CompiledQuery,
  type Transaction,
} from 'kysely';
import pg from 'pg';
import { migrations } from './migrations/index.js';
import type { Database } from './schema.js';

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

/** Runs a compiled SELECT and returns its rows as arrays (see ARRAY_ROWS). */
export async function selectArrays(db: DbOrTrx, compiled: CompiledQuery<unknown>): Promise<unknown[][]> {
  const { rows } = await db.executeQuery<unknown[]>({ ...compiled, sql: ARRAY_ROWS + compiled.sql });
  return rows;
}

export interface OpenOptions {
  /** PostgreSQL only: the schema to work in (tests use one schema per file). */
  schema?: string;
  poolSize?: number;
}

export function openStorage(url: string, options: OpenOptions = {}): Storage {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length) || ':memory:';
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    const database = new SQLite(path);
    // WAL with synchronous=NORMAL: a committed transaction survives a process crash; an OS
    // crash may lose the last commits (documented in the README).
    database.pragma('journal_mode = WAL');
    database.pragma('synchronous = NORMAL');
    database.pragma('busy_timeout = 5000');
    // 64 MiB of page cache (the default is 2 MiB): reports read many rollup and event pages.
    database.pragma('cache_size = -65536');
    const db = new Kysely<Database>({
      dialect: new SqliteDialect({ database: withStatementCache(database) }),
    });
    return { engine: 'sqlite', db, close: () => db.destroy() };
  }
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize ?? 20,
    connectionTimeoutMillis: 5000,
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  });
  // An idle client losing its connection must not crash the process; the next query reports it.
  pool.on('error', () => undefined);
  pool.on('connect', reusePreparedStatements);
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return { engine: 'postgres', db, close: () => db.destroy() };
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
 * Applies pending migrations in name order, all in one transaction, and returns their names.
 * Our own small runner rather than Kysely's Migrator: that one lists the tables of every schema
 * on the server, which fails whenever another schema is dropped meanwhile. On PostgreSQL an
 * advisory lock per schema makes concurrent starts wait for each other.
 */
export async function migrateToLatest(db: Db): Promise<string[]> {
  await sql`create table if not exists tally_migrations (name text primary key, applied_at bigint not null)`.execute(
    db,
  );
  return db.transaction().execute(async (trx) => {
    if (trx.getExecutor().adapter instanceof PostgresAdapter) {
      await sql`select pg_advisory_xact_lock(hashtext('tally_migrations:' || current_schema()))`.execute(trx);
    }
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
  '57P01',
  '57P02',
  '57P03',
  '53300',
]);

/** True for errors that mean "the database cannot be reached right now" (answered with 503). */
export function isUnavailableError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (UNAVAILABLE_CODES.has(code) || code.startsWith('08'))) return true;
  const message = (error as { message?: unknown }).message;
  return (
    typeof message === 'string' &&
    /Connection terminated|timeout exceeded when trying to connect|connect ECONNREFUSED|Client has encountered a connection error|driver has already been destroyed/i.test(
      message,
    )
  );
}
