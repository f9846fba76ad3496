import type { DbOrTrx } from '../storage/db.js';

/** `YYYY-MM` of a time, in UTC: the usage month counts by time of receipt. */
export function usageMonth(at: Date): string {
  return at.toISOString().slice(0, 7);
}

/**
 * Adds `n` events to the organisation's month and returns how many fit under `cap` (null = no
 * cap); the rest are refused and not counted. The upsert takes the row lock first, so
 * concurrent writers (several instances on PostgreSQL) are serialised on it.
 */
export async function countEvents(
  db: DbOrTrx,
  orgId: string,
  month: string,
  n: number,
  cap: number | null,
): Promise<number> {
  const row = await db
    .insertInto('usage_monthly')
    .values({ org_id: orgId, month, events: n })
    .onConflict((oc) =>
      oc.columns(['org_id', 'month']).doUpdateSet((eb) => ({ events: eb('usage_monthly.events', '+', n) })),
    )
    .returning('events')
    .executeTakeFirstOrThrow();
  const after = Number(row.events);
  if (cap === null || after <= cap) return n;
  const refused = Math.min(n, after - cap);
  await db
    .updateTable('usage_monthly')
    .set((eb) => ({ events: eb('events', '-', refused) }))
    .where('org_id', '=', orgId)
    .where('month', '=', month)
    .execute();
  return n - refused;
}
