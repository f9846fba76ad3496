import { PostgresAdapter, sql } from 'kysely';
import { moveToEventsFile } from './events-file.js';
import { migrations } from './migrations/index.js';
import { openStorage, type OpenOptions } from './open.js';
import type { Db, Storage } from './types.js';

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
