import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** The folding stage's tail as /metrics reads it (fold/tail-meter.ts TailMeter, with the service's clock). */
export interface FoldTail {
  events: number;
  /** Adjustments (src/ledger/) not folded yet. */
  adjustments: number;
  /**
   * Seconds since the older of the first event of the tail (in commit order) was received and the
   * first adjustment of the adjustments' tail was recorded; 0 when both are empty.
   */
  lagSeconds: number;
  /** Days whose week or month rows the folding stage has still to build (fold/tail.ts closingDays). */
  closingDays: number;
}

/**
 * One registry per app, so several apps in one process (tests) do not collide. `foldTail`, when
 * given, is read at each scrape.
 */
export function createMetrics(
  foldTail?: () => Promise<FoldTail>,
  foldErrors?: () => { unavailable: number; failed: number },
) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'tally_' });
  const requests = new Counter({
    name: 'tally_http_requests_total',
    help: 'HTTP requests by method, route and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'tally_http_request_duration_seconds',
    help: 'HTTP request duration by route.',
    labelNames: ['route'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  const eventsTracked = new Counter({
    name: 'tally_events_tracked_total',
    help: 'Events stored by POST /v1/track and /v1/track/batch.',
    registers: [registry],
  });
  const ingestHeldSeconds = new Counter({
    name: 'tally_ingest_held_seconds_total',
    help: 'Seconds that POST /v1/track/batch requests waited for the folding stage to come back within TALLY_INGEST_MAX_LAG_SECONDS before storing their events.',
    registers: [registry],
  });
  const ingestHeldBatches = new Counter({
    name: 'tally_ingest_held_batches_total',
    help: 'POST /v1/track/batch requests that waited for the folding stage (TALLY_INGEST_MAX_LAG_SECONDS).',
    registers: [registry],
  });
  if (foldTail) {
    // A scrape while the database is away leaves the last values. The gauges of one scrape
    // share one read (prom-client collects them side by side).
    let reading: Promise<FoldTail | null> | null = null;
    const read = () => {
      reading ??= foldTail()
        .catch(() => null)
        .finally(() => {
          reading = null;
        });
      return reading;
    };
    new Gauge({
      name: 'tally_fold_tail_events',
      help: 'Events committed but not folded into rollups, usage and webhook messages yet (DESIGN §11).',
      registers: [registry],
      async collect() {
        const tail = await read();
        if (tail) this.set(tail.events);
      },
    });
    new Gauge({
      name: 'tally_fold_tail_adjustments',
      help: 'Adjustments of figures (reviews, restatements) recorded but not folded into rollups yet (DESIGN §11).',
      registers: [registry],
      async collect() {
        const tail = await read();
        if (tail) this.set(tail.adjustments);
      },
    });
    new Gauge({
      name: 'tally_fold_lag_seconds',
      help: 'Age of the next event or adjustment to fold (the older of the first of each tail in commit order), in seconds; 0 when the folding stage has caught up.',
      registers: [registry],
      async collect() {
        const tail = await read();
        if (tail) this.set(tail.lagSeconds);
      },
    });
    new Gauge({
      name: 'tally_fold_closing_days',
      help: 'Days whose week and month rollup rows the folding stage has still to build from their day rows (after a backfill, which leaves them to the day rows until it is folded); reports read those days from their day rows meanwhile, exact but slower. 0 when caught up.',
      registers: [registry],
      async collect() {
        const tail = await read();
        if (tail) this.set(tail.closingDays);
      },
    });
  }
  if (foldErrors) {
    new Counter({
      name: 'tally_fold_errors_total',
      help: "Failed passes of this process's folding stage, by kind: the database unavailable, or failed (a pass that fails again on every retry until its cause is fixed; logged once per distinct failure).",
      labelNames: ['kind'] as const,
      registers: [registry],
      collect() {
        const counts = foldErrors();
        this.reset();
        this.inc({ kind: 'unavailable' }, counts.unavailable);
        this.inc({ kind: 'failed' }, counts.failed);
      },
    });
  }
  return { registry, requests, duration, eventsTracked, ingestHeldSeconds, ingestHeldBatches };
}

export type Metrics = ReturnType<typeof createMetrics>;
