import { CompiledQuery, sql, type Kysely } from 'kysely';
import { LAST_RESULT } from './query-modes.js';
import type { DbOrTrx, Engine } from './types.js';
import type { Database } from './schema.js';

/** A position in commit order (fold/stage.ts): xid8 as text on PostgreSQL, a number on SQLite. */
export type IngestSeq = string | number;

/**
 * The state of one part of the folding stage (its row of fold_state, reports/rollups.ts
 * FOLD_PARTS): what a report is planned with (readFoldState).
 */
export interface FoldState {
  watermark: IngestSeq;
  /** The adjustments' watermark (src/ledger/): those at or after it are their tail. */
  adjustWatermark: IngestSeq;
  coarseThrough: number;
  monthsThrough: number;
  /**
   * Whether the organisation named by SnapshotOptions.adjustmentsOf has an entry in the
   * adjustments ledger (src/ledger/), in this snapshot; undefined when not asked.
   */
  adjusted?: boolean;
}

export interface SnapshotOptions {
  /**
   * PostgreSQL: no parallel workers in this snapshot. A report that reads rollups is planned in
   * parallel once its row estimate is large enough, and starting the workers costs more than the
   * few thousand rows they would share. Reports from raw events alone keep their workers.
   */
  serial?: boolean;
  /**
   * The fold part whose state `fn` gets (reports/rollups.ts FOLD_PARTS; default 1, the part that
   * also folds usage): a report reads the part of its grain.
   */
  part?: number;
  /**
   * An organisation whose adjustments `fn` wants to know of (FoldState.adjusted): asked in the
   * same round trip as the state.
   */
  adjustmentsOf?: string;
}

/**
 * Runs `fn` in one snapshot, with the folding stage's state read in it: a REPEATABLE READ,
 * read-only transaction on PostgreSQL, a transaction on SQLite (its reads see one snapshot from
 * the first on), on `db`: callers pass a SQLite file's read connection (storage/db.ts readDb).
 * Inside a caller's
 * transaction, in that one. Reports and usage read the watermark, the rollups and the tail after
 * it this way (DESIGN §11), so that the folding stage committing meanwhile can neither hide an
 * event nor count it twice.
 */
export async function inSnapshot<T>(
  db: DbOrTrx,
  engine: Engine,
  fn: (db: DbOrTrx, fold: FoldState) => Promise<T>,
  options: SnapshotOptions = {},
): Promise<T> {
  if (db.isTransaction) {
    if (engine === 'postgres' && options.serial)
      await sql`SET LOCAL max_parallel_workers_per_gather = 0`.execute(db);
    return fn(db, await readFoldState(db, options.part, options.adjustmentsOf));
  }
  if (engine === 'postgres') return inPostgresSnapshot(db, fn, options);
  // SQLite, on the read connection when the caller passed it (a file's). It takes a file's
  // snapshot at the transaction's first read of it: the main file (the watermark, rollups and
  // usage) first, then the events file (storage/events-file.ts). Every event the main file's
  // watermark counts as folded committed before it, so the events read after it hold them all,
  // and the tail after the watermark is exactly what is not folded.
  return db
    .transaction()
    .execute(async (trx) => fn(trx, await readFoldState(trx, options.part, options.adjustmentsOf)));
}

/**
 * PostgreSQL: the transaction's start (deferred by the driver, postgres-snapshot.ts
 * SnapshotDriver), its setting and the folding stage's state go in one round trip (LAST_RESULT),
 * and `fn`'s result is answered before the commit, which ends a read-only transaction and only
 * gives the connection back to the pool. Under load every round trip of a report waits for a
 * turn of a busy event loop, so a report makes two (the state, the query) rather than five.
 */
function inPostgresSnapshot<T>(
  db: Kysely<Database>,
  fn: (db: DbOrTrx, fold: FoldState) => Promise<T>,
  options: SnapshotOptions,
): Promise<T> {
  const open = [
    ...(options.serial ? ['SET LOCAL max_parallel_workers_per_gather = 0'] : []),
    `SELECT watermark, coarse_through, months_through, adjust_watermark${adjustedColumn(options.adjustmentsOf)} FROM fold_state WHERE id = ${partId(options.part)}`,
  ];
  return new Promise<T>((resolve, reject) => {
    db.transaction()
      .setIsolationLevel('repeatable read')
      .setAccessMode('read only')
      .execute(async (trx) => {
        const { rows } = await trx.executeQuery<FoldStateRow>(
          CompiledQuery.raw(`${LAST_RESULT}${open.join('; ')}`),
        );
        resolve(await fn(trx, foldStateOf(rows[0])));
      })
      // Before the answer: the error (the transaction was rolled back). After it: the commit
      // failed, which wrote nothing (the pool drops a broken connection).
      .catch(reject);
  });
}

/** A fold part's id, checked: it goes into the text of a statement. */
function partId(part = 1): number {
  if (!Number.isSafeInteger(part) || part < 1) throw new Error(`not a fold part: ${part}`);
  return part;
}

/**
 * The state of a part of the folding stage (default 1) as a report reads it: the watermark, the
 * first day whose week rollup rows are not kept yet (rollups.ts coarseThroughAt) and the first
 * day whose events the month rows do not hold (rollups.ts monthsThroughAt).
 */
export async function readFoldState(db: DbOrTrx, part = 1, adjustmentsOf?: string): Promise<FoldState> {
  const row = await db
    .selectFrom('fold_state')
    .select(['watermark', 'coarse_through', 'months_through', 'adjust_watermark'])
    .$if(adjustmentsOf !== undefined, (q) =>
      q.select((eb) =>
        eb
          .exists(
            eb
              .selectFrom('adjustments')
              .select(sql`1`.as('one'))
              .where('org_id', '=', adjustmentsOf as string),
          )
          .as('adjusted'),
      ),
    )
    .where('id', '=', partId(part))
    .executeTakeFirst();
  return foldStateOf(row);
}

/**
 * The column that says whether organisation `orgId` has adjustments, for a statement sent as
 * text (inPostgresSnapshot): the id goes in as a string literal.
 */
function adjustedColumn(orgId: string | undefined): string {
  if (orgId === undefined) return '';
  return `, EXISTS (SELECT 1 FROM adjustments WHERE org_id = '${orgId.replaceAll("'", "''")}') AS adjusted`;
}

/**
 * The lowest watermark of all parts: the events at or after it are not folded into every part
 * yet (the tail /metrics shows).
 */
export async function lowestWatermark(db: DbOrTrx): Promise<IngestSeq> {
  const row = await db
    .selectFrom('fold_state')
    .select('watermark')
    .orderBy('watermark')
    .limit(1)
    .executeTakeFirst();
  return row?.watermark ?? 0;
}

type FoldStateRow = {
  watermark: IngestSeq;
  coarse_through: unknown;
  months_through: unknown;
  adjust_watermark: IngestSeq;
  adjusted?: unknown;
};

function foldStateOf(row: FoldStateRow | undefined): FoldState {
  return {
    watermark: row?.watermark ?? 0,
    adjustWatermark: row?.adjust_watermark ?? 0,
    coarseThrough: Number(row?.coarse_through ?? 0),
    monthsThrough: Number(row?.months_through ?? 0),
    // SQLite answers EXISTS with 0 or 1, PostgreSQL with a boolean.
    ...(row?.adjusted === undefined ? {} : { adjusted: Boolean(row.adjusted) }),
  };
}
