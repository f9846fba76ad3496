import type { DbOrTrx } from '../storage/db.js';

/** `YYYY-MM` of a time, in UTC: the usage month counts by time of receipt. */
export function usageMonth(at: Date): string {
  return at.toISOString().slice(0, 7);
}

/**
 * Adds one event to the organisation's month in a single statement, refusing past `cap`
 * (null = no cap). Returns false when the cap is reached. Atomic under concurrency: the row
 * lock serialises competing increments.
 */
export async function countEvent(
  db: DbOrTrx,
  orgId: string,
  month: string,
  cap: number | null,
): Promise<boolean> {
  if (cap !== null && cap <= 0) return false;
  const result = await db
    .insertInto('usage_monthly')
    .values({ org_id: orgId, month, events: 1 })
    .onConflict((oc) => {
      const update = oc
        .columns(['org_id', 'month'])
        .doUpdateSet((eb) => ({ events: eb('usage_monthly.events', '+', 1) }));
      return cap === null ? update : update.where('usage_monthly.events', '<', cap);
    })
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}
