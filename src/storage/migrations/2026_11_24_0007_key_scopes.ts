import type { Kysely } from 'kysely';

// Key scopes (DESIGN §3): `admin` (everything) or `ingest` (tracking and the task-type list).
// Every key created before scopes existed keeps full access, so the column defaults to admin.
// `last_used_at` (epoch ms) is what the dashboard's key list shows; it is written at most once a
// minute per key, so it is approximate by design.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('api_keys')
    .addColumn('scope', 'text', (c) => c.notNull().defaultTo('admin'))
    .execute();
  await db.schema.alterTable('api_keys').addColumn('last_used_at', 'bigint').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('api_keys').dropColumn('last_used_at').execute();
  await db.schema.alterTable('api_keys').dropColumn('scope').execute();
}
