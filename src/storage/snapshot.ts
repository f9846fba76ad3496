import { sql } from 'kysely';
import { snapshotReader, type DbOrTrx, type Engine } from './db.js';

/** A position in commit order (fold.ts): xid8 as text on PostgreSQL, a number on SQLite. */
export type IngestSeq = string | number;

/**
 * Runs `fn` in one snapshot: a REPEATABLE READ, read-only transaction on PostgreSQL, a
 * transaction on SQLite (its reads see one snapshot from the first on), on the database's read
 * connection (storage/db.ts). Inside a caller's transaction, in that one. Reports and usage
 * read the watermark, the rollups and the tail after it this way (DESIGN §11), so that the
 * folding stage committing meanwhile can neither hide an event nor count it twice.
 */
export async function inSnapshot<T>(
  db: DbOrTrx,
  engine: Engine,
  fn: (db: DbOrTrx) => Promise<T>,
): Promise<T> {
  if (db.isTransaction) return fn(db);
  // SQLite: on the read connection, when the database has one (a file).
  const begin = (snapshotReader(db) ?? db).transaction();
  if (engine === 'postgres') {
    return begin.setIsolationLevel('repeatable read').setAccessMode('read only').execute(fn);
  }
  // SQLite takes a file's snapshot at the transaction's first read of it: the main file (the
  // watermark, rollups and usage) first, then the events file (storage/events-file.ts). Every
  // event the main file's watermark counts as folded committed before it, so the events read
  // after it hold them all, and the tail after the watermark is exactly what is not folded.
  return begin.execute(async (trx) => {
    await sql`SELECT watermark FROM main.fold_state`.execute(trx);
    return fn(trx);
  });
}

/** The folding stage's watermark: events with `ingest_seq >= watermark` are not folded yet. */
export async function readWatermark(db: DbOrTrx): Promise<IngestSeq> {
  const row = await db.selectFrom('fold_state').select('watermark').where('id', '=', 1).executeTakeFirst();
  return row?.watermark ?? 0;
}

/**
 * The folding stage's state as a report reads it: the watermark, the first day whose week rollup
 * rows are not kept yet (rollups.ts coarseThroughAt) and the first day whose events the month
 * rows do not hold (rollups.ts monthsThroughAt).
 */
export async function readFoldState(
  db: DbOrTrx,
): Promise<{ watermark: IngestSeq; coarseThrough: number; monthsThrough: number }> {
  const row = await db
    .selectFrom('fold_state')
    .select(['watermark', 'coarse_through', 'months_through'])
    .where('id', '=', 1)
    .executeTakeFirst();
  return {
    watermark: row?.watermark ?? 0,
    coarseThrough: Number(row?.coarse_through ?? 0),
    monthsThrough: Number(row?.months_through ?? 0),
  };
}
