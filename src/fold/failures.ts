import { isUnavailableError } from '../storage/db.js';

/** Failed passes of a stage, by kind, for /metrics (tally_fold_errors_total). */
export interface FoldErrorCounts {
  /** The database could not be reached (storage/db.ts isUnavailableError). */
  unavailable: number;
  /** Any other failure: a pass that fails again on retry until something changes. */
  failed: number;
}

/**
 * A statement the database cancelled for its timeout (PostgreSQL `statement_timeout`, 57014), or
 * one the client stopped waiting for (storage/db.ts boundQueries).
 */
export function isTimeoutError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '57014' || code === 'TALLY_DB_TIMEOUT';
}

/** The wait after the first failed pass; it doubles with each further one, up to the most. */
export const FOLD_RETRY = { firstMs: 1_000, mostMs: 60_000 } as const;

/**
 * What a stage remembers of its failing passes: how many in a row, which distinct failures were
 * reported (an error's code and message), and how long to wait before the next pass. A pass
 * that fails because the database is away waits FOLD_RETRY.firstMs (it comes back by itself);
 * any other failure backs off exponentially, since it repeats until the cause is fixed.
 */
export class FoldFailures {
  readonly counts: FoldErrorCounts = { unavailable: 0, failed: 0 };
  inARow = 0;
  private readonly reported = new Set<string>();

  constructor(private readonly retry: { firstMs: number; mostMs: number }) {}

  /** Records a failed pass; returns whether it is a distinct failure to report, and the wait. */
  fail(error: unknown): { report: boolean; waitMs: number } {
    this.inARow += 1;
    const unavailable = isUnavailableError(error);
    if (unavailable) this.counts.unavailable += 1;
    else this.counts.failed += 1;
    const e = error as { code?: unknown; message?: unknown } | null;
    const key = `${String(e?.code ?? '')} ${String(e?.message ?? error)}`;
    // A bounded memory: a failure whose message changes every time is reported at most 100 times
    // before the stage folds again.
    const report = !this.reported.has(key) && this.reported.size < 100;
    if (report) this.reported.add(key);
    const { firstMs, mostMs } = this.retry;
    const waitMs = unavailable ? firstMs : Math.min(mostMs, firstMs * 2 ** Math.min(this.inARow - 1, 16));
    return { report, waitMs };
  }

  /** A pass succeeded: returns how many failed before it (0: none). */
  succeed(): number {
    const failures = this.inARow;
    this.inARow = 0;
    this.reported.clear();
    return failures;
  }
}
