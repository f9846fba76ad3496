import { recordAudit } from '../audit/audit-log.js';
import type { ServiceCtx } from '../context.js';
import { queueEmails } from '../email/outbox.js';
import { getOrganization } from '../orgs/organizations.js';
import { DEACTIVATED_AFTER, FAILING_AFTER } from './event-types.js';
import { recordSubscription } from './subscription-versions.js';
import { webhookView } from './subscriptions.js';

/** A successful attempt: the failure count restarts and the webhook is `active` again. */
export async function markWebhookHealthy(ctx: ServiceCtx, webhookId: string, at: number): Promise<void> {
  await ctx.db
    .updateTable('webhooks')
    .set({ consecutive_failures: 0, status: 'active', updated_at: at })
    .where('id', '=', webhookId)
    .where('status', '<>', 'deactivated')
    .where((eb) => eb.or([eb('consecutive_failures', '>', 0), eb('status', '<>', 'active')]))
    .execute();
}

/**
 * A delivery failed for good (its last attempt failed). Counts it; at FAILING_AFTER the webhook
 * is `failing`, at DEACTIVATED_AFTER `deactivated`, which e-mails every admin of the
 * organisation once. Runs in the transaction that records the attempt.
 */
export async function recordFailedDelivery(ctx: ServiceCtx, webhookId: string, at: Date): Promise<void> {
  const now = at.getTime();
  const counted = await ctx.db
    .updateTable('webhooks')
    .set((eb) => ({ consecutive_failures: eb('consecutive_failures', '+', 1), updated_at: now }))
    .where('id', '=', webhookId)
    .where('status', '<>', 'deactivated')
    .returning(['consecutive_failures', 'status'])
    .executeTakeFirst();
  if (!counted) return;
  const failures = Number(counted.consecutive_failures);
  if (failures >= DEACTIVATED_AFTER) {
    await deactivate(ctx, webhookId, at);
  } else if (failures >= FAILING_AFTER && counted.status === 'active') {
    await ctx.db.updateTable('webhooks').set({ status: 'failing' }).where('id', '=', webhookId).execute();
  }
}

async function deactivate(ctx: ServiceCtx, webhookId: string, at: Date): Promise<void> {
  const before = await ctx.db
    .selectFrom('webhooks')
    .selectAll()
    .where('id', '=', webhookId)
    .executeTakeFirstOrThrow();
  const changed = await ctx.db
    .updateTable('webhooks')
    .set({ status: 'deactivated' })
    .where('id', '=', webhookId)
    .where('status', '<>', 'deactivated')
    .executeTakeFirst();
  // Only the transaction that made the change notifies, so admins get one e-mail.
  if (Number(changed.numUpdatedRows) === 0) return;
  // The events committed from here on are not queued for it; those before are (DESIGN §8).
  await recordSubscription(ctx.db, ctx.engine, { webhookId, orgId: before.org_id, eventTypes: null });
  const org = await getOrganization({ ctx, id: before.org_id });
  const after = { ...before, status: 'deactivated' };
  await recordAudit(
    { ...ctx, org, actorKeyId: null },
    {
      action: 'webhook.deactivated',
      target: `webhook:${webhookId}`,
      before: webhookView(before),
      after: webhookView(after),
      reason: `${DEACTIVATED_AFTER} consecutive failed deliveries`,
    },
  );
  await queueEmails({
    db: ctx.db,
    at,
    emails: org.adminEmails.map((to) => ({
      orgId: org.id,
      to,
      subject: `[Tally] Webhook ${webhookId} was deactivated`,
      body: [
        `The webhook ${webhookId} of your organisation "${org.name}" was deactivated after ${DEACTIVATED_AFTER} consecutive failed deliveries.`,
        '',
        `URL: ${before.url}`,
        '',
        'It receives nothing until it is reactivated: fix the receiver, then send',
        `PATCH /v1/webhooks/${webhookId} with {"status": "active"}.`,
        'Deliveries already queued for it are kept and sent after reactivation; events tracked while',
        'it is deactivated are not queued for it.',
        `The delivery log is at GET /v1/webhooks/${webhookId}/deliveries.`,
      ].join('\n'),
    })),
  });
}
