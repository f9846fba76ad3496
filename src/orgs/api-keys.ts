import { createHash, hash, timingSafeEqual } from 'node:crypto';
import { CompiledQuery, PostgresAdapter, sql } from 'kysely';
import { recordAudit } from '../audit/audit-log.js';
import type { OrgCtx, ServiceCtx } from '../context.js';
import { AppError, notFound, validationError } from '../errors.js';
import { randomAlnum } from '../ids.js';
import { snapshotReader, type DbOrTrx } from '../storage/db.js';
import { CompiledTexts } from '../storage/insert-rows.js';
import type { ApiKeyRow } from '../storage/schema.js';
import { getOrganization, organizationFromRow, type Organization } from './organizations.js';

/** `tally_live_<8>_<48>`: the 8-character part is the public key id. */
const KEY_PATTERN = /^tally_live_([A-Za-z0-9]{8})_([A-Za-z0-9]{48})$/;

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
}: {
  ctx: ServiceCtx;
  orgId: string;
  name?: string;
  scope?: string;
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
  const created = await createApiKey({ ctx, orgId: ctx.org.id, name: input.name, scope: input.scope });
  await recordAudit(ctx, {
    action: 'api_key.created',
    target: `api_key:${created.key.id}`,
    before: null,
    after: created.key,
  });
  return created;
}

const lastUseWritten = new Map<string, number>();
const LAST_USE_EVERY_MS = 60_000;

/**
 * Notes that a key was used, at most once a minute per key and process: a write per request
 * would put an UPDATE on the tracking path. Failures are ignored; the figure is informative.
 */
export function noteKeyUse(ctx: Pick<ServiceCtx, 'db' | 'clock'>, keyId: string): void {
  const now = ctx.clock.now().getTime();
  const last = lastUseWritten.get(keyId);
  if (last !== undefined && now - last < LAST_USE_EVERY_MS && now >= last) return;
  if (lastUseWritten.size >= 10_000) lastUseWritten.clear();
  lastUseWritten.set(keyId, now);
  ctx.db
    .updateTable('api_keys')
    .set({ last_used_at: now })
    .where('id', '=', keyId)
    .execute()
    .catch(() => undefined);
}

/** The organisation's columns a key lookup reads (all of them; see organizationOf). */
const ORGANIZATION_FIELDS = [
  'id',
  'name',
  'plan',
  'currency',
  'default_hourly_rate_micros',
  'category_hourly_rates',
  'outcome_credit',
  'fallback_baseline_minutes',
  'usd_exchange_rate',
  'admin_emails',
  'created_at',
] as const;

/**
 * PostgreSQL: the organisation's task-type overrides, `[[task_key, minutes], …]` as JSON text,
 * read with its key so that tracking need not read them in a round trip of its own
 * (tracking/pipeline.ts). SQLite reads them in the track transaction, where they cost no round
 * trip.
 */
const OVERRIDES_JSON = sql<OverridesJson>`(
  SELECT COALESCE(json_agg(json_build_array(o.task_key, o.baseline_minutes_override)), '[]')::text
  FROM task_type_overrides o WHERE o.org_id = organizations.id)`;
type OverridesJson = string | null;

function keysWithOrganizationQuery(db: DbOrTrx, keyIds: string[]) {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  return (
    db
      .selectFrom('api_keys')
      .innerJoin('organizations', 'organizations.id', 'api_keys.org_id')
      // Named columns, not `organizations.*`: the statement is prepared (see storage/db.ts).
      .select(ORGANIZATION_FIELDS.map((field) => `organizations.${field}` as const))
      .select(['api_keys.id as key_id', 'api_keys.key_hash', 'api_keys.revoked_at', 'api_keys.scope'])
      .select((postgres ? OVERRIDES_JSON : sql<OverridesJson>`NULL`).as('overrides'))
      .where('api_keys.id', 'in', keyIds)
  );
}

type KeyWithOrganization = Awaited<
  ReturnType<ReturnType<typeof keysWithOrganizationQuery>['execute']>
>[number];

/** Lookups of up to this many keys at once keep their compiled text (see lookupText). */
const MAX_KEPT_LOOKUPS = 32;
const lookupTexts = new CompiledTexts<number>();

/**
 * The text of the lookup of `count` keys, compiled once per adapter: its only parameters are the
 * key ids, and building and compiling it (some 15 µs) ran on every turn of the event loop.
 */
