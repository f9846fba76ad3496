import type { Kysely } from 'kysely';

// Inputs of payback and ROI that the per-event figures do not hold: fixed costs (monthly
// recurring from a start month to an optional end month, or one-off on a date) and the
// organisation's planning settings (working hours per FTE-month, who gets alert e-mails).
// Money and hours are integer micro-units, months `YYYY-MM`, dates `YYYY-MM-DD`.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('fixed_costs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('amount_micros', 'bigint', (c) => c.notNull())
    .addColumn('start_month', 'text')
    .addColumn('end_month', 'text')
    .addColumn('date', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('fixed_costs_org').on('fixed_costs').columns(['org_id', 'id']).execute();

  await db.schema
    .createTable('planning_settings')
    .addColumn('org_id', 'text', (c) => c.primaryKey())
    .addColumn('fte_hours_per_month_micros', 'bigint', (c) => c.notNull())
    .addColumn('alert_emails', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('planning_settings').execute();
  await db.schema.dropTable('fixed_costs').execute();
}
