import type { Kysely } from 'kysely';

// Dashboard sign-in sessions (DESIGN §10), kept in the database so every instance on one
// PostgreSQL sees the same sessions. `id` is the SHA-256 of the cookie's token: a database read
// does not give anyone a session. `flash` is a one-time notice shown by the next page. Times are
// epoch milliseconds.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('dashboard_sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('key_id', 'text', (c) => c.notNull())
    .addColumn('csrf_token', 'text', (c) => c.notNull())
    .addColumn('flash', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('dashboard_sessions_key')
    .on('dashboard_sessions')
    .columns(['key_id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('dashboard_sessions').execute();
}
