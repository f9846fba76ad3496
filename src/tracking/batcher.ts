import { PostgresAdapter } from 'kysely';
import { isUnavailableError, type Db } from '../storage/db.js';
import { CommitListeners } from './commit-listeners.js';
import type { TrackJob, TrackResult } from './job.js';
import { EVENTS_PER_WRITE, KnownAgents } from './event-writes.js';
import { processBatch } from './pipeline.js';

interface Pending {
  job: TrackJob;
  resolve(result: TrackResult): void;
  reject(error: unknown): void;
}

const MAX_BATCH = 500;
const RETRYABLE = new Set(['40001', '40P01']);

/**
 * Serialisation failures and deadlocks on PostgreSQL; on SQLite, a batch that read before
 * another process committed a write (SQLITE_BUSY_SNAPSHOT is not covered by busy_timeout).
 */
function isRetryable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (RETRYABLE.has(code) || code.startsWith('SQLITE_BUSY'));
}

/**
 * Group commit: track calls that arrive while a transaction is open wait and go together into
 * the next one. Each call is answered only after its transaction commits, so an acknowledged
 * event is durable, while one commit (one fsync on PostgreSQL) serves many events.
 */
export class TrackBatcher {
  private queue: Pending[] = [];
  private scheduled = false;
  /** Transactions open now; at most maxInFlight (1 on SQLite, whose batches share one connection). */
  private inFlight = 0;
  /** The agents of the events this batcher committed (event-writes.ts). */
  private readonly knownAgents = new KnownAgents();
  /** Told of each call whose event committed, before the call answers. */
  readonly committed = new CommitListeners();

  private readonly postgres: boolean;

  constructor(
    private readonly db: Db,
    private readonly maxInFlight = 1,
  ) {
    this.postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  }

  /** Resolves once the job's event committed and the commit listeners are done. */
  async submit(job: TrackJob): Promise<TrackResult> {
    const result = await new Promise<TrackResult>((resolve, reject) => {
      this.queue.push({ job, resolve, reject });
      this.schedule();
    });
    if (!result.replayed) await this.committed.notify();
    return result;
  }

  /** Starts a batch on the next turn of the event loop, so calls arriving together share it. */
  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.maxInFlight || this.queue.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (this.inFlight >= this.maxInFlight || this.queue.length === 0) return;
      this.inFlight++;
      void this.run(this.queue.splice(0, MAX_BATCH)).finally(() => {
        this.inFlight--;
        this.schedule();
      });
      this.schedule();
    });
  }

  private async run(batch: Pending[]): Promise<void> {
    let outcomes;
    try {
      outcomes = await this.commit(batch.map((p) => p.job));
    } catch (error) {
      if (batch.length > 1 && !isUnavailableError(error)) {
        // The group shared one transaction, so one event the database refuses rolled back all
        // of them: each half goes again in its own, down to the event that fails alone
        // (a few transactions per bad event, none while every event is storable).
        const half = Math.ceil(batch.length / 2);
        await this.run(batch.slice(0, half));
        await this.run(batch.slice(half));
        return;
      }
      for (const p of batch) p.reject(error);
      return;
    }
    batch.forEach((p, i) => {
      const outcome = outcomes[i];
      if (outcome === undefined) p.reject(new Error('no outcome for a tracked event'));
      else if ('ok' in outcome) {
        // Committed: the event's agent is stored.
        this.knownAgents.add(p.job.ctx.org.id, p.job.input.agent_id);
        p.resolve(outcome.ok);
      } else if ('error' in outcome) p.reject(outcome.error);
      else this.queue.push(p);
    });
  }

  /** A transaction that raced another instance's may be aborted; run it again then. */
  private async commit(jobs: TrackJob[]) {
    const oneWrite = this.postgres && jobs.length <= EVENTS_PER_WRITE && jobs.every(writesOnce);
    for (let attempt = 1; ; attempt++) {
      try {
        // On PostgreSQL a batch without idempotency keys or a hard cap writes in one statement
        // (the events and their new agents, event-writes.ts) after its reads, if any (the
        // assumption history is usually kept in the process, assumptions/history.ts), which a READ COMMITTED
        // transaction would not make any more consistent: without BEGIN and COMMIT it saves two
        // round trips, and the statement commits all of it or nothing.
        if (oneWrite) return await processBatch(this.db, jobs, this.knownAgents);
        return await this.db.transaction().execute((trx) => processBatch(trx, jobs, this.knownAgents));
      } catch (error) {
        if (attempt >= 3 || !isRetryable(error)) throw error;
      }
    }
  }
}

/** A call whose batch needs no more than its one write: no key to claim, no cap to count. */
const writesOnce = (job: TrackJob) =>
  job.idempotencyKey === null && !job.ctx.config.plans[job.ctx.org.plan].hard_cap;

const batchers = new WeakMap<Db, TrackBatcher>();

/**
 * One batcher per database handle, so every route and verb using it shares the queue. Its batches
 * commit on `tracker` (storage/db.ts trackDb: a SQLite file's track connection, which writes the
 * events file only).
 */
export function batcherFor(db: Db, tracker: Db = db): TrackBatcher {
  let batcher = batchers.get(db);
  if (!batcher) {
    // PostgreSQL: a few transactions overlap, so one waiting on its commit does not idle the rest.
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    batcher = new TrackBatcher(tracker, postgres ? 3 : 1);
    batchers.set(db, batcher);
  }
  return batcher;
}
