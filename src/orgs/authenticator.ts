import { hash, timingSafeEqual } from 'node:crypto';
import { CompiledQuery } from 'kysely';
import type { ServiceCtx } from '../context.js';
import { AppError } from '../errors.js';
import { readDb, type DbOrTrx } from '../storage/db.js';
import { CompiledTexts } from '../storage/insert-rows.js';
import { KEY_PATTERN, type KeyScope } from './api-keys.js';
import { organizationFromRow, type Organization } from './organization-record.js';

// The hot path of every request: its API key looked up (batched per turn of the event loop),
// the organisation decoded, and the key's last use noted now and then.

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
  'assumptions_revision',
] as const;

function keysWithOrganizationQuery(db: DbOrTrx, keyIds: string[]) {
  return (
    db
      .selectFrom('api_keys')
      .innerJoin('organizations', 'organizations.id', 'api_keys.org_id')
      // Named columns, not `organizations.*`: the statement is prepared (see storage/db.ts).
      .select(ORGANIZATION_FIELDS.map((field) => `organizations.${field}` as const))
      .select(['api_keys.id as key_id', 'api_keys.key_hash', 'api_keys.revoked_at', 'api_keys.scope'])
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
 * key ids, and it is looked up on every turn of the event loop.
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
      const keyIds = [...batch.keys()];
      const { rows } = await this.db.executeQuery<KeyWithOrganization>(
        CompiledQuery.raw(lookupText(this.db, keyIds.length), keyIds),
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

export interface Authenticated {
  org: Organization;
  keyId: string;
  scope: KeyScope;
}

/** Resolves a bearer token to its organisation, or throws the spec's 401 codes. */
export async function authenticate({
  ctx,
  token,
}: {
  ctx: Pick<ServiceCtx, 'db' | 'storage'>;
  token: string;
}): Promise<Authenticated> {
  const match = KEY_PATTERN.exec(token);
  if (!match?.[1]) throw new AppError('invalid_api_key', 'The API key is malformed or unknown.');
  // SQLite: on the read connection, so that a request's key does not wait for a track batch or a
  // folding pass holding the write connection (a committed change shows all the same).
  const row = await findKeyWithOrganization(readDb(ctx), match[1]);
  const presented = hash('sha256', token, 'buffer');
  if (!row || !timingSafeEqual(presented, Buffer.from(row.key_hash, 'hex'))) {
    throw new AppError('invalid_api_key', 'The API key is malformed or unknown.');
  }
  if (row.revoked_at !== null) throw new AppError('key_revoked', 'The API key was revoked.');
  return {
    org: organizationOf(row),
    keyId: row.key_id,
    scope: row.scope === 'ingest' ? 'ingest' : 'admin',
  };
}
