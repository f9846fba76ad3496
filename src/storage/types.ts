import type { Kysely, Transaction } from 'kysely';
import type { Database } from './schema.js';

export type Engine = 'sqlite' | 'postgres';
export type Db = Kysely<Database>;
/** A verb takes either the database or an open transaction. */
export type DbOrTrx = Kysely<Database> | Transaction<Database>;

/** An open database: its engine, its connections, and how to close them all. */
export interface Storage {
  engine: Engine;
  /** The write connection (a pool on PostgreSQL). */
  db: Db;
  /**
   * SQLite file: a read-only connection for snapshot reads (reports, usage, key lookups, every
   * GET). WAL lets it read while `db` writes, so a read never waits for a track batch or a folding
   * pass holding the write connection. Null elsewhere (PostgreSQL pools its connections).
   */
  reader: Db | null;
  /**
   * SQLite file: the connection track batches commit on. They write the events file only
   * (events-file.ts), so they commit while a folding pass holds the main file's write lock.
   * Null elsewhere.
   */
  tracker: Db | null;
  close(): Promise<void>;
}