function lookupText(db: DbOrTrx, count: number): string {
  return lookupTexts.get(
    db,
    count,
    () =>
      keysWithOrganizationQuery(
        db,
        Array.from({ length: count }, () => ''),
      ).compile().sql,
    count <= MAX_KEPT_LOOKUPS,
  );
}

interface Waiting {
  resolve(row: KeyWithOrganization | undefined): void;
  reject(error: unknown): void;
}

/**
 * Every request looks its key up. Lookups made in the same turn of the event loop are answered
 * by one query (`WHERE id IN (…)`): one round trip per turn instead of one per request, and,
 * unlike a cache, a revoked key or a changed plan counts from the very next request.
 */
class KeyLookup {
  private waiting = new Map<string, Waiting[]>();

  constructor(private readonly db: DbOrTrx) {}

  find(keyId: string): Promise<KeyWithOrganization | undefined> {
    return new Promise((resolve, reject) => {
      const queue = this.waiting.get(keyId);
      if (queue) queue.push({ resolve, reject });
      else this.waiting.set(keyId, [{ resolve, reject }]);
      if (this.waiting.size === 1 && queue === undefined) setImmediate(() => void this.flush());
    });
  }

  private async flush(): Promise<void> {
    const batch = this.waiting;
    this.waiting = new Map();
    try {
      // SQLite: on the read connection, so that a request's key does not wait for a track batch
      // or a folding pass holding the write connection (a committed change shows all the same).
      const reader = snapshotReader(this.db) ?? this.db;
      const keyIds = [...batch.keys()];
      const { rows } = await reader.executeQuery<KeyWithOrganization>(
        CompiledQuery.raw(lookupText(reader, keyIds.length), keyIds),
      );
      const byId = new Map(rows.map((row) => [row.key_id, row]));
      for (const [keyId, queue] of batch) for (const w of queue) w.resolve(byId.get(keyId));
    } catch (error) {
      for (const queue of batch.values()) for (const w of queue) w.reject(error);
    }
  }
}

const lookups = new WeakMap<DbOrTrx, KeyLookup>();

function findKeyWithOrganization(db: DbOrTrx, keyId: string): Promise<KeyWithOrganization | undefined> {
  let lookup = lookups.get(db);
  if (!lookup) {
    lookup = new KeyLookup(db);
    lookups.set(db, lookup);
  }
  return lookup.find(keyId);
}

const decoded = new Map<string, { row: KeyWithOrganization; org: Organization }>();

/**
 * The organisation of a looked-up row. Decoding (three JSON columns) is kept per organisation
 * with the raw values it came from and reused only while the row read on this request has the
 * same values, so a change shows from the next request, as without it. Organizations are not
 * mutated once built.
 */
function organizationOf(row: KeyWithOrganization): Organization {
  const last = decoded.get(row.id);
  if (last && ORGANIZATION_FIELDS.every((field) => last.row[field] === row[field])) return last.org;
  const org = organizationFromRow(row);
  if (decoded.size >= 10_000) decoded.clear();
  decoded.set(row.id, { row, org });
  return org;
}

const decodedOverrides = new Map<string, { json: string; overrides: ReadonlyMap<string, number> }>();

/** The overrides read with the key (PostgreSQL), decoded once per organisation and text. */
function overridesOf(row: KeyWithOrganization): ReadonlyMap<string, number> | undefined {
  if (row.overrides === null) return undefined;
  const last = decodedOverrides.get(row.id);
  if (last?.json === row.overrides) return last.overrides;
  const overrides = new Map(JSON.parse(row.overrides) as Array<[string, number]>);
  if (decodedOverrides.size >= 10_000) decodedOverrides.clear();
  decodedOverrides.set(row.id, { json: row.overrides, overrides });
  return overrides;
}

export interface Authenticated {
  org: Organization;
  keyId: string;
  scope: KeyScope;
  /** The organisation's task-type overrides as read with the key (PostgreSQL only). */
  overrides?: ReadonlyMap<string, number>;
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
  const presented = hash('sha256', token, 'buffer');
  if (!row || !timingSafeEqual(presented, Buffer.from(row.key_hash, 'hex'))) {
    throw new AppError('invalid_api_key', 'The API key is malformed or unknown.');
  }
  if (row.revoked_at !== null) throw new AppError('key_revoked', 'The API key was revoked.');
  return {
    org: organizationOf(row),
    keyId: row.key_id,
    scope: row.scope === 'ingest' ? 'ingest' : 'admin',
    overrides: overridesOf(row),
  };
}
