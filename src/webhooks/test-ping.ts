import { requireRole } from '../accounts/authorize.js';
import type { OrgCtx } from '../context.js';
import { enqueueMessage } from './outbox.js';
import { getWebhookRow } from './subscriptions.js';

/**
 * Queues a `test.ping` for one webhook, whatever its event types and state (a deactivated
 * webhook can be tested before reactivating it). It is tried once and never moves the state.
 */
export async function sendTestPing({
  ctx,
  id,
}: {
  ctx: OrgCtx;
  id: string;
}): Promise<{ message_id: string }> {
  requireRole(ctx, 'admin');
  const at = ctx.clock.now();
  return ctx.db.transaction().execute(async (trx) => {
    const row = await getWebhookRow({ ctx: { ...ctx, db: trx }, id });
    const { messageId } = await enqueueMessage({
      db: trx,
      orgId: ctx.org.id,
      type: 'test.ping',
      payload: {
        webhook_id: row.id,
        message: 'This is a test delivery from Tally.',
        sent_at: at.toISOString(),
      },
      webhookIds: [row.id],
      at,
      // A ping is sent by hand to check a receiver now, outside the retry schedule.
      firstDelaySeconds: 0,
    });
    return { message_id: messageId };
  });
}
