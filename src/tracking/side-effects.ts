import type { OrgCtx } from '../context.js';
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
 * What must happen with new events once they are written, committed in their transaction
 * (DESIGN §4): webhook messages (the transactional outbox). The rows written with the events
 * themselves (agents, report rollups, usage) are in writeEvents. `db` is the open transaction;
 * `created` holds the batch's new events in order. Features add their call here.
 */
export async function onEventsCreated(db: DbOrTrx, created: EventCreated[]): Promise<void> {
  await enqueueEventMessages(db, created);
}
