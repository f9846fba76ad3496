import { Counter, Gauge, type Registry } from 'prom-client';
import type { DbOrTrx } from '../storage/db.js';
import { countHeldSpans, readCounters } from './held.js';
import { COUNTERS } from './sweeper.js';
import { countUnresolvedRuns } from './unresolved.js';

interface Totals {
  counters: Map<string, number>;
  held: number;
  unresolved: number;
}

/**
 * The /metrics of OpenTelemetry ingest (docs/opentelemetry.md, "Metrics"). Counters of this
 * process's exports, and service-wide figures read from the database at each scrape (the same on
 * every instance: the sweeper that counts them may run in another process).
 */
export function registerOtlpMetrics(registry: Registry, db: DbOrTrx) {
  const spans = new Counter({
    name: 'tally_otlp_spans_total',
    help: 'Spans received on POST /v1/traces by this process, by what became of them at once: ignored (no GenAI attribute: never written), held (waiting for the rest of their trace), run (part of a run settled now), outside (a GenAI span in no agent run), rejected (answered in partial_success: invalid ids or times, or a run refused).',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  const runs = new Counter({
    name: 'tally_otlp_runs_total',
    help: 'Agent runs settled by exports to this process: tracked (a new event), replayed (an exporter retry; counted once), unresolved (no task type; kept and listed until a mapping rule resolves it), rejected (refused by tracking: quota, occurred_at window, invalid).',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  const rejectedSpans = new Counter({
    name: 'tally_otlp_rejected_spans_total',
    help: 'Spans this process answered as rejected in partial_success.rejected_spans.',
    registers: [registry],
  });

  // One database read per scrape, shared by the figures below.
  let reading: Promise<Totals | null> | null = null;
  const read = () => {
    reading ??= Promise.all([readCounters(db), countHeldSpans(db), countUnresolvedRuns(db)])
      .then(([counters, held, unresolved]) => ({ counters, held, unresolved }))
      .catch(() => null)
      .finally(() => {
        reading = null;
      });
    return reading;
  };
  const fromDatabase = (
    name: string,
    help: string,
    value: (t: Totals) => number,
    kind: 'counter' | 'gauge',
  ) => {
    const collect = async function (this: Gauge) {
      const totals = await read();
      if (totals) this.set(value(totals));
    };
    // prom-client Counters cannot be set; a Gauge typed as a counter in the exposition can't
    // either, so service-wide totals are gauges named *_total (monotonic all the same).
    new Gauge({
      name,
      help: `${help}${kind === 'counter' ? ' Service-wide, only ever grows.' : ''}`,
      registers: [registry],
      collect,
    });
  };
  fromDatabase(
    'tally_otlp_dropped_traces_total',
    'Traces whose held spans formed no run when the hold bound (TALLY_OTLP_HOLD_SECONDS) passed: their agent span never came.',
    (t) => t.counters.get(COUNTERS.droppedTraces) ?? 0,
    'counter',
  );
  fromDatabase(
    'tally_otlp_dropped_spans_total',
    'Held spans dropped when the hold bound passed (in no run, or in a run tracking refused).',
    (t) => t.counters.get(COUNTERS.droppedSpans) ?? 0,
    'counter',
  );
  fromDatabase(
    'tally_otlp_late_spans_total',
    'Spans that came after their run was tracked (counted when the hold bound passed; their tokens are not in the event).',
    (t) => t.counters.get(COUNTERS.lateSpans) ?? 0,
    'counter',
  );
  fromDatabase(
    'tally_otlp_held_spans',
    'GenAI spans held now, waiting for the rest of their trace.',
    (t) => t.held,
    'gauge',
  );
  fromDatabase(
    'tally_otlp_unresolved_runs',
    'Runs waiting for a task type now (listed on the dashboard page OpenTelemetry and at GET /v1/otlp/unresolved-runs).',
    (t) => t.unresolved,
    'gauge',
  );
  return { spans, runs, rejectedSpans };
}

export type OtlpMetrics = ReturnType<typeof registerOtlpMetrics>;
