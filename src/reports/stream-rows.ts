import { sql, type Compilable } from 'kysely';
import type { DbOrTrx, Engine } from '../storage/db.js';

const CHUNK_ROWS = 1000;

/**
 * Rows of a SELECT as they come from the database, never all in memory. SQLite iterates its
 * statement; PostgreSQL reads a server-side cursor (pg has no streaming without pg-cursor) inside
 * a read-only transaction. Stopping early (a client that goes away) closes the cursor.
 */
export async function* streamRows<R>(
  db: DbOrTrx,
  engine: Engine,
  query: Compilable<R> & { stream(chunkSize?: number): AsyncIterableIterator<R> },
): AsyncGenerator<R> {
  if (engine === 'sqlite') {
    yield* query.stream(CHUNK_ROWS);
    return;
  }
  const compiled = query.compile();
  const owned = db.isTransaction ? null : await db.startTransaction().setAccessMode('read only').execute();
  const trx = owned ?? db;
  let done = false;
  try {
    await trx.executeQuery({ ...compiled, sql: `DECLARE tally_rows NO SCROLL CURSOR FOR ${compiled.sql}` });
    for (;;) {
      const { rows } = await sql<R>`FETCH ${sql.lit(CHUNK_ROWS)} FROM tally_rows`.execute(trx);
      yield* rows;
      if (rows.length < CHUNK_ROWS) break;
    }
    await sql`CLOSE tally_rows`.execute(trx);
    done = true;
  } finally {
    if (owned) await (done ? owned.commit() : owned.rollback()).execute();
  }
}
