import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

/** What the gate reads of the folding stage (tail.ts foldLag). */
export interface FoldLagReading {
  /**
   * The age of the next event or adjustment to fold, by the service's clock; 0 when the stage has
   * caught up.
   */
  lagMs: number;
  /** The lowest watermarks of the fold parts (events', adjustments'): the gate sees the stage move by them. */
  watermark: string;
}

export interface IngestGateTiming {
  /** How often the lag is read while batches wait (one read shared by every waiting batch). */
  checkEveryMs: number;
  /** The longest one batch waits; it is then stored whatever the lag. */
  maxWaitMs: number;
  /** A stage whose watermark has not moved for this long is not waited for at all. */
  stallMs: number;
}

export const INGEST_GATE_TIMING: IngestGateTiming = { checkEveryMs: 100, maxWaitMs: 10_000, stallMs: 30_000 };

/**
 * Backpressure for backfills (TALLY_INGEST_MAX_LAG_SECONDS; README "Backfills wait for the
 * folding stage"). A batch admitted while the folding stage is more than `maxLagMs` behind (the
 * age of the next event it folds) waits until it is back within it, at most `maxWaitMs`, and is
 * then stored as any other: nothing is refused and nothing is lost, a backfill only goes at the
 * pace the stage folds it. So its tail, and the time the stage needs to fold it once the backfill
 * ends, stay bounded, and so do the raw events reports read meanwhile and the time every
 * organisation's `event.created` messages wait to be written. Their delivery is not bounded by
 * it: the worker, sharing the machine with the backfill (on PostgreSQL, the database's CPU), fell
 * further behind than the fold (README "Benchmarks", bench:webhooks with BENCH_BACKFILL).
 *
 * A stage that does not move (stopped, failing, or not running anywhere) holds nothing: once the
 * watermark has stood still for `stallMs` while the lag is over the bound, batches go through at
 * once, and /metrics shows the lag growing.
 */
export class IngestGate {
  private reading: { at: number; value: Promise<FoldLagReading | null> } | null = null;
  private watermark: string | null = null;
  private movedAt = 0;
  private closed = false;

  constructor(
    private readonly read: () => Promise<FoldLagReading>,
    private readonly maxLagMs: number,
    private readonly timing: IngestGateTiming = INGEST_GATE_TIMING,
  ) {}

  /**
   * Waits while the stage is too far behind; resolves with the milliseconds waited (0 when it
   * was not). Never throws.
   */
  async admit(): Promise<number> {
    if (!(await this.behind())) return 0;
    const start = performance.now();
    for (;;) {
      const waited = performance.now() - start;
      if (waited >= this.timing.maxWaitMs) break;
      await sleep(Math.min(this.timing.checkEveryMs, this.timing.maxWaitMs - waited));
      if (!(await this.behind())) break;
    }
    return performance.now() - start;
  }

  /** Shutting down: the batches waiting go in at their next check, and no other waits. */
  close(): void {
    this.closed = true;
  }

  private async behind(): Promise<boolean> {
    if (this.closed) return false;
    const now = performance.now();
    if (this.reading === null || now - this.reading.at >= this.timing.checkEveryMs) {
      // The database away: the batch goes on, to meet the outage in its own writes (503).
      this.reading = { at: now, value: this.read().catch(() => null) };
    }
    const reading = await this.reading.value;
    if (reading === null || reading.lagMs <= this.maxLagMs) return false;
    if (reading.watermark !== this.watermark) {
      this.watermark = reading.watermark;
      this.movedAt = performance.now();
    }
    return performance.now() - this.movedAt < this.timing.stallMs;
  }
}
