import { PostgresAdapter, sql } from 'kysely';
import type { DbOrTrx, Engine } from '../storage/db.js';
import type { IngestSeq } from '../storage/snapshot.js';
import { orgEventsBySeq, tailCondition, type TailMark } from '../storage/tail.js';
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

/** The first and the next month's first millisecond of a `YYYY-MM` month, in UTC. */
export function monthRange(month: string): [number, number] {
  const year = Number(month.slice(0, 4));
  const index = Number(month.slice(5, 7)) - 1;
  return [Date.UTC(year, index, 1), Date.UTC(year, index + 1, 1)];
}

/**
 * The organisation's events of `month` (by time of receipt) and of all time, exact and in one
 * snapshot (one statement): the counts folded into usage_monthly up to the watermark plus the
 * events of the tail after it (DESIGN §11), read from the watermark on (storage/tail.ts).
 * `mark` is the watermark read in the caller's snapshot, or fold part 1's for this statement to
 * read itself.
 */
function usageCountsQuery(engine: Engine, orgId: string, month: string, mark: TailMark) {
  const [from, to] = monthRange(month);
  const tail = orgEventsBySeq(engine, orgId, tailCondition(engine, mark));
  return sql<{ month_folded: unknown; month_tail: unknown; all_folded: unknown; all_tail: unknown }>`
    SELECT
      (SELECT COALESCE(SUM(events), 0) FROM usage_monthly WHERE org_id = ${orgId} AND month = ${month}) AS month_folded,
      t.month_tail,
      (SELECT COALESCE(SUM(events), 0) FROM usage_monthly WHERE org_id = ${orgId}) AS all_folded,
      t.all_tail
    FROM (
      SELECT COUNT(*) AS all_tail,
        COALESCE(SUM(CASE WHEN received_at >= ${from} AND received_at < ${to} THEN 1 ELSE 0 END), 0) AS month_tail
      FROM ${tail}
    ) AS t`;
}

/** usageCountsQuery's counts (`mark`: the watermark read in the caller's snapshot, or part 1's). */
export async function usageCounts(
  db: DbOrTrx,
  orgId: string,
  month: string,
  mark: TailMark,
): Promise<{ month: number; lifetime: number }> {
  const engine: Engine = db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite';
  const { rows } = await usageCountsQuery(engine, orgId, month, mark).execute(db);
  const row = rows[0];
  return {
    month: Number(row?.month_folded ?? 0) + Number(row?.month_tail ?? 0),
    lifetime: Number(row?.all_folded ?? 0) + Number(row?.all_tail ?? 0),
  };
}

/**
 * Admits up to `n` events of a plan with a hard cap into the organisation's month: how many
 * fit under `cap`, counted exactly (usageCounts). Concurrent transactions of one organisation
 * take its lock first (PostgreSQL: an advisory lock held to the end of the transaction, so the
 * next one counts this one's events; SQLite has one writer). Nothing is written: the events
 * themselves are the count.
 */
export async function admitCapped(
  db: DbOrTrx,
  orgId: string,
  month: string,
  n: number,
  cap: number,
): Promise<number> {
  // The count reads the watermark in its own statement: on PostgreSQL each statement of the
  // track transaction sees its own snapshot, and the stage may fold meanwhile. The lock's
  // statement reads it too, for the count's seek to be planned from (storage/tail.ts TailMark).
  let floor: IngestSeq | null = null;
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    const { rows } = await sql<{ watermark: string }>`
      SELECT pg_advisory_xact_lock(${CAP_LOCK_CLASS}, hashtext(${orgId})),
        (SELECT watermark FROM fold_state WHERE id = 1)::text AS watermark`.execute(db);
    floor = rows[0]?.watermark ?? null;
  }
  const counted = (await usageCounts(db, orgId, month, { part: 1, floor })).month;
  return Math.max(0, Math.min(n, cap - counted));
}

/** The first key of the advisory locks of capped organisations (the second is the org's hash). */
const CAP_LOCK_CLASS = 7_311_001;

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
