import type { OrgCtx } from '../context.js';
import { recordRollups } from '../reports/rollups.js';
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
 * Everything that must happen with a new event, committed in the same transaction (DESIGN §4):
 * report aggregates and webhook messages (the transactional outbox). The usage counter is
 * updated before the insert because it decides the Free plan's cap.
 * Features add their call here; each must use `created.ctx.db`, the open transaction.
 */
export async function onEventCreated(created: EventCreated): Promise<void> {
  await recordRollups(created.ctx.db, [created.row]);
}
