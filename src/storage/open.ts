import { DEFAULT_DATABASE_TIMEOUTS, type DatabaseTimeouts } from '../config.js';
import { openPostgres } from './postgres.js';
import { openSqlite } from './sqlite.js';
import type { Storage } from './types.js';

export interface OpenOptions {
  /** PostgreSQL only: the schema to work in (tests use one schema per file). */
  schema?: string;
  poolSize?: number;
  /** Bounds on database waits (defaults: DEFAULT_DATABASE_TIMEOUTS); a statement timeout of 0 is none. */
  timeouts?: Partial<DatabaseTimeouts>;
  /**
   * SQLite file: the write connection alone, without the checkpoint thread and the read
   * connection, which the process that opened the file first already runs (the folding thread,
   * fold/thread.ts).
   */
  connectionOnly?: boolean;
  /**
   * Told about connection errors that belong to no query (a pooled connection dropped by a
   * restarting server). Without it they are ignored; they never reach the process.
   */
  onConnectionError?: (error: Error) => void;
}

/** Opens `url`: `sqlite:PATH` (`sqlite:` alone: in memory) or a PostgreSQL URL. */
export function openStorage(url: string, options: OpenOptions = {}): Storage {
  const timeouts = { ...DEFAULT_DATABASE_TIMEOUTS, ...options.timeouts };
  if (url.startsWith('sqlite:')) {
    return openSqlite(url.slice('sqlite:'.length) || ':memory:', timeouts, options.connectionOnly);
  }
  return openPostgres(url, timeouts, options);
}
