import { sql } from 'kysely';
import type { DbOrTrx, Engine } from '../storage/db.js';

/** The first key of the advisory locks of traces (beside the capped-plan and fold locks, 7311001…). */
const TRACE_LOCK_CLASS = 7_311_010;

/**
 * Traces being settled or held by this process, first come first served: an export waits for
 * the earlier exports of its traces in this process before it opens its transaction, so a
 * trace's exports take its database lock in the order they arrived, and none holds a
 * connection while it only waits for another export of the same process.
 */
export class TraceQueue {
  private readonly tails = new Map<string, Promise<void>>();

  /** Waits for the earlier holders of any of `keys`; resolves with the release. */
  async acquire(keys: string[]): Promise<() => void> {
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    const before: Promise<void>[] = [];
    // Queued at once (no await before): the order of the calls is the order of the holders.
    for (const key of new Set(keys)) {
      const tail = this.tails.get(key);
      if (tail) before.push(tail);
      this.tails.set(key, mine);
    }
    await Promise.all(before);
    return () => {
      for (const key of keys) if (this.tails.get(key) === mine) this.tails.delete(key);
      release();
    };
  }
}

/**
 * Locks traces for the rest of the transaction `trx`, so that no other instance reads, holds
 * or settles their spans meanwhile. PostgreSQL: an advisory lock per trace, taken in the order of
 * their keys so that two exports never wait for each other in a circle. SQLite: its one writer
 * serialises the transactions that write the events file; a write at the start takes that lock
 * before anything is read (a deferred transaction would read first, and another process could
 * commit in between).
 */
export async function lockTraces(trx: DbOrTrx, engine: Engine, orgId: string, traceIds: string[]) {
  if (traceIds.length === 0) return;
  if (engine === 'sqlite') {
    await sql`DELETE FROM otlp_done_traces WHERE 0`.execute(trx);
    return;
  }
  const keys = traceIds.map((t) => `${orgId}:${t}`);
  await sql`
    SELECT pg_advisory_xact_lock(${TRACE_LOCK_CLASS}, h)
    FROM (SELECT DISTINCT hashtext(current_schema() || k) AS h FROM unnest(${keys}::text[]) AS k ORDER BY h OFFSET 0) AS locks`.execute(
    trx,
  );
}

const queues = new WeakMap<object, TraceQueue>();

/** The queue of the traces of one database, shared by every export and sweep of the process. */
export function traceQueueOf(db: object): TraceQueue {
  let queue = queues.get(db);
  if (!queue) {
    queue = new TraceQueue();
    queues.set(db, queue);
  }
  return queue;
}

const RETRYABLE = new Set(['40001', '40P01']);

/**
 * `work` again (three tries in all) when PostgreSQL aborted it for a deadlock or a serialisation
 * failure, or SQLite found the file locked by another process past its busy timeout.
 */
export async function withRetries<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code;
      const retryable = typeof code === 'string' && (RETRYABLE.has(code) || code.startsWith('SQLITE_BUSY'));
      if (attempt >= 3 || !retryable) throw error;
    }
  }
}
