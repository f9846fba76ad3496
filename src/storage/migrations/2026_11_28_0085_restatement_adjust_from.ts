import { SqliteAdapter, sql, type Kysely } from 'kysely';

/**
 * A restatement's `adjust_from` (src/ledger/restatement.ts): set when its walk begins, the lowest
 * `ingest_seq` that an adjustment written after that moment may have (PostgreSQL: the xmin of a
 * snapshot taken then, every transaction below it has ended; SQLite: the number after the largest
 * stored, the main file's writer numbering them in commit order). Its publication reprices again
 * only the staged events with such an entry, rather than counting the entries of every staged
 * event under the write lock. Null until the walk begins.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
  await sql`ALTER TABLE restatements ADD COLUMN adjust_from ${sqlite ? sql`integer` : sql`xid8`}`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`ALTER TABLE restatements DROP COLUMN adjust_from`.execute(db);
}
