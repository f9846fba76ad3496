import type { Kysely } from 'kysely';

// Budgets on agent spend and the ledger of alerts sent (budget thresholds, forecasts, usage).
// An alert's primary key is what makes it once-only: it is inserted in the transaction that
// writes its webhook message and e-mails, so two workers racing on one database send it once.
// Money is integer micro-units, times epoch milliseconds, lists JSON text.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('budgets')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('scope_value', 'text')
    .addColumn('amount_micros', 'bigint', (c) => c.notNull())
    .addColumn('thresholds', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('budgets_org').on('budgets').columns(['org_id', 'id']).execute();

  await db.schema
    .createTable('alerts')
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('month', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('threshold', 'bigint', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('alerts_pk', ['org_id', 'subject', 'month', 'kind', 'threshold'])
    .execute();
  await db.schema.createIndex('alerts_recent').on('alerts').columns(['org_id', 'created_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('alerts').execute();
  await db.schema.dropTable('budgets').execute();
}
