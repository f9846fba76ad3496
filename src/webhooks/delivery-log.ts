import type { OrgCtx } from '../context.js';
import type { WebhookAttemptRow, WebhookDeliveryRow } from '../storage/schema.js';
import { getWebhookRow } from './subscriptions.js';

const iso = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString());

function attemptView(row: WebhookAttemptRow) {
  return {
    attempt: Number(row.attempt),
    succeeded: Number(row.succeeded) === 1,
    status_code: row.status_code === null ? null : Number(row.status_code),
    response_body: row.response_body,
    error: row.error,
    signature: row.signature,
    duration_ms: Number(row.duration_ms),
    started_at: iso(row.started_at),
    finished_at: iso(row.finished_at),
  };
}

function deliveryView(row: WebhookDeliveryRow, attempts: WebhookAttemptRow[]) {
  return {
    id: row.id,
    message_id: row.message_id,
    event_type: row.event_type,
    status: row.status,
    attempt_count: attempts.length,
    next_attempt_at: row.status === 'pending' ? iso(row.next_attempt_at) : null,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    attempts: attempts.map(attemptView),
  };
}

/** The delivery log of one webhook, newest delivery first, each with every attempt made. */
export async function listDeliveries({
  ctx,
  webhookId,
  limit,
  cursor,
}: {
  ctx: OrgCtx;
  webhookId: string;
  limit: number;
  cursor?: string;
}) {
  await getWebhookRow({ ctx, id: webhookId });
  let query = ctx.db.selectFrom('webhook_deliveries').selectAll().where('webhook_id', '=', webhookId);
  if (cursor !== undefined) query = query.where('id', '<', cursor);
  const rows = await query
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  const page = rows.slice(0, limit);
  const attempts =
    page.length === 0
      ? []
      : await ctx.db
          .selectFrom('webhook_attempts')
          .selectAll()
          .where(
            'delivery_id',
            'in',
            page.map((d) => d.id),
          )
          .orderBy('attempt', 'asc')
          .execute();
  const last = page[page.length - 1];
  return {
    data: page.map((d) =>
      deliveryView(
        d,
        attempts.filter((a) => a.delivery_id === d.id),
      ),
    ),
    next_cursor: rows.length > limit && last ? last.id : null,
  };
}
