import type { DbOrTrx, Engine } from '../storage/db.js';
import { closingDays, lagMsAt, readTail } from './tail.js';

/** A tail up to `countAlways` events is counted at every scrape; a longer one every `recountMs`. */
export const TAIL_RECOUNT = { countAlways: 10_000, recountMs: 5_000 } as const;

/**
 * What /metrics reads of the tail at each scrape (`tally_fold_tail_events`,
 * `tally_fold_lag_seconds`): the lag from the head of the tail, every time; the length counted
 * every time while it is short, and at most every `recountMs` of the service's clock once it
 * passed `countAlways` (TAIL_RECOUNT; the last count shows meanwhile, and an empty tail shows 0
 * at once). Counting a long tail at every scrape slows the stage it measures, by as much as the
 * stage's own work on a frequently scraped backlog (docs/benchmarks.md).
 */
export class TailMeter {
  private last: { events: number; at: number } | null = null;

  constructor(
    private readonly db: DbOrTrx,
    private readonly engine: Engine,
    private readonly now: () => number,
    private readonly recount: { countAlways: number; recountMs: number } = TAIL_RECOUNT,
  ) {}

  async read(): Promise<{ events: number; lagSeconds: number; closingDays: number }> {
    const at = this.now();
    const last = this.last;
    const { countAlways, recountMs } = this.recount;
    const count = last === null || last.events <= countAlways || at - last.at >= recountMs;
    const tail = await readTail(this.db, this.engine, count);
    if (tail.headReceivedAt === null) this.last = null;
    else if (tail.events !== null) this.last = { events: tail.events, at };
    const lagSeconds = lagMsAt(tail.headReceivedAt, at) / 1000;
    return { events: this.last?.events ?? 0, lagSeconds, closingDays: await closingDays(this.db, at) };
  }
}
