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
  const tx =
    engine === 'postgres' ? begin.setIsolationLevel('repeatable read').setAccessMode('read only') : begin;
  return tx.execute(fn);
}

/** The folding stage's watermark: events with `ingest_seq >= watermark` are not folded yet. */
export async function readWatermark(db: DbOrTrx): Promise<IngestSeq> {
  const row = await db.selectFrom('fold_state').select('watermark').where('id', '=', 1).executeTakeFirst();
  return row?.watermark ?? 0;
}

/**
 * The folding stage's state as a report reads it: the watermark, and the first day whose week
 * rollup rows are not kept yet (rollups.ts coarseThroughAt).
 */
export async function readFoldState(db: DbOrTrx): Promise<{ watermark: IngestSeq; coarseThrough: number }> {
  const row = await db
    .selectFrom('fold_state')
    .select(['watermark', 'coarse_through'])
    .where('id', '=', 1)
    .executeTakeFirst();
  return { watermark: row?.watermark ?? 0, coarseThrough: Number(row?.coarse_through ?? 0) };
}
