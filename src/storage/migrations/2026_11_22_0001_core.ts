import type { Kysely } from 'kysely';

// Column types chosen to mean the same on both engines: SQLite gives "bigint" INTEGER affinity
// and "double precision" REAL affinity.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('organizations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('plan', 'text', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('default_hourly_rate_micros', 'bigint', (c) => c.notNull())
    .addColumn('category_hourly_rates', 'text', (c) => c.notNull())
    .addColumn('outcome_credit', 'text', (c) => c.notNull())
    .addColumn('fallback_baseline_minutes', 'double precision')
    .addColumn('usd_exchange_rate', 'double precision')
    .addColumn('admin_emails', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('key_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('revoked_at', 'bigint')
    .execute();
  await db.schema.createIndex('api_keys_org').on('api_keys').columns(['org_id', 'created_at']).execute();

  await db.schema
    .createTable('task_type_overrides')
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('task_key', 'text', (c) => c.notNull())
    .addColumn('baseline_minutes_override', 'double precision', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('task_type_overrides_pk', ['org_id', 'task_key'])
    .execute();

  await db.schema
    .createTable('custom_task_types')
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('display_name', 'text', (c) => c.notNull())
    .addColumn('category', 'text', (c) => c.notNull())
    .addColumn('default_baseline_minutes', 'double precision', (c) => c.notNull())
    .addColumn('baseline_source', 'text')
    .addColumn('hourly_rate_micros', 'bigint')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('archived_at', 'bigint')
    .addPrimaryKeyConstraint('custom_task_types_pk', ['org_id', 'key'])
    .execute();

  await db.schema
    .createTable('audit_log')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('actor_key_id', 'text')
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('target', 'text', (c) => c.notNull())
    .addColumn('before', 'text')
    .addColumn('after', 'text')
    .addColumn('reason', 'text')
    .execute();
  await db.schema.createIndex('audit_log_org').on('audit_log').columns(['org_id', 'id']).execute();

  await db.schema
    .createTable('events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('task_type', 'text', (c) => c.notNull())
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('client_id', 'text')
    .addColumn('resolved_baseline_minutes', 'double precision', (c) => c.notNull())
    .addColumn('resolved_baseline_source', 'text', (c) => c.notNull())
    .addColumn('resolved_hourly_rate_micros', 'bigint', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('agent_duration_seconds', 'double precision')
    .addColumn('hours_saved_micros', 'bigint', (c) => c.notNull())
    .addColumn('cost_saved_micros', 'bigint', (c) => c.notNull())
    .addColumn('agent_cost_micros', 'bigint')
    .addColumn('resolved_cost_source', 'text', (c) => c.notNull())
    .addColumn('model', 'text')
    .addColumn('tokens_in', 'bigint')
    .addColumn('tokens_out', 'bigint')
    .addColumn('metadata', 'text')
    .addColumn('audit_sample', 'text')
    .addColumn('pricing', 'text')
    .addColumn('occurred_at', 'bigint', (c) => c.notNull())
    .addColumn('received_at', 'bigint', (c) => c.notNull())
    .addColumn('idempotency_key', 'text')
    .execute();
  await db.schema.createIndex('events_org_id').on('events').columns(['org_id', 'id']).execute();
  await db.schema
    .createIndex('events_org_occurred')
    .on('events')
    .columns(['org_id', 'occurred_at'])
    .execute();
  await db.schema
    .createIndex('events_org_agent')
    .on('events')
    .columns(['org_id', 'agent_id', 'id'])
    .execute();
  await db.schema
    .createIndex('events_org_task_type')
    .on('events')
    .columns(['org_id', 'task_type', 'id'])
    .execute();

  await db.schema
    .createTable('idempotency_keys')
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pk', ['org_id', 'key'])
    .execute();

  await db.schema
    .createTable('usage_monthly')
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('month', 'text', (c) => c.notNull())
    // Concurrent tracking transactions count in different shards (rows); usage sums them.
    .addColumn('shard', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('events', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('usage_monthly_pk', ['org_id', 'month', 'shard'])
    .execute();

  await db.schema
    .createTable('agents')
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('first_event_id', 'text', (c) => c.notNull())
    .addColumn('first_seen_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('agents_pk', ['org_id', 'agent_id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of [
    'agents',
    'usage_monthly',
    'idempotency_keys',
    'events',
    'audit_log',
    'custom_task_types',
    'task_type_overrides',
    'api_keys',
    'organizations',
  ]) {
    await db.schema.dropTable(table).execute();
  }
}
