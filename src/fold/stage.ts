import type { ServiceCtx } from '../context.js';
import { PARALLEL_FROM, foldBacklog } from './backlog.js';
import { FOLD_RETRY, FoldFailures, isTimeoutError, type FoldErrorCounts } from './failures.js';
import { FOLD_BATCH, type FoldOptions, type FoldResult } from './pass.js';

/**
 * The folding stage (DESIGN §11). Tracking commits events only; this stage reads the events
 * committed after its watermark, in commit order and in large batches, and in one transaction
 * adds them to the report rollups and the usage counts, writes their webhook messages, and
 * advances the watermark. A crash repeats a batch, never half of one; processes on one
 * PostgreSQL fold one at a time (an advisory lock held for the transaction).
 *
 * The stage folds in parts (reports/rollups.ts FOLD_PARTS), each with a watermark, a row of
 * fold_state and an advisory lock of its own: part 1 the rollups of six grains, usage and the
 * webhook messages, part 2 the rollups of the other two. A pass of several parts folds each from
 * its own watermark in its one transaction; on PostgreSQL a backlog folds each part in a pass of
 * its own, side by side (backlog.ts), so one per part at a time.
 *
 * The watermark is an `ingest_seq`: events with `ingest_seq >= watermark` are the tail, those
 * below it are folded.
 * - PostgreSQL: `ingest_seq` is the inserting transaction's id. A transaction id can commit
 *   after a larger one, so the stage folds only the ids below its snapshot's xmin (every
 *   transaction below it has ended: what it sees there is all there will ever be).
 * - SQLite: one writer at a time numbers its events after the largest stored, in commit order.
 *
 * This file is the loop (when to fold, waking, backing off); the rest of the folder:
 * - pass.ts one pass, atomic: plan.ts plans each part's range and closes weeks and days, then
 *   rollups.ts (in SQL) or reports/rollups.ts (in the service), usage.ts and messages.ts fold it;
 * - backlog.ts the parts side by side during a backlog; thread.ts and thread-worker.ts a SQLite
 *   file's passes in a thread of their own;
 * - tail.ts and tail-meter.ts the tail and the lag (/metrics, the ingest gate), failures.ts the
 *   failed passes; ingest-gate.ts holds backfills while the stage is too far behind.
 * Tracking never calls the stage: the service wakes it from tracking's commit listeners
 * (service.ts), so that the request path stays free of everything derived.
 */

export interface FoldStageOptions {
  /**
   * How long the loop waits after a pass that emptied the tail: when it found none, local
   * tracking wakes it earlier; when it folded some, it waits the whole time, so that the next
   * pass folds many events at once rather than each batch of the API alone. A pass that left a
   * backlog (a full batch) is followed by the next one at once.
   */
  idlePollMs?: number;
  batch?: number;
  /**
   * A pass failed in a way not seen since the stage last folded (FoldFailures): called once per
   * distinct failure, not on every retry.
   */
  onError?: (error: unknown) => void;
  /** A pass succeeded after `failures` failed ones. */
  onRecover?: (failures: number) => void;
  /** The waits after failed passes (default FOLD_RETRY). */
  retry?: { firstMs: number; mostMs: number };
  /**
   * Runs one pass (default: foldBacklog here; a SQLite file folds in a thread, thread.ts).
   */
  runPass?: (options: FoldOptions & { limit: number }) => Promise<FoldResult>;
  /** PostgreSQL: the tail from which a pass folds the parts at once (default PARALLEL_FROM). */
  parallelFrom?: number;
  /** The events from which a pass may defer week and month rows (FoldOptions.deferFrom). */
  deferFrom?: number;
}

/**
 * The folding stage of one process: a loop that folds as soon as there is a tail, and sleeps
 * `idlePollMs` when there is none, unless tracking in this process wakes it. Passes of one
 * process never overlap (a pass may fold its parts at once, foldBacklog); several processes
 * take turns (the advisory locks).
 */
export class FoldStage {
  private running = false;
  private loopDone: Promise<void> | null = null;
  private wakeUp: (() => void) | null = null;
  private woken = false;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly idlePollMs: number;
  private readonly batch: number;
  /** The events the next pass may take: `batch`, or less after passes that timed out. */
  private limit: number;
  private readonly onError: (error: unknown) => void;
  private readonly onRecover: (failures: number) => void;
  private readonly failures: FoldFailures;
  private readonly runPass: (options: FoldOptions & { limit: number }) => Promise<FoldResult>;
  private readonly deferFrom: number | undefined;

