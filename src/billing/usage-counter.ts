import type { DbOrTrx } from '../storage/db.js';
import { insertRows } from '../storage/insert-rows.js';

/** Events to add to an organisation's month, in one shard of its counter. */
export interface UsageIncrement {
  org_id: string;
  month: string;
  shard: number;
  events: number;
}

/** `YYYY-MM` of a time, in UTC: the usage month counts by time of receipt. */
export function usageMonth(at: Date): string {
  return at.toISOString().slice(0, 7);
}

/**
 * Adds `n` events to the organisation's month and returns how many fit under `cap` (null = no
 * cap); the rest are refused and not counted. Without a cap the events go to the caller's
 * `shard` (row), so concurrent transactions do not wait for each other. With a cap they all
 * go to shard 0, whose row lock serialises competing writers, and the total over the shards
 * decides (shards from before a change to a capped plan count too).
 */
export async function countEvents(
  db: DbOrTrx,
  orgId: string,
  month: string,
  n: number,
  cap: number | null,
  shard = 0,
): Promise<number> {
  await addUsage(db, [{ org_id: orgId, month, shard: cap === null ? shard : 0, events: n }]).execute();
  if (cap === null) return n;
  const after = await monthEvents(db, orgId, month);
  if (after <= cap) return n;
  const refused = Math.min(n, after - cap);
  await db
    .updateTable('usage_monthly')
    .set((eb) => ({ events: eb('events', '-', refused) }))
    .where('org_id', '=', orgId)
    .where('month', '=', month)
    .where('shard', '=', 0)
    .execute();
  return n - refused;
}

/** Events counted for the organisation in `month`, over all shards. */
export async function monthEvents(db: DbOrTrx, orgId: string, month: string): Promise<number> {
  const row = await db
    .selectFrom('usage_monthly')
    .select((eb) => eb.fn.sum<number>('events').as('events'))
    .where('org_id', '=', orgId)
    .where('month', '=', month)
    .executeTakeFirst();
  return Number(row?.events ?? 0);
}

/**
 * The statement adding `increments` (one per organisation, month and shard) to the counters,
 * unexecuted so it can go into a larger statement.
 */
export function addUsage(db: DbOrTrx, increments: readonly UsageIncrement[]) {
  const columns = { org_id: 'text', month: 'text', shard: 'bigint', events: 'bigint' } as const;
  return insertRows(db, 'usage_monthly', columns, increments).onConflict((oc) =>
    oc
      .columns(['org_id', 'month', 'shard'])
      .doUpdateSet((eb) => ({ events: eb('usage_monthly.events', '+', eb.ref('excluded.events')) })),
  );
}
