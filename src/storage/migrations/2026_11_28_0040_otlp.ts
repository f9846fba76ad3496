import type { Kysely } from 'kysely';

/**
 * OpenTelemetry ingest (docs/opentelemetry.md). Times are epoch milliseconds.
 *
 * - `otlp_held_spans`: GenAI spans whose run cannot be resolved yet (their local root has not
 *   arrived), kept in the database so that any instance can finish the run and an acknowledged
 *   export survives a crash. `span` is the span as JSON (only what a run needs).
 * - `otlp_done_traces`: traces whose runs were tracked, for as long as spans of them are held:
 *   a span arriving after its run is counted as late instead of waiting for nothing.
 * - `otlp_mapping_rules`: an organisation's rules from span and resource attributes to a task
 *   type or a client. Absent parts are '' rather than NULL, so the unique index holds on both
 *   engines.
 * - `otlp_unresolved_runs`: runs whose task type could not be resolved, kept until a mapping rule
 *   resolves them or they are dismissed. `input` is the track body without its task type.
 * - `otlp_counters`: totals counted by whichever process sweeps held spans, so that /metrics of
 *   any instance shows them.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('otlp_held_spans')
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('trace_id', 'text', (c) => c.notNull())
    .addColumn('span_id', 'text', (c) => c.notNull())
    .addColumn('parent_span_id', 'text', (c) => c.notNull())
    .addColumn('received_at', 'bigint', (c) => c.notNull())
    .addColumn('span', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('otlp_held_spans_pk', ['org_id', 'trace_id', 'span_id'])
    .execute();
  await db.schema
    .createIndex('otlp_held_spans_received')
    .on('otlp_held_spans')
    .columns(['received_at'])
    .execute();

  await db.schema
    .createTable('otlp_done_traces')
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('trace_id', 'text', (c) => c.notNull())
    .addColumn('done_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('otlp_done_traces_pk', ['org_id', 'trace_id'])
    .execute();
  await db.schema.createIndex('otlp_done_traces_at').on('otlp_done_traces').columns(['done_at']).execute();

  await db.schema
    .createTable('otlp_mapping_rules')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('field', 'text', (c) => c.notNull())
    .addColumn('attribute', 'text', (c) => c.notNull())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('task_type', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('otlp_mapping_rules_match')
    .on('otlp_mapping_rules')
    .columns(['org_id', 'kind', 'field', 'attribute', 'value'])
    .unique()
    .execute();

  await db.schema
    .createTable('otlp_unresolved_runs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('trace_id', 'text', (c) => c.notNull())
    .addColumn('span_id', 'text', (c) => c.notNull())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('facts', 'text', (c) => c.notNull())
    .addColumn('input', 'text', (c) => c.notNull())
    .addColumn('occurred_at', 'bigint', (c) => c.notNull())
    .addColumn('received_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('otlp_unresolved_runs_span')
    .on('otlp_unresolved_runs')
    .columns(['org_id', 'trace_id', 'span_id'])
    .unique()
    .execute();
  await db.schema
    .createIndex('otlp_unresolved_runs_org')
    .on('otlp_unresolved_runs')
    .columns(['org_id', 'id'])
    .execute();

  await db.schema
    .createTable('otlp_counters')
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('value', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('otlp_counters_pk', ['org_id', 'name'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of [
    'otlp_counters',
    'otlp_unresolved_runs',
    'otlp_mapping_rules',
    'otlp_done_traces',
    'otlp_held_spans',
  ]) {
    await db.schema.dropTable(table).execute();
  }
}
