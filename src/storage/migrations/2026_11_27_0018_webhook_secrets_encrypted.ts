import type { Kysely } from 'kysely';

// Webhook signing secrets are encrypted at rest (AES-256-GCM, a key from the environment).
// `secret_key_id` names the key that sealed a row's `secret`; null means the row still holds the
// plaintext written before this migration. A migration cannot seal them itself: it never imports
// app code, and the key is not the database's to know. Start-up does it (webhooks/
// secret-storage.ts resealWebhookSecrets), for every row still null, idempotently; until then
// the worker signs with the plaintext as before.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('webhooks').addColumn('secret_key_id', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('webhooks').dropColumn('secret_key_id').execute();
}
