import type { OrgCtx } from '../context.js';
import type { Figures } from './figures.js';

/** One entry of what changed a closed month since its statement, beside the late events. */
export interface AdjustmentEntry extends Figures {
  kind: 'adjustment';
  id: string;
  /** When the adjustment was recorded (ISO 8601). */
  at: string;
  event_id: string;
  agent_id: string;
  task_type: string;
  client_id: string | null;
  /** What caused it: a review or a restatement. */
  cause: string;
}

/**
 * The adjustments recorded after `closedAt` to events of `month` (signed deltas, `events` 0).
 *
 * Seam: none exist yet. Once the ledger's `adjustments` table holds the signed deltas of reviews
 * and restatements, this reads its rows for the month's events recorded after `closedAt`; the
 * changes view and its sums take them as they are.
 */
export function adjustmentsSince(
  _ctx: OrgCtx,
  _org: string,
  _month: string,
  _closedAt: number,
): Promise<AdjustmentEntry[]> {
  return Promise.resolve([]);
}
