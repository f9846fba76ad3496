import { randomBytes } from 'node:crypto';
import { sql, type Compilable } from 'kysely';
import type { DbOrTrx, Engine } from '../storage/db.js';

/** Rows per SQLite page and per PostgreSQL FETCH. */
export const PAGE_ROWS = 2000;

/**
 * Rows of a SELECT, never all in memory; callers must finish or `return()` the generator, which
 * releases what it holds. SQLite has one connection for the whole service: the query runs once
 * into a temporary table (one snapshot), which is then read in pages by rowid through short
 * queries, so tracking goes on between pages and while a slow client reads. PostgreSQL reads a
 * server-side cursor (pg has no streaming without pg-cursor) in a read-only transaction.
 */
export async function* streamRows<R>(db: DbOrTrx, engine: Engine, query: Compilable<R>): AsyncGenerator<R> {
  const compiled = query.compile();
  if (engine === 'sqlite') {
    const name = `tally_export_${randomBytes(6).toString('hex')}`;
    const table = sql.table(`temp.${name}`);
    await db.executeQuery({ ...compiled, sql: `CREATE TEMP TABLE ${name} AS ${compiled.sql}` });
    try {
      for (let after = 0; ;) {
        const { rows } = await sql<R & { tally_rowid: number }>`
          SELECT rowid AS tally_rowid, * FROM ${table} WHERE rowid > ${after} ORDER BY rowid LIMIT ${PAGE_ROWS}`.execute(
          db,
        );
        for (const { tally_rowid: rowid, ...row } of rows) {
          after = rowid;
          yield row as R;
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
