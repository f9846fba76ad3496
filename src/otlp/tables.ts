import type { Kysely, Transaction } from 'kysely';
import type { DbOrTrx } from '../storage/db.js';
import type { Database } from '../storage/schema.js';

/** The tables of migration 2026_11_28_0040_otlp (times are epoch milliseconds). */
export type OtlpTables = {
  otlp_held_spans: {
    org_id: string;
    trace_id: string;
    span_id: string;
    /** '' for a span without a parent. */
    parent_span_id: string;
    received_at: number;
    /** A HeldSpan as JSON (runs.ts). */
    span: string;
  };
  otlp_done_traces: { org_id: string; trace_id: string; done_at: number };
  otlp_mapping_rules: {
    id: string;
    org_id: string;
    kind: string;
    field: string;
    /** '' when the rule names no attribute. */
    attribute: string;
    /** '' for a client rule. */
    value: string;
    /** '' for a client rule. */
    task_type: string;
    created_at: number;
  };
  otlp_unresolved_runs: {
    id: string;
    org_id: string;
    trace_id: string;
    span_id: string;
    agent_id: string;
    reason: string;
    /** RunFacts as JSON: what mapping rules match on. */
    facts: string;
    /** The track body without its task type, as JSON. */
    input: string;
    occurred_at: number;
    received_at: number;
  };
  otlp_counters: { org_id: string; name: string; value: number };
};

export type OtlpDb = Kysely<Database & OtlpTables> | Transaction<Database & OtlpTables>;

/**
 * The database with the OpenTelemetry tables in its type. Kept out of storage/schema.ts so the
 * feature stays in its folder; `withTables` only widens the type (same connection, same
 * transaction).
 */
export function otlpDb(db: DbOrTrx): OtlpDb {
  return db.withTables<OtlpTables>();
}
