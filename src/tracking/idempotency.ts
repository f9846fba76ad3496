import { sql } from 'kysely';
import type { DbOrTrx } from '../storage/db.js';

export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

/**
 * Claims `key` for `eventId` inside the caller's transaction. Returns null when the claim is
 * ours, or the id of the event that already holds the key. A key older than 24 h is taken
 * over. On PostgreSQL a concurrent first request waits on the unique index until the holder
 * commits (then sees its event) or rolls back (then claims the key itself).
 */
export async function claimIdempotencyKey(
  db: DbOrTrx,
  orgId: string,
  key: string,
  eventId: string,
  nowMs: number,
): Promise<string | null> {
  const result = await db
    .insertInto('idempotency_keys')
    .values({ org_id: orgId, key, event_id: eventId, created_at: nowMs })
    .onConflict((oc) =>
      oc
        .columns(['org_id', 'key'])
        .doUpdateSet({ event_id: eventId, created_at: nowMs })
        .where('idempotency_keys.created_at', '<=', nowMs - IDEMPOTENCY_WINDOW_MS),
    )
    .executeTakeFirst();
  if (Number(result.numInsertedOrUpdatedRows ?? 0) > 0) return null;
  // The key is the organisation's (spec §4.1): another organisation may hold the same value.
  const holder = await db
    .selectFrom('idempotency_keys')
    .select('event_id')
    .where('org_id', '=', orgId)
    .where('key', '=', key)
    .executeTakeFirstOrThrow();
  return holder.event_id;
}

export interface KeyClaim {
  orgId: string;
  key: string;
  eventId: string;
  nowMs: number;
}

/**
 * `claimIdempotencyKey` for many keys in two statements instead of one or two per key: the
 * claims in one INSERT (in the caller's order, which fixes the order of their locks as the
 * one-by-one claims did), then the holders of the keys it did not claim. No key may appear twice.
 * Returns, per claim, null when it is ours or the id of the event holding the key.
 */
export async function claimIdempotencyKeys(db: DbOrTrx, claims: KeyClaim[]): Promise<(string | null)[]> {
  if (claims.length === 0) return [];
  const claimed = await db
    .insertInto('idempotency_keys')
    .values(claims.map((c) => ({ org_id: c.orgId, key: c.key, event_id: c.eventId, created_at: c.nowMs })))
    .onConflict((oc) =>
      oc
        .columns(['org_id', 'key'])
        .doUpdateSet({
          event_id: (eb) => eb.ref('excluded.event_id'),
          created_at: (eb) => eb.ref('excluded.created_at'),
        })
        .where(
          'idempotency_keys.created_at',
          '<=',
          sql<number>`excluded.created_at - ${IDEMPOTENCY_WINDOW_MS}`,
        ),
    )
    .returning(['org_id', 'key'])
    .execute();
  const id = (orgId: string, key: string) => `${orgId}\n${key}`;
  const ours = new Set(claimed.map((r) => id(r.org_id, r.key)));
  const held = claims.filter((c) => !ours.has(id(c.orgId, c.key)));
  const holders = new Map<string, string>();
  if (held.length > 0) {
    const rows = await db
      .selectFrom('idempotency_keys')
      .select(['org_id', 'key', 'event_id'])
      .where((eb) =>
        eb(
          eb.refTuple('org_id', 'key'),
          'in',
          held.map((c) => eb.tuple(c.orgId, c.key)),
        ),
      )
      .execute();
    for (const r of rows) holders.set(id(r.org_id, r.key), r.event_id);
  }
  return claims.map((c) => (ours.has(id(c.orgId, c.key)) ? null : (holders.get(id(c.orgId, c.key)) ?? null)));
}
