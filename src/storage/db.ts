import { sql } from 'kysely';
import type { DbOrTrx, Storage } from './types.js';

// The storage module's front door: its types, the transaction helpers every verb uses, and the
// entry points of its rooms (open.ts, sqlite.ts, postgres.ts, migrate.ts, unavailable.ts).

export type { Db, DbOrTrx, Engine, Storage } from './types.js';
export { openStorage, type OpenOptions } from './open.js';
export { migrateStorage, migrateToLatest } from './migrate.js';
export { DatabaseTimeoutError, isUnavailableError } from './unavailable.js';
export { ARRAY_ROWS, LAST_RESULT, selectArrays } from './query-modes.js';

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

/** The connections of an open storage that a verb may use beside the db or transaction it runs in. */
export type Connections = Pick<Storage, 'db' | 'reader' | 'tracker'>;

/** A verb's context as far as choosing a connection goes (context.ts ServiceCtx). */
interface OnStorage {
  db: DbOrTrx;
  /** The storage `db` belongs to; absent, every read and write goes to `db`. */
  storage?: Connections;
}

/**
 * The storage whose connections may stand in for `ctx.db`: none inside a transaction (its reads
 * must see its own writes), nor when `ctx.db` is not one of the storage's (a test's other
 * process, a database wrapped in a plugin).
 */
function connectionsOf(ctx: OnStorage): Connections | undefined {
  const storage = ctx.storage;
  if (storage === undefined || ctx.db.isTransaction) return undefined;
  return ctx.db === storage.db || ctx.db === storage.reader ? storage : undefined;
}

/**
 * The database to read on: a SQLite file's read connection, which never waits for the write
 * connection (a folding pass holds that for up to seconds, fold/thread.ts); `ctx.db` otherwise.
 * Only for reads: the read connection refuses any write.
 */
export function readDb(ctx: OnStorage): DbOrTrx {
  return connectionsOf(ctx)?.reader ?? ctx.db;
}

/** The write connection, when `ctx.db` is a SQLite file's read connection; `ctx.db` otherwise. */
export function writeDb(ctx: OnStorage): DbOrTrx {
  return connectionsOf(ctx)?.db ?? ctx.db;
}

/**
 * The database track batches and the other writes to the events file commit on: a SQLite file's
 * track connection (events-file.ts), which does not wait for a folding pass holding the write
 * connection; `ctx.db` otherwise.
 */
export function trackDb(ctx: OnStorage): DbOrTrx {
  return connectionsOf(ctx)?.tracker ?? ctx.db;
}
