import type { Kysely } from 'kysely';

// Closed months (src/periods/). `periods` holds one row per organisation and month that was ever
// closed: its status and the statement in force; the primary key makes a close once-only, the
// status update (`WHERE status = 'open'`) makes a second close of a closed month fail.
// `period_statements` keeps every statement ever frozen, reopened ones too, never updated except
// for the reopening's stamp. Times are epoch milliseconds, the statement JSON text.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('periods')
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('month', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('statement_id', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('periods_pk', ['org_id', 'month'])
    .execute();

  await db.schema
    .createTable('period_statements')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('month', 'text', (c) => c.notNull())
    .addColumn('closed_at', 'bigint', (c) => c.notNull())
    .addColumn('closed_by', 'text')
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('statement', 'text', (c) => c.notNull())
    .addColumn('reopened_at', 'bigint')
    .addColumn('reopened_by', 'text')
    .addColumn('reopen_reason', 'text')
    .execute();
  await db.schema
    .createIndex('period_statements_month')
    .on('period_statements')
    .columns(['org_id', 'month', 'id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('period_statements').execute();
  await db.schema.dropTable('periods').execute();
}
