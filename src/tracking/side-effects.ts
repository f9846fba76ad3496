import type { OrgCtx } from '../context.js';
import { recordRollups } from '../reports/rollups.js';
import type { DbOrTrx } from '../storage/db.js';
import type { EventRow } from '../storage/schema.js';
import { enqueueEventMessages } from '../webhooks/outbox.js';
import type { StoredEvent } from './events.js';

export interface EventCreated {
  /** The verb context bound to the open transaction of the event. */
  ctx: OrgCtx;
  row: EventRow;
  event: StoredEvent;
  /** True when this is the first event of `row.agent_id` in the organisation. */
  isNewAgent: boolean;
}

/**
 * Everything that must happen with new events, committed in their transaction (DESIGN §4):
 * report aggregates and webhook messages (the transactional outbox). The usage counter is
 * updated before the insert because it decides the Free plan's cap. `db` is the open
 * transaction; `created` holds the batch's new events in order; `shard` tells counters shared
 * with concurrent transactions which of their rows to add to. Features add their call here.
 */
export async function onEventsCreated(db: DbOrTrx, created: EventCreated[], shard: number): Promise<void> {
  await enqueueEventMessages(db, created);
  // Last: rollup rows are shared with concurrent transactions and stay locked until commit.
  await recordRollups(
    db,
    created.map((c) => c.row),
    shard,
  );
}
