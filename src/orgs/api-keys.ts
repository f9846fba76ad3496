import { actorOf, requireRole } from '../accounts/authorize.js';
import { createHash } from 'node:crypto';
import { recordAudit } from '../audit/audit-log.js';
import type { OrgCtx, ServiceCtx } from '../context.js';
import { AppError, notFound, validationError } from '../errors.js';
import { randomAlnum } from '../ids.js';
import type { ApiKeyRow } from '../storage/schema.js';
import { getOrganization } from './organization-record.js';

/** `tally_live_<8>_<48>`: the 8-character part is the public key id. */
export const KEY_PATTERN = /^tally_live_([A-Za-z0-9]{8})_([A-Za-z0-9]{48})$/;

export function hashKey(apiKey: string): string {
  return createHash('sha256').update(apiKey).digest('hex');
}

/** DESIGN §3: `admin` may do everything, `ingest` only tracks and lists task types. */
export const KEY_SCOPES = ['admin', 'ingest'] as const;
export type KeyScope = (typeof KEY_SCOPES)[number];

export function isKeyScope(value: string): value is KeyScope {
  return (KEY_SCOPES as readonly string[]).includes(value);
}

const iso = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString());

export function keyView(row: ApiKeyRow) {
  return {
    id: row.id,
    org_id: row.org_id,
    name: row.name,
    scope: (isKeyScope(row.scope) ? row.scope : 'admin') as KeyScope,
    created_at: new Date(Number(row.created_at)).toISOString(),
    last_used_at: iso(row.last_used_at),
    revoked_at: iso(row.revoked_at),
  };
}

export type KeyView = ReturnType<typeof keyView>;

async function requireOrganization(ctx: ServiceCtx, orgId: string): Promise<void> {
  const org = await ctx.db
    .selectFrom('organizations')
    .select('id')
    .where('id', '=', orgId)
    .executeTakeFirst();
  if (!org) throw notFound(`Organisation ${orgId}`);
}

export async function createApiKey({
  ctx,
  orgId,
  name,
  scope = 'admin',
  createdByAccountId = null,
}: {
  ctx: ServiceCtx;
  orgId: string;
  name?: string;
  scope?: string;
  /** The person creating the key from the dashboard; null for the CLI. */
  createdByAccountId?: string | null;
}) {
  if (!isKeyScope(scope)) throw validationError('/scope', `must be one of ${KEY_SCOPES.join(', ')}`);
  await requireOrganization(ctx, orgId);
  // 62^8 ids make a collision rare; retry the few times one happens.
  for (let attempt = 0; attempt < 5; attempt++) {
    const id = randomAlnum(8);
    const taken = await ctx.db.selectFrom('api_keys').select('id').where('id', '=', id).executeTakeFirst();
    if (taken) continue;
    const apiKey = `tally_live_${id}_${randomAlnum(48)}`;
    const row: ApiKeyRow = {
      id,
      org_id: orgId,
      name: name ?? null,
      key_hash: hashKey(apiKey),
      created_at: ctx.clock.now().getTime(),
      revoked_at: null,
      scope,
      last_used_at: null,
      created_by_account_id: createdByAccountId,
    };
    await ctx.db.insertInto('api_keys').values(row).execute();
    return { key: keyView(row), api_key: apiKey };
  }
  throw new AppError('internal_error', 'could not find a free key id');
}

export async function listApiKeys({ ctx, orgId }: { ctx: ServiceCtx; orgId: string }) {
  // A mistyped organisation id must not look like an organisation without keys.
  await requireOrganization(ctx, orgId);
  const rows = await ctx.db
    .selectFrom('api_keys')
    .selectAll()
    .where('org_id', '=', orgId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map(keyView);
}

/** The organisation a key belongs to (key ids are unique across the service, DESIGN §3). */
export async function organizationOfKey({ ctx, keyId }: { ctx: ServiceCtx; keyId: string }): Promise<string> {
  const row = await ctx.db.selectFrom('api_keys').select('org_id').where('id', '=', keyId).executeTakeFirst();
  if (!row) throw notFound(`API key ${keyId}`);
  return row.org_id;
}

/**
 * Revokes one key of one organisation (a key of another organisation is not found), with its
 * audit entry in the same transaction (DESIGN §5). Revoking a revoked key changes nothing and
 * records nothing. `actorKeyId` is the acting key; null when the CLI acts.
 */
export async function revokeApiKey({
  ctx,
  orgId,
  keyId,
  actorKeyId = null,
}: {
  ctx: ServiceCtx;
  orgId: string;
  keyId: string;
  actorKeyId?: string | null;
}) {
  const org = await getOrganization({ ctx, id: orgId });
  return ctx.db.transaction().execute(async (trx) => {
    const row = await trx
      .selectFrom('api_keys')
      .selectAll()
      .where('id', '=', keyId)
      .where('org_id', '=', orgId)
      .executeTakeFirst();
    if (!row) throw notFound(`API key ${keyId}`);
    if (row.revoked_at !== null) return keyView(row);
    const at = ctx.clock.now().getTime();
    const revoked = { ...row, revoked_at: at };
    await trx
      .updateTable('api_keys')
      .set({ revoked_at: at })
      .where('id', '=', keyId)
      .where('org_id', '=', orgId)
      .execute();
    await recordAudit(
      { ...ctx, db: trx, org, actorKeyId },
      {
        action: 'api_key.revoked',
        target: `api_key:${keyId}`,
        before: keyView(row),
        after: keyView(revoked),
      },
    );
    return keyView(revoked);
  });
}

/** Revokes one key of the acting organisation (the dashboard's verb), audited as `revokeApiKey`. */
export async function revokeOrgApiKey({ ctx, input }: { ctx: OrgCtx; input: { keyId: string } }) {
  requireRole(ctx, 'admin');
  return revokeApiKey({ ctx, orgId: ctx.org.id, keyId: input.keyId, actorKeyId: ctx.actorKeyId });
}

/** Creates a key for the acting organisation, with an audit entry (the dashboard's verb). */
export async function createOrgApiKey({
  ctx,
  input,
}: {
  ctx: OrgCtx;
  input: { name?: string; scope: string };
}) {
  requireRole(ctx, 'admin');
  const actor = actorOf(ctx);
  const created = await createApiKey({
    ctx,
    orgId: ctx.org.id,
    name: input.name,
    scope: input.scope,
    createdByAccountId: actor.kind === 'person' ? actor.accountId : null,
  });
  await recordAudit(ctx, {
    action: 'api_key.created',
    target: `api_key:${created.key.id}`,
    before: null,
    after: created.key,
  });
  return created;
}
