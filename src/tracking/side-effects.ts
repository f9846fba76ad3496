import type { OrgCtx } from '../context.js';
import type { DbOrTrx } from '../storage/db.js';
import type { EventRow } from '../storage/schema.js';
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
 * What must happen with new events in their own transaction, before the 201. Nothing by
 * default: the webhook messages, report rollups and usage counts are derived from the stored
 * events by the folding stage (DESIGN §11), so the request writes no row per webhook
 * or report grain. `db` is the open transaction; `created` holds the batch's new events in
 * order. A feature that must decide something before the 201 adds its call here.
 */
export async function onEventsCreated(_db: DbOrTrx, _created: EventCreated[]): Promise<void> {
  // Nothing to do in the request.
}
