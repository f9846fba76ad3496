import type { Kysely } from 'kysely';

// Scheduled report e-mails: schedules (weekly or monthly) with their recipients, and the ledger
// that sends each recipient one e-mail per period, whichever process gets there first (its
// primary key, inserted in the transaction that queues the e-mail). E-mails gain an HTML part,
// attachments and extra headers (List-Unsubscribe), all optional.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('report_schedules')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('frequency', 'text', (c) => c.notNull())
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('report_schedules_org')
    .on('report_schedules')
    .columns(['org_id', 'id'])
    .execute();

  await db.schema
    .createTable('report_recipients')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('schedule_id', 'text', (c) => c.notNull())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('unsubscribed_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('report_recipients_schedule')
    .on('report_recipients')
    .columns(['schedule_id', 'email'])
    .unique()
    .execute();

  await db.schema
    .createTable('report_email_runs')
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('frequency', 'text', (c) => c.notNull())
    .addColumn('period', 'text', (c) => c.notNull())
    .addColumn('schedule_id', 'text', (c) => c.notNull())
    .addColumn('email_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('report_email_runs_pk', ['org_id', 'email', 'frequency', 'period'])
    .execute();

  await db.schema.alterTable('emails').addColumn('html', 'text').execute();
  await db.schema.alterTable('emails').addColumn('attachments', 'text').execute();
  await db.schema.alterTable('emails').addColumn('headers', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('emails').dropColumn('headers').execute();
  await db.schema.alterTable('emails').dropColumn('attachments').execute();
  await db.schema.alterTable('emails').dropColumn('html').execute();
  await db.schema.dropTable('report_email_runs').execute();
  await db.schema.dropTable('report_recipients').execute();
  await db.schema.dropTable('report_schedules').execute();
}
