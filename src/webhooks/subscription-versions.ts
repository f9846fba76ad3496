import { sql, type RawBuilder } from 'kysely';
import type { DbOrTrx, Engine } from '../storage/db.js';

/**
 * The history of what each webhook is subscribed to (DESIGN §8 "Who receives what", migration
 * 0017). The folding stage writes an event's messages seconds after its 201 during a backfill; it
 * sends the event to the webhooks whose version held it when it was committed (subscribers.ts),
 * so a webhook created, changed or deleted meanwhile does not change who receives it.
 *
 * A version holds the events committed after its `valid_from` and up to its `valid_to`: each
 * is the position of the changing transaction in the event log's commit order.
 * - PostgreSQL: `pg_current_snapshot()` taken in the transaction. An event whose 201 came before
 *   the change began is visible in it; one tracked after the change's answer has a larger xid
 *   than any the snapshot knows. An event committing while the change runs may fall either way.
 * - SQLite: the largest `ingest_seq` the transaction sees, read after it took the main file's write
 *   lock. Events are numbered in commit order in their own file (storage/events-file.ts), and a
 *   folding pass holds the same lock for the whole pass, so the order is exact.
 *
 * Nothing of this is written per event: a change writes a row or two, the stage reads the
 * versions of the organisations whose events it folds.
 */

/**
 * The position of the calling transaction in the event log's commit order, once: both ends of
 * two consecutive versions take the same value (on PostgreSQL two statements of a READ COMMITTED
 * transaction may see different snapshots). SQLite: call it after the transaction's first write,
 * which takes the main file's write lock.
 */
async function commitPosition(db: DbOrTrx, engine: Engine): Promise<RawBuilder<unknown>> {
  if (engine === 'postgres') {
    const { rows } = await sql<{ at: string }>`SELECT pg_current_snapshot()::text AS at`.execute(db);
    const at = rows[0]?.at;
    if (at === undefined) throw new Error('no snapshot');
    return sql`${at}::pg_snapshot`;
  }
  const { rows } = await sql<{ at: unknown }>`SELECT MAX(ingest_seq) AS at FROM events`.execute(db);
  return sql`${Number(rows[0]?.at ?? 0)}`;
}

export interface SubscriptionChange {
  webhookId: string;
  orgId: string;
  /** What the webhook receives from this change on; null: nothing (deactivated). */
  eventTypes: readonly string[] | null;
}

/**
 * Records a change of what a webhook receives, in the transaction of the change: closes its open
 * version and opens the next one. Closed versions whose every event is folded already are of no
 * more use, and go.
 */
export async function recordSubscription(
  db: DbOrTrx,
  engine: Engine,
  change: SubscriptionChange,
): Promise<void> {
  const at = await commitPosition(db, engine);
  await sql`
    UPDATE webhook_subscription_versions SET valid_to = ${at}
    WHERE webhook_id = ${change.webhookId} AND valid_to IS NULL`.execute(db);
  if (change.eventTypes !== null) {
    await sql`
      INSERT INTO webhook_subscription_versions (webhook_id, org_id, event_types, valid_from, valid_to)
      VALUES (${change.webhookId}, ${change.orgId}, ${JSON.stringify(change.eventTypes)}, ${at}, NULL)`.execute(
      db,
    );
  }
  // Part 1 of the folding stage writes the webhook messages (reports/rollups.ts FOLD_PARTS).
  const folded =
    engine === 'postgres'
      ? sql`pg_snapshot_xmax(valid_to) <= (SELECT watermark FROM fold_state WHERE id = 1)`
      : sql`valid_to < (SELECT watermark FROM fold_state WHERE id = 1)`;
  await sql`
    DELETE FROM webhook_subscription_versions
    WHERE org_id = ${change.orgId} AND valid_to IS NOT NULL AND ${folded}`.execute(db);
}

/**
 * A deleted webhook's history goes with it: the delete cancels its pending deliveries, so the
 * events committed before it that fold later would only add canceled ones.
 */
export async function forgetSubscription(
  db: DbOrTrx,
  webhook: { webhookId: string; orgId: string },
): Promise<void> {
  await db
    .deleteFrom('webhook_subscription_versions')
    .where('org_id', '=', webhook.orgId)
    .where('webhook_id', '=', webhook.webhookId)
    .execute();
}