  constructor(
    private readonly ctx: ServiceCtx,
    options: FoldStageOptions = {},
  ) {
    this.idlePollMs = options.idlePollMs ?? 100;
    this.batch = options.batch ?? ctx.config.foldBatch ?? FOLD_BATCH[ctx.engine];
    this.limit = this.batch;
    this.onError = options.onError ?? (() => undefined);
    this.onRecover = options.onRecover ?? (() => undefined);
    this.failures = new FoldFailures(options.retry ?? FOLD_RETRY);
    const parallelFrom = options.parallelFrom ?? PARALLEL_FROM;
    this.runPass = options.runPass ?? ((pass) => foldBacklog(ctx, pass, parallelFrom));
    this.deferFrom = options.deferFrom;
  }

  /** Failed passes of this stage's loop so far, by kind. */
  get errors(): FoldErrorCounts {
    return { ...this.failures.counts };
  }

  /**
   * One pass, after the passes already asked of this process. A pass that outlasts the database's
   * statement timeout would do so again at every retry, and the stage would fold nothing while
   * the tail grows: after a timed-out pass the next ones take half as many events (down to one
   * transaction's), and the full `batch` again once a pass finds the tail folded.
   */
  foldNow(options: FoldOptions = {}): Promise<FoldResult> {
    const pass = this.queue.then(async () => {
      try {
        const deferFrom = this.deferFrom === undefined ? {} : { deferFrom: this.deferFrom };
        const result = await this.runPass({ limit: this.limit, ...deferFrom, ...options });
        if (!result.more) this.limit = this.batch;
        return result;
      } catch (error) {
        if (isTimeoutError(error)) this.limit = Math.max(1, Math.floor(this.limit / 2));
        throw error;
      }
    });
    this.queue = pass.catch(() => undefined);
    return pass;
  }

  /** Passes until everything committed before the call is folded. */
  async foldAll(): Promise<number> {
    let total = 0;
    for (;;) {
      const result = await this.foldNow();
      total += result.folded;
      if (!result.more) return total;
    }
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loopDone = this.loop();
  }

  wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wakeUp?.();
    await this.loopDone;
    await this.queue;
  }

  private async loop(): Promise<void> {
    while (this.running) {
      this.woken = false;
      let result: FoldResult | null = null;
      let retryMs = 0;
      const passStart = performance.now();
      try {
        result = await this.foldNow();
        const failed = this.failures.succeed();
        if (failed > 0) this.onRecover(failed);
      } catch (error) {
        // Every pass starts again from the watermark, so a failure repeats until its cause
        // goes: reported once, counted each time (/metrics), retried less and less often.
        const { report, waitMs } = this.failures.fail(error);
        if (report) this.onError(error);
        retryMs = waitMs;
      }
      // After a pass that emptied the tail, the stage waits before the next one:
      // - PostgreSQL: idlePollMs, whatever the pass took: tracking commits while a pass folds, so
      //   the stage keeps up with any rate it can fold.
      // - SQLite: as long as the pass took, at least idlePollMs. The main file has one writer, so
      //   its other writes (from the main thread) get at least half of it; under a backfill the
      //   tail and the passes grow, and a larger pass folds each event for less (a commit writes
      //   each rollup page it touched once). Figures in docs/benchmarks.md.
      // A full pass (a backlog past the batch) is followed by the next at once either way.
      const passMs = performance.now() - passStart;
      const wait = this.ctx.engine === 'sqlite' ? Math.max(this.idlePollMs, passMs) : this.idlePollMs;
      if (!this.running) break;
      if (result?.more) {
        // A backlog: the next pass at once, but after the writes that queued behind this one
        // (they wait for the connection; a pass taken straight away would go first).
        if (this.ctx.engine === 'sqlite') await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      const idle = result !== null && result.folded === 0;
      if (idle && this.woken) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, result === null ? Math.max(wait, retryMs) : wait);
        // Only an idle stage is woken early by tracking; stop() ends any wait.
        this.wakeUp = () => {
          if (idle || !this.running) {
            clearTimeout(timer);
            resolve();
          }
        };
      });
      this.wakeUp = null;
    }
  }
}
