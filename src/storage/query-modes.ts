import type { CompiledQuery } from 'kysely';
import type { DbOrTrx } from './types.js';

// Markers at the start of a query's text that both engines' drivers understand (sqlite.ts,
// postgres.ts).

/**
 * A query whose text starts with this comment returns each row as an array of its columns in
 * SELECT order instead of an object (better-sqlite3 `raw`, pg `rowMode: 'array'`): reports return
 * tens of thousands of rows, and building an object per row costs more than the query's GROUP BY.
 */
export const ARRAY_ROWS = '/* array rows */ ';

/**
 * PostgreSQL: a text starting with this comment holds several statements without parameters,
 * sent together (the simple query protocol, one round trip); the query answers the rows of the
 * last one. Opening a report's snapshot this way starts its transaction, sets it up and reads the
 * folding stage's state in one round trip instead of three (snapshot.ts).
 */
export const LAST_RESULT = '/* last result */ ';

/** Runs a compiled SELECT and returns its rows as arrays (see ARRAY_ROWS). */
export async function selectArrays(db: DbOrTrx, compiled: CompiledQuery<unknown>): Promise<unknown[][]> {
  const { rows } = await db.executeQuery<unknown[]>({ ...compiled, sql: ARRAY_ROWS + compiled.sql });
  return rows;
}
