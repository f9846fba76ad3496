import { createHash, timingSafeEqual } from 'node:crypto';
import type { ServiceCtx } from '../context.js';
import { AppError, notFound } from '../errors.js';
import { randomAlnum } from '../ids.js';
import type { CompiledQuery } from 'kysely';
import type { DbOrTrx } from '../storage/db.js';
import type { ApiKeyRow } from '../storage/schema.js';
import { organizationFromRow, type Organization } from './organizations.js';

/** `tally_live_<8>_<48>`: the 8-character part is the public key id. */
const KEY_PATTERN = /^tally_live_([A-Za-z0-9]{8})_([A-Za-z0-9]{48})$/;

export function hashKey(apiKey: string): string {
  return createHash('sha256').update(apiKey).digest('hex');
}

export function keyView(row: ApiKeyRow) {
  return {
    id: row.id,
    org_id: row.org_id,
    name: row.name,
    created_at: new Date(Number(row.created_at)).toISOString(),
    revoked_at: row.revoked_at === null ? null : new Date(Number(row.revoked_at)).toISOString(),
  };
}

export async function createApiKey({ ctx, orgId, name }: { ctx: ServiceCtx; orgId: string; name?: string }) {
  const org = await ctx.db
    .selectFrom('organizations')
    .select('id')
    .where('id', '=', orgId)
    .executeTakeFirst();
  if (!org) throw notFound(`Organisation ${orgId}`);
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
    };
    await ctx.db.insertInto('api_keys').values(row).execute();
    return { key: keyView(row), api_key: apiKey };
  }
  throw new AppError('internal_error', 'could not find a free key id');
}

export async function listApiKeys({ ctx, orgId }: { ctx: ServiceCtx; orgId: string }) {
  // A mistyped organisation id must not look like an organisation without keys.
  const org = await ctx.db
    .selectFrom('organizations')
    .select('id')
    .where('id', '=', orgId)
    .executeTakeFirst();
  if (!org) throw notFound(`Organisation ${orgId}`);
  const rows = await ctx.db
    .selectFrom('api_keys')
    .selectAll()
    .where('org_id', '=', orgId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map(keyView);
}

export async function revokeApiKey({ ctx, keyId }: { ctx: ServiceCtx; keyId: string }) {
  const row = await ctx.db.selectFrom('api_keys').selectAll().where('id', '=', keyId).executeTakeFirst();
  if (!row) throw notFound(`API key ${keyId}`);
  if (row.revoked_at === null) {
    const at = ctx.clock.now().getTime();
    await ctx.db.updateTable('api_keys').set({ revoked_at: at }).where('id', '=', keyId).execute();
    row.revoked_at = at;
  }
  return keyView(row);
}

function keyWithOrganizationQuery(db: DbOrTrx, keyId: string) {
  return db
    .selectFrom('api_keys')
    .innerJoin('organizations', 'organizations.id', 'api_keys.org_id')
    .selectAll('organizations')
    .select(['api_keys.id as key_id', 'api_keys.key_hash', 'api_keys.revoked_at'])
    .where('api_keys.id', '=', keyId);
}

type KeyWithOrganization = Awaited<
  ReturnType<ReturnType<typeof keyWithOrganizationQuery>['executeTakeFirst']>
>;
const compiledLookups = new WeakMap<DbOrTrx, CompiledQuery>();

/**
 * Runs on every request: the query is built and compiled once per database handle, then run
 * with the key id as its only parameter.
 */
async function findKeyWithOrganization(db: DbOrTrx, keyId: string): Promise<KeyWithOrganization> {
  let compiled = compiledLookups.get(db);
  if (!compiled) {
    compiled = keyWithOrganizationQuery(db, '').compile();
    compiledLookups.set(db, compiled);
  }
  const result = await db.executeQuery<NonNullable<KeyWithOrganization>>({
    ...compiled,
    parameters: [keyId],
  });
  return result.rows[0];
}

export interface Authenticated {
  org: Organization;
  keyId: string;
}

/** Resolves a bearer token to its organisation, or throws the spec's 401 codes. */
export async function authenticate({
  ctx,
  token,
}: {
  ctx: Pick<ServiceCtx, 'db'>;
  token: string;
}): Promise<Authenticated> {
  const match = KEY_PATTERN.exec(token);
  if (!match?.[1]) throw new AppError('invalid_api_key', 'The API key is malformed or unknown.');
  const row = await findKeyWithOrganization(ctx.db, match[1]);
  const presented = Buffer.from(hashKey(token), 'hex');
  if (!row || !timingSafeEqual(presented, Buffer.from(row.key_hash, 'hex'))) {
    throw new AppError('invalid_api_key', 'The API key is malformed or unknown.');
  }
  if (row.revoked_at !== null) throw new AppError('key_revoked', 'The API key was revoked.');
  return { org: organizationFromRow(row), keyId: row.key_id };
}
