import type { OrgCtx } from '../context.js';
import type { DbOrTrx } from '../storage/db.js';
import { enqueueMessage } from '../webhooks/outbox.js';
import type { RestatementView } from './restatements.js';

/** What a restatement changed, as the `figures.restated` message carries it. */
export interface RestatedFigures {
  restatement: RestatementView;
  /** Events that got an adjustment, and the sums of their deltas. */
  affected_events: number;
  delta: { hours_saved: number; cost_saved: number; net_saved: number };
  /** The months (YYYY-MM) whose figures moved. */
  months: string[];
}

async function subscribers(db: DbOrTrx, orgId: string): Promise<string[]> {
  const hooks = await db
    .selectFrom('webhooks')
    .select(['id', 'event_types'])
    .where('org_id', '=', orgId)
    .where('deleted_at', 'is', null)
    .where('status', '<>', 'deactivated')
    .execute();
  return hooks
    .filter((h) => (JSON.parse(h.event_types) as string[]).includes('figures.restated'))
    .map((h) => h.id);
}

/**
 * Queues the `figures.restated` message of an applied restatement for the webhooks subscribed to
 * it now. Called once the ledger has written the restatement's adjustments (applyPastChange).
 */
export async function announceRestated(ctx: OrgCtx, figures: RestatedFigures): Promise<string> {
  const { messageId } = await enqueueMessage({
    db: ctx.db,
    orgId: ctx.org.id,
    type: 'figures.restated',
    payload: figures,
    webhookIds: await subscribers(ctx.db, ctx.org.id),
    at: ctx.clock.now(),
    firstDelaySeconds: ctx.config.webhookRetryDelaysSeconds[0] ?? 0,
  });
  return messageId;
}
