import type { ServiceCtx } from '../context.js';
import { SecretBoxError, type SecretBox } from '../crypto/secret-box.js';
import type { WebhooksTable } from '../storage/schema.js';

/** Rows sealed or resealed per statement batch. */
const PAGE = 200;

/** The box of `ctx`; every process that touches secrets sets one up at start (crypto/secret-keys.ts). */
function boxOf(ctx: ServiceCtx): SecretBox {
  if (ctx.config.secretBox === null)
    throw new Error('no secret key is configured (crypto/secret-keys.ts withSecretBox)');
  return ctx.config.secretBox;
}

/** A webhook's ciphertext opens in this webhook's row only. */
const contextOf = (webhookId: string) => `webhooks.secret:${webhookId}`;

/** The columns that store a new webhook's secret, sealed with the current key. */
export function sealWebhookSecret(ctx: ServiceCtx, webhookId: string, secret: string) {
  const box = boxOf(ctx);
  return { secret: box.seal(secret, contextOf(webhookId)), secret_key_id: box.keyId };
}

/**
 * A webhook's secret, to sign with. A row without a key id still holds the plaintext written
 * before secrets were encrypted (or by an older instance during a rolling upgrade): it is used
 * as it is until start-up or `tally secrets rotate` seals it. Throws SecretBoxError when the
 * key that sealed it is not configured.
 */
export function openWebhookSecret(
  ctx: ServiceCtx,
  row: { id: string } & Pick<WebhooksTable, 'secret' | 'secret_key_id'>,
): string {
  if (row.secret_key_id === null) return row.secret;
  return boxOf(ctx).open(row.secret, contextOf(row.id));
}

export interface ResealCounts {
  /** Rows sealed (again) with the current key now. */
  sealed: number;
  /** Rows whose key is not configured: they stay as they are. */
  unreadable: string[];
}

/**
 * Seals with the current key every webhook secret that is not sealed with it: with `only:
 * 'plaintext'` only rows from before encryption (what start-up does, idempotently), else also
 * those sealed with a previous key (`tally secrets rotate`). Each row is written only if it
 * still holds what was read, so processes doing this at once never undo each other. Deleted
 * webhooks are included: their rows are in dumps too.
 */
export async function resealWebhookSecrets(
  ctx: ServiceCtx,
  { only }: { only: 'plaintext' | 'all' },
): Promise<ResealCounts> {
  const box = boxOf(ctx);
  const counts: ResealCounts = { sealed: 0, unreadable: [] };
  let after = '';
  for (;;) {
    const rows = await ctx.db
      .selectFrom('webhooks')
      .select(['id', 'secret', 'secret_key_id'])
      .where('id', '>', after)
      .where((eb) =>
        only === 'plaintext'
          ? eb('secret_key_id', 'is', null)
          : eb.or([eb('secret_key_id', 'is', null), eb('secret_key_id', '<>', box.keyId)]),
      )
      .orderBy('id')
      .limit(PAGE)
      .execute();
    const last = rows[rows.length - 1];
    if (last === undefined) return counts;
    after = last.id;
    for (const row of rows) {
      let plaintext: string;
      try {
        plaintext = openWebhookSecret(ctx, row);
      } catch (error) {
        if (!(error instanceof SecretBoxError)) throw error;
        counts.unreadable.push(row.id);
        continue;
      }
      const written = await ctx.db
        .updateTable('webhooks')
        .set(sealWebhookSecret(ctx, row.id, plaintext))
        .where('id', '=', row.id)
        .where('secret', '=', row.secret)
        .executeTakeFirst();
      if (Number(written.numUpdatedRows) > 0) counts.sealed++;
    }
  }
}
