import type { ServiceCtx } from '../context.js';
import { queueEmails } from '../email/outbox.js';
import type { Organization } from '../orgs/organizations.js';
import { alertRecipients, getPlanningSettings } from '../settings/planning-settings.js';
import type { DbOrTrx } from '../storage/db.js';
import type { MessageType } from '../webhooks/event-types.js';
import { enqueueMessage } from '../webhooks/outbox.js';

/** One alert, keyed by what makes it once-only: its subject, month, kind and threshold. */
export interface Alert {
  org: Organization;
  /** The budget id, or `usage` for the plan's included events. */
  subject: string;
  /** `YYYY-MM` */
  month: string;
  kind: 'threshold' | 'forecast';
  /** The percentage crossed; 0 for a forecast. */
  threshold: number;
  type: Extract<
    MessageType,
    'budget.threshold_crossed' | 'budget.forecast_exceeded' | 'usage.threshold_crossed'
  >;
  payload: unknown;
  email: { subject: string; body: string };
}

/** The webhooks subscribed to `type` now and not deactivated: they receive the alert. */
async function subscribers(db: DbOrTrx, orgId: string, type: string): Promise<string[]> {
  const hooks = await db
    .selectFrom('webhooks')
    .select(['id', 'event_types'])
    .where('org_id', '=', orgId)
    .where('deleted_at', 'is', null)
    .where('status', '<>', 'deactivated')
    .execute();
  return hooks.filter((h) => (JSON.parse(h.event_types) as string[]).includes(type)).map((h) => h.id);
}

/**
 * Sends an alert unless it was sent already: its ledger row (primary key: organisation, subject,
 * month, kind, threshold), its signed webhook message and its e-mails to the admins who opted in
 * are written in one transaction. Two workers racing on one database both try the insert; the
 * second waits for the first to commit and then inserts nothing, so the alert goes out once.
 * Returns the message id, or null when the alert had been sent.
 */
export async function raiseAlert(ctx: ServiceCtx, alert: Alert): Promise<string | null> {
  return ctx.db.transaction().execute(async (trx) => {
    const at = ctx.clock.now();
    const claim = await trx
      .insertInto('alerts')
      .values({
        org_id: alert.org.id,
        subject: alert.subject,
        month: alert.month,
        kind: alert.kind,
        threshold: alert.threshold,
        type: alert.type,
        payload: JSON.stringify(alert.payload),
        message_id: '',
        created_at: at.getTime(),
      })
      .onConflict((oc) => oc.columns(['org_id', 'subject', 'month', 'kind', 'threshold']).doNothing())
      .executeTakeFirst();
    if (Number(claim.numInsertedOrUpdatedRows ?? 0) === 0) return null;
    const { messageId } = await enqueueMessage({
      db: trx,
      orgId: alert.org.id,
      type: alert.type,
      payload: alert.payload,
      webhookIds: await subscribers(trx, alert.org.id, alert.type),
      at,
      firstDelaySeconds: ctx.config.webhookRetryDelaysSeconds[0] ?? 0,
    });
    await trx
      .updateTable('alerts')
      .set({ message_id: messageId })
      .where('org_id', '=', alert.org.id)
      .where('subject', '=', alert.subject)
      .where('month', '=', alert.month)
      .where('kind', '=', alert.kind)
      .where('threshold', '=', alert.threshold)
      .execute();
    const settings = await getPlanningSettings(trx, alert.org.id);
    await queueEmails({
      db: trx,
      at,
      emails: alertRecipients(settings, alert.org.adminEmails).map((to) => ({
        orgId: alert.org.id,
        to,
        subject: alert.email.subject,
        body: alert.email.body,
      })),
    });
    return messageId;
  });
}

/** The alerts sent, newest first (the Budgets page). */
export async function recentAlerts(db: DbOrTrx, orgId: string, limit: number) {
  const rows = await db
    .selectFrom('alerts')
    .select(['subject', 'month', 'kind', 'threshold', 'type', 'payload', 'message_id', 'created_at'])
    .where('org_id', '=', orgId)
    .orderBy('created_at', 'desc')
    .orderBy('message_id', 'desc')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    subject: r.subject,
    month: r.month,
    kind: r.kind,
    threshold: Number(r.threshold),
    type: r.type,
    payload: JSON.parse(r.payload) as Record<string, unknown>,
    messageId: r.message_id,
    createdAt: Number(r.created_at),
  }));
}
