import { randomBytes } from 'node:crypto';
import { CompiledQuery, sql, type Compilable } from 'kysely';
import { selectArrays, writerOf, type DbOrTrx, type Engine } from '../storage/db.js';

/** Rows per SQLite page and per PostgreSQL FETCH. */
export const PAGE_ROWS = 2000;

/**
 * Rows of a SELECT as arrays of its columns (storage/db.ts ARRAY_ROWS), never all in memory;
 * callers must finish or `return()` the generator, which releases what it holds. SQLite: on the
 * write connection, which the whole service shares (the read connection cannot create a table),
 * the query runs once into a temporary table (one snapshot), which is then read in pages by rowid
 * through short queries, so the other writes go on between pages and while a slow client reads. PostgreSQL reads a server-side cursor (pg has no streaming
 * without pg-cursor) in a read-only transaction.
 */
export async function* streamRows(
  db: DbOrTrx,
  engine: Engine,
  query: Compilable<unknown>,
): AsyncGenerator<unknown[]> {
  const compiled = query.compile();
  if (engine === 'sqlite') {
    // The temporary table lives on the write connection (the read connection writes nothing).
    db = writerOf(db);
    const name = `tally_export_${randomBytes(6).toString('hex')}`;
    const table = sql.table(`temp.${name}`);
    await db.executeQuery({ ...compiled, sql: `CREATE TEMP TABLE ${name} AS ${compiled.sql}` });
    try {
      for (let after = 0; ;) {
        const page = sql`SELECT *, rowid FROM ${table} WHERE rowid > ${after} ORDER BY rowid LIMIT ${PAGE_ROWS}`;
        const rows = await selectArrays(db, page.compile(db));
        for (const row of rows) {
          // The rowid came last; the row leaves with the query's own columns.
          after = row.pop() as number;
          yield row;
        }
        if (rows.length < PAGE_ROWS) return;
      }
    } finally {
      await sql`DROP TABLE IF EXISTS ${table}`.execute(db);
    }
  }
  const owned = db.isTransaction ? null : await db.startTransaction().setAccessMode('read only').execute();
  const trx = owned ?? db;
  let done = false;
  try {
    await trx.executeQuery({ ...compiled, sql: `DECLARE tally_rows NO SCROLL CURSOR FOR ${compiled.sql}` });
    for (;;) {
      const rows = await selectArrays(trx, CompiledQuery.raw(`FETCH ${PAGE_ROWS} FROM tally_rows`));
      yield* rows;
      if (rows.length < PAGE_ROWS) break;
    }
    await sql`CLOSE tally_rows`.execute(trx);
    done = true;
  } finally {
    if (owned) await (done ? owned.commit() : owned.rollback()).execute();
  }
}
