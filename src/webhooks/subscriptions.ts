import { requireRole } from '../accounts/authorize.js';
import { recordAudit } from '../audit/audit-log.js';
import type { OrgCtx } from '../context.js';
import { notFound } from '../errors.js';
import { newId } from '../ids.js';
import type { WebhookRow } from '../storage/schema.js';
import type { SubscribableEventType, WebhookStatus } from './event-types.js';
import { sealWebhookSecret } from './secret-storage.js';
import { newWebhookSecret } from './signing.js';
import { forgetSubscription, recordSubscription } from './subscription-versions.js';
import { checkWebhookUrl } from './url-policy.js';
import { pageOf } from '../storage/pagination.js';

/** The webhook record (DESIGN §8); the secret is added to the creation response only. */
export function webhookView(row: WebhookRow) {
  return {
    id: row.id,
    url: row.url,
    event_types: JSON.parse(row.event_types) as SubscribableEventType[],
    description: row.description,
    status: row.status as WebhookStatus,
    consecutive_failures: Number(row.consecutive_failures),
    created_at: new Date(Number(row.created_at)).toISOString(),
  };
}
export type WebhookView = ReturnType<typeof webhookView>;

export interface CreateWebhookInput {
  url: string;
  event_types: SubscribableEventType[];
  description?: string;
}

export async function createWebhook({ ctx, input }: { ctx: OrgCtx; input: CreateWebhookInput }) {
  requireRole(ctx, 'admin');
  const url = checkWebhookUrl(input.url, ctx.config.webhookAllowPrivateNetworks);
  const at = ctx.clock.now();
  const id = newId('wh', at);
  // Stored sealed; the plaintext is in this answer only.
  const secret = newWebhookSecret();
  const row: WebhookRow = {
    id,
    org_id: ctx.org.id,
    url,
    description: input.description ?? null,
    event_types: JSON.stringify(input.event_types),
    ...sealWebhookSecret(ctx, id, secret),
    status: 'active',
    consecutive_failures: 0,
    digest_since: input.event_types.includes('weekly.digest') ? at.getTime() : null,
    created_at: at.getTime(),
    updated_at: at.getTime(),
    deleted_at: null,
  };
  return ctx.db.transaction().execute(async (trx) => {
    await trx.insertInto('webhooks').values(row).execute();
    await recordSubscription(trx, ctx.engine, {
      webhookId: row.id,
      orgId: row.org_id,
      eventTypes: input.event_types,
    });
    const view = webhookView(row);
    await recordAudit(
      { ...ctx, db: trx },
      { action: 'webhook.created', target: `webhook:${row.id}`, before: null, after: view },
    );
    return { ...view, secret };
  });
}

export async function getWebhookRow({ ctx, id }: { ctx: OrgCtx; id: string }): Promise<WebhookRow> {
  const row = await ctx.db
    .selectFrom('webhooks')
    .selectAll()
    .where('org_id', '=', ctx.org.id)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  // Another organisation's webhook is answered exactly like a missing one.
  if (!row) throw notFound(`Webhook ${id}`);
  return row;
}

/** Newest first; the cursor is the id of the last webhook of the previous page. */
export async function listWebhooks({ ctx, limit, cursor }: { ctx: OrgCtx; limit: number; cursor?: string }) {
  let query = ctx.db
    .selectFrom('webhooks')
    .selectAll()
    .where('org_id', '=', ctx.org.id)
    .where('deleted_at', 'is', null);
  if (cursor !== undefined) query = query.where('id', '<', cursor);
  const rows = await query
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  const { page, next_cursor } = pageOf(rows, limit);
  return { data: page.map(webhookView), next_cursor };
}

export interface UpdateWebhookInput {
  url?: string;
  event_types?: SubscribableEventType[];
  description?: string | null;
  status?: 'active';
}

/**
 * PATCH: `status: "active"` reactivates (and clears the failure count). Only the fields the
 * PATCH names are written, on the locked row: the worker changes `status` and
 * `consecutive_failures` concurrently, and a write-back of the whole row would undo that.
 */
export async function updateWebhook({
  ctx,
  id,
  input,
}: {
  ctx: OrgCtx;
  id: string;
  input: UpdateWebhookInput;
}) {
  requireRole(ctx, 'admin');
  const url =
    input.url === undefined ? undefined : checkWebhookUrl(input.url, ctx.config.webhookAllowPrivateNetworks);
  const now = ctx.clock.now().getTime();
  return ctx.db.transaction().execute(async (trx) => {
    // PostgreSQL: the row lock makes a concurrent failure count wait, or this PATCH wait for
    // it; SQLite serialises writing transactions anyway.
    const before = await trx
      .selectFrom('webhooks')
      .selectAll()
      .where('org_id', '=', ctx.org.id)
      .where('id', '=', id)
      .where('deleted_at', 'is', null)
      .$if(ctx.engine === 'postgres', (qb) => qb.forUpdate())
      .executeTakeFirst();
    if (!before) throw notFound(`Webhook ${id}`);
    const changes: Partial<WebhookRow> = { updated_at: now };
    if (url !== undefined) changes.url = url;
    if (input.description !== undefined) changes.description = input.description;
    if (input.event_types !== undefined) {
      const wasDigest = (JSON.parse(before.event_types) as string[]).includes('weekly.digest');
      const isDigest = input.event_types.includes('weekly.digest');
      changes.event_types = JSON.stringify(input.event_types);
      // A newly subscribed digest owes nothing for weeks before the subscription.
      changes.digest_since = isDigest ? (wasDigest ? before.digest_since : now) : null;
    }
    if (input.status === 'active') {
      changes.status = 'active';
      changes.consecutive_failures = 0;
    }
    await trx.updateTable('webhooks').set(changes).where('id', '=', id).execute();
    const after: WebhookRow = { ...before, ...changes };
    // Events committed from here on go by the new subscription; those before, by the old one.
    const receives = (w: WebhookRow) => (w.status === 'deactivated' ? null : w.event_types);
    const next = receives(after);
    if (next !== receives(before)) {
      const eventTypes = next === null ? null : (JSON.parse(next) as string[]);
      await recordSubscription(trx, ctx.engine, { webhookId: id, orgId: before.org_id, eventTypes });
    }
    await recordAudit(
      { ...ctx, db: trx },
      {
        action: 'webhook.updated',
        target: `webhook:${id}`,
        before: webhookView(before),
        after: webhookView(after),
      },
    );
    return webhookView(after);
  });
}

/** Soft delete; deliveries still pending for it are canceled. */
export async function deleteWebhook({ ctx, id }: { ctx: OrgCtx; id: string }): Promise<void> {
  requireRole(ctx, 'admin');
  const now = ctx.clock.now().getTime();
  await ctx.db.transaction().execute(async (trx) => {
    const before = await getWebhookRow({ ctx: { ...ctx, db: trx }, id });
    await trx
      .updateTable('webhooks')
      .set({ deleted_at: now, updated_at: now })
      .where('id', '=', id)
      .execute();
    await trx
      .updateTable('webhook_deliveries')
      .set({ status: 'canceled', next_attempt_at: null, last_error: 'webhook deleted', updated_at: now })
      .where('webhook_id', '=', id)
      .where('status', '=', 'pending')
      .execute();
    await forgetSubscription(trx, { webhookId: id, orgId: before.org_id });
    await recordAudit(
      { ...ctx, db: trx },
      { action: 'webhook.deleted', target: `webhook:${id}`, before: webhookView(before), after: null },
    );
  });
}
