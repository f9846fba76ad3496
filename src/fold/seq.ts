import { sql, type RawBuilder } from 'kysely';
import type { Engine } from '../storage/db.js';
import type { IngestSeq } from '../storage/snapshot.js';

/** A position in commit order (storage/snapshot.ts): xid8 as text on PostgreSQL, a number on SQLite. */
export type Seq = IngestSeq;

export function seqEqual(a: Seq, b: Seq): boolean {
  return BigInt(a) === BigInt(b);
}

export function seqMin(a: Seq, b: Seq): Seq {
  return BigInt(a) <= BigInt(b) ? a : b;
}

/** The next position after `seq`, in the engine's type (xid8 arrives as text). */
export function seqAfter(seq: Seq): Seq {
  return typeof seq === 'number' ? seq + 1 : (BigInt(seq) + 1n).toString();
}

/**
 * `ingest_seq >= watermark` with the watermark as a value: PostgreSQL then estimates from the
 * index that few rows match (with a subquery it guesses a third of the table, and a LIMIT 1
 * may then scan the table from its start).
 */
export function afterMark(engine: Engine, watermark: Seq): RawBuilder<unknown> {
  return engine === 'postgres'
    ? sql`ingest_seq >= ${String(watermark)}::xid8`
    : sql`ingest_seq >= ${watermark}`;
}
