import { randomBytes } from 'node:crypto';
import { CompiledQuery, sql, type Compilable } from 'kysely';
import { inTransaction, selectArrays, type DbOrTrx, type Engine } from '../storage/db.js';

/** Rows per SQLite page and per PostgreSQL FETCH. */
export const PAGE_ROWS = 2000;

/**
 * Rows of a SELECT as arrays of its columns (storage/db.ts ARRAY_ROWS), never all in memory;
 * callers must finish or `return()` the generator, which releases what it holds. `plan` builds
 * the SELECT in the transaction that runs it, so that what it reads to build it (a report reads
 * the folding stage's state) is of the statement's own snapshot. SQLite: on the write
 * connection, which the whole service shares (the read connection cannot create a table), the
 * query runs once into a temporary table (one snapshot), which is then read in pages by rowid
 * through short queries, so the other writes go on between pages and while a slow client reads.
 * PostgreSQL reads a server-side cursor (pg has no streaming without pg-cursor) in a read-only
 * REPEATABLE READ transaction.
 */
export async function* streamRows(
  db: DbOrTrx,
  engine: Engine,
  plan: (db: DbOrTrx) => Promise<Compilable<unknown>>,
): AsyncGenerator<unknown[]> {
  if (engine === 'sqlite') {
    const name = `tally_export_${randomBytes(6).toString('hex')}`;
    const table = sql.table(`temp.${name}`);
    // The plan's reads and the statement in one transaction: one snapshot of the main file (a
    // transaction writing only a temporary table takes no write lock on it).
    const fill = async (trx: DbOrTrx) => {
      const compiled = (await plan(trx)).compile();
      await trx.executeQuery({ ...compiled, sql: `CREATE TEMP TABLE ${name} AS ${compiled.sql}` });
    };
    await inTransaction(db, fill);
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
  const owned = db.isTransaction
    ? null
    : await db.startTransaction().setIsolationLevel('repeatable read').setAccessMode('read only').execute();
  const trx = owned ?? db;
  let done = false;
  try {
    const compiled = (await plan(trx)).compile();
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
