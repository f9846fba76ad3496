import type { DbOrTrx, Engine } from '../storage/db.js';
import { closingDays, lagMsAt, readTail, tailHeadAt } from './tail.js';

/** Tails up to `countAlways` rows are counted at every scrape; longer ones every `recountMs`. */
export const TAIL_RECOUNT = { countAlways: 10_000, recountMs: 5_000 } as const;

export interface TailReading {
  events: number;
  /** Adjustments (src/ledger/) not folded yet. */
  adjustments: number;
  lagSeconds: number;
  closingDays: number;
}

/**
 * What /metrics reads of the tails at each scrape (`tally_fold_tail_events`,
 * `tally_fold_tail_adjustments`, `tally_fold_lag_seconds`): the lag from the older head of the
 * two tails, every time; the lengths counted every time while together they are short, and at
 * most every `recountMs` of the service's clock once they passed `countAlways` (TAIL_RECOUNT; the
 * last counts show meanwhile, and an empty tail shows 0 at once). Counting a long tail at every
 * scrape slows the stage it measures, by as much as the stage's own work on a frequently scraped
 * backlog (docs/benchmarks.md).
 */
export class TailMeter {
  private last: { events: number; adjustments: number; at: number } | null = null;

  constructor(
    private readonly db: DbOrTrx,
    private readonly engine: Engine,
    private readonly now: () => number,
    private readonly recount: { countAlways: number; recountMs: number } = TAIL_RECOUNT,
  ) {}

  async read(): Promise<TailReading> {
    const at = this.now();
    const last = this.last;
    const { countAlways, recountMs } = this.recount;
    const count = last === null || last.events + last.adjustments <= countAlways || at - last.at >= recountMs;
    const tail = await readTail(this.db, this.engine, count);
    // A tail not counted this time is 0 when empty (readTail), else shows its last count.
    const events = tail.events ?? last?.events ?? 0;
    const adjustments = tail.adjustments ?? last?.adjustments ?? 0;
    if (tail.headReceivedAt === null && tail.headRecordedAt === null) this.last = null;
    else if (count) this.last = { events, adjustments, at };
    else if (last !== null) this.last = { events, adjustments, at: last.at };
    const lagSeconds = lagMsAt(tailHeadAt(tail), at) / 1000;
    return { events, adjustments, lagSeconds, closingDays: await closingDays(this.db, at) };
  }
}
