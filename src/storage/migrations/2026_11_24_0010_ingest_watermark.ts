import { SqliteAdapter, sql, type Kysely } from 'kysely';

/**
 * Ingest behind a watermark (DESIGN §11): events carry the position at which they were
 * committed, `ingest_seq`, and `fold_state` holds the watermark of the folding stage, which
 * derives the report rollups, the usage counts and the webhook messages from the events after
 * it.
 *
 * - PostgreSQL: `ingest_seq` is the inserting transaction's id (`xid8`, by default), and the
 *   stage folds the events whose transaction ended before its snapshot's xmin: commit order is
 *   not the order of a sequence, but every transaction below xmin has ended.
 * - SQLite (one writer at a time): the tracking transaction numbers its events after the
 *   largest `ingest_seq` stored.
 *
 * Events stored before this migration keep `ingest_seq` null: their rollups, usage and webhook
 * messages were written with them, and a null is never in the tail (`ingest_seq >= watermark`
 * is never true of it). Reports, usage and pending deliveries are left exactly as they were.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
  if (sqlite) {
    await sql`ALTER TABLE events ADD COLUMN ingest_seq integer`.execute(db);
  } else {
    // No default while the column is added: existing rows stay null and the table is not rewritten.
    await sql`ALTER TABLE events ADD COLUMN ingest_seq xid8`.execute(db);
    await sql`ALTER TABLE events ALTER COLUMN ingest_seq SET DEFAULT pg_current_xact_id()`.execute(db);
  }
  await sql`CREATE INDEX events_ingest_seq ON events (ingest_seq)`.execute(db);
  await sql`
    CREATE TABLE fold_state (
      id integer PRIMARY KEY,
      watermark ${sqlite ? sql`integer` : sql`xid8`} NOT NULL,
      folded_at bigint NOT NULL
    )`.execute(db);
  await sql`INSERT INTO fold_state (id, watermark, folded_at) VALUES (1, ${sqlite ? sql`0` : sql`'0'::xid8`}, 0)`.execute(
    db,
  );
}
