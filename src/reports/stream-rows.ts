import { sql, type Compilable } from 'kysely';
import type { DbOrTrx, Engine } from '../storage/db.js';

/** Rows per SQLite page and per PostgreSQL FETCH. */
export const PAGE_ROWS = 2000;

/** A slice of the query's (deterministically ordered) rows. */
export interface Page {
  offset: number;
  limit: number;
}

export type PagedQuery<R> = (page: Page | null) => Compilable<R> & { execute(): Promise<R[]> };

/**
 * Rows of a SELECT, never all in memory. SQLite has one connection for the whole service, so the
 * rows come in pages through separate short queries (the query's ORDER BY is total): between
 * pages, and while a slow client reads, tracking goes on. PostgreSQL reads a server-side cursor
 * (pg has no streaming without pg-cursor) inside a read-only transaction on one pool connection.
 * Callers must finish or `return()` the generator: that closes the cursor.
 */
export async function* streamRows<R>(db: DbOrTrx, engine: Engine, query: PagedQuery<R>): AsyncGenerator<R> {
  if (engine === 'sqlite') {
    for (let offset = 0; ; offset += PAGE_ROWS) {
      const rows = await query({ offset, limit: PAGE_ROWS }).execute();
      yield* rows;
      if (rows.length < PAGE_ROWS) return;
    }
  }
  const compiled = query(null).compile();
  const owned = db.isTransaction ? null : await db.startTransaction().setAccessMode('read only').execute();
  const trx = owned ?? db;
  let done = false;
  try {
    await trx.executeQuery({ ...compiled, sql: `DECLARE tally_rows NO SCROLL CURSOR FOR ${compiled.sql}` });
    for (;;) {
      const { rows } = await sql<R>`FETCH ${sql.lit(PAGE_ROWS)} FROM tally_rows`.execute(trx);
      yield* rows;
      if (rows.length < PAGE_ROWS) break;
    }
    await sql`CLOSE tally_rows`.execute(trx);
    done = true;
  } finally {
    if (owned) await (done ? owned.commit() : owned.rollback()).execute();
  }
}
