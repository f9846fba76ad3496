import { sql } from 'kysely';
import { usageMonth, type UsageIncrement } from '../billing/usage-counter.js';
import type { DbOrTrx, Engine } from '../storage/db.js';
import type { EventRow } from '../storage/schema.js';
import { seqRange } from './rollups.js';
import type { Seq } from './seq.js';

/*
 * The usage figures the stage derives (usage_monthly, shard 0): each event counts toward its
 * organisation's month of receipt. A small pass counts the rows it read; a large one in SQL.
 */

/** One increment per organisation and month of receipt, in sorted order. */
export function usageIncrements(rows: readonly EventRow[]): UsageIncrement[] {
  const byKey = new Map<string, UsageIncrement>();
  for (const row of rows) {
    const month = usageMonth(new Date(Number(row.received_at)));
    const key = `${row.org_id} ${month}`;
    const increment = byKey.get(key);
    if (increment) increment.events += 1;
    else byKey.set(key, { org_id: row.org_id, month, shard: 0, events: 1 });
  }
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, increment]) => increment);
}

/** Adds the events of a range to their organisation's month of receipt (usage_monthly, shard 0). */
export async function foldUsage(trx: DbOrTrx, engine: Engine, from: Seq, to: Seq): Promise<void> {
  const month =
    engine === 'sqlite'
      ? sql`strftime('%Y-%m', received_at / 1000, 'unixepoch')`
      : sql`to_char(to_timestamp(received_at / 1000) AT TIME ZONE 'UTC', 'YYYY-MM')`;
  await sql`
    INSERT INTO usage_monthly (org_id, month, shard, events)
    SELECT org_id, ${month}, 0, COUNT(*) FROM events WHERE ${seqRange(engine, from, to)} GROUP BY 1, 2
    ON CONFLICT (org_id, month, shard) DO UPDATE SET events = usage_monthly.events + excluded.events`.execute(
    trx,
  );
}
