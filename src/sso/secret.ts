import type { ServiceCtx } from '../context.js';
import { SecretBoxError, type SecretBox } from '../crypto/secret-box.js';
import type { SsoConnectionsTable } from '../storage/schema.js';

// Single sign-on secrets are sealed with the box of the webhook secrets (crypto/secret-box.ts):
// the client secret of each connection, and the PKCE verifier of each sign-in in flight.

function boxOf(ctx: ServiceCtx): SecretBox {
  if (ctx.config.secretBox === null)
    throw new Error('no secret key is configured (crypto/secret-keys.ts withSecretBox)');
  return ctx.config.secretBox;
}

/** A connection's ciphertext opens in that organisation's row only. */
const secretContext = (orgId: string) => `sso_connections.client_secret:${orgId}`;
const verifierContext = (stateHash: string) => `sso_logins.code_verifier:${stateHash}`;

export function sealClientSecret(ctx: ServiceCtx, orgId: string, secret: string) {
  const box = boxOf(ctx);
  return { client_secret: box.seal(secret, secretContext(orgId)), secret_key_id: box.keyId };
}

/** The plaintext client secret; throws SecretBoxError when its key is not configured. */
export function openClientSecret(
  ctx: ServiceCtx,
  row: Pick<SsoConnectionsTable, 'org_id' | 'client_secret' | 'secret_key_id'>,
): string {
  if (row.secret_key_id === null) return row.client_secret;
  return boxOf(ctx).open(row.client_secret, secretContext(row.org_id));
}

export function sealVerifier(ctx: ServiceCtx, stateHash: string, verifier: string): string {
  return boxOf(ctx).seal(verifier, verifierContext(stateHash));
}

export function openVerifier(ctx: ServiceCtx, stateHash: string, sealed: string): string {
  return boxOf(ctx).open(sealed, verifierContext(stateHash));
}

/**
 * Seals again with the current key every client secret that another key sealed (`tally secrets
 * rotate`); each row is written only if it still holds what was read. `unreadable` names the
 * organisations (`sso:<org id>`) whose secret no configured key opens.
 */
export async function resealSsoSecrets(ctx: ServiceCtx): Promise<{ sealed: number; unreadable: string[] }> {
  const box = boxOf(ctx);
  const counts = { sealed: 0, unreadable: [] as string[] };
  const rows = await ctx.db
    .selectFrom('sso_connections')
    .select(['org_id', 'client_secret', 'secret_key_id'])
    .where((eb) => eb.or([eb('secret_key_id', 'is', null), eb('secret_key_id', '<>', box.keyId)]))
    .execute();
  for (const row of rows) {
    let plaintext: string;
    try {
      plaintext = openClientSecret(ctx, row);
    } catch (error) {
      if (!(error instanceof SecretBoxError)) throw error;
      counts.unreadable.push(`sso:${row.org_id}`);
      continue;
    }
    const written = await ctx.db
      .updateTable('sso_connections')
      .set(sealClientSecret(ctx, row.org_id, plaintext))
      .where('org_id', '=', row.org_id)
      .where('client_secret', '=', row.client_secret)
      .executeTakeFirst();
    if (Number(written.numUpdatedRows) > 0) counts.sealed++;
  }
  return counts;
}
