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
