import type { Insertable } from 'kysely';
import type { OrgCtx } from '../context.js';
import type { DbOrTrx } from '../storage/db.js';
import type { WebhookDeliveriesTable, WebhookMessagesTable } from '../storage/schema.js';
import { newId } from '../ids.js';
import type { EventCreated } from '../tracking/side-effects.js';
import type { MessageType } from './event-types.js';

interface MessageInput {
  orgId: string;
  type: MessageType;
  payload: unknown;
  webhookIds: string[];
  at: Date;
  /** The first delay of TALLY_WEBHOOK_RETRY_DELAYS: attempt 1 is due this long after `at`. */
  firstDelaySeconds: number;
}

/** One message and one pending delivery per webhook, the first attempt due after the first delay. */
function messageRows(input: MessageInput) {
  const now = input.at.getTime();
  const firstAttemptAt = now + input.firstDelaySeconds * 1000;
  const messageId = newId('whmsg', input.at);
  const message: Insertable<WebhookMessagesTable> = {
    id: messageId,
    org_id: input.orgId,
    type: input.type,
    payload: JSON.stringify(input.payload),
    created_at: now,
  };
  const deliveries: Insertable<WebhookDeliveriesTable>[] = input.webhookIds.map((webhookId) => ({
    id: newId('whdel', input.at),
    org_id: input.orgId,
    webhook_id: webhookId,
    message_id: messageId,
    event_type: input.type,
    status: 'pending',
    attempts: 0,
    next_attempt_at: firstAttemptAt,
    locked_until: null,
    claimed_by: null,
    last_error: null,
    created_at: now,
    updated_at: now,
  }));
  return { message, deliveries };
}

/**
 * Writes one message and its deliveries with `db`: the transaction of the change that causes
 * it (the transactional outbox).
 */
export async function enqueueMessage(
  input: MessageInput & { db: DbOrTrx },
): Promise<{ messageId: string; deliveryIds: string[] }> {
  const { message, deliveries } = messageRows(input);
  await input.db.insertInto('webhook_messages').values(message).execute();
  if (deliveries.length > 0) await input.db.insertInto('webhook_deliveries').values(deliveries).execute();
  return { messageId: message.id, deliveryIds: deliveries.map((d) => d.id) };
}

const INSERT_CHUNK = 200;

function chunks<T>(rows: T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < rows.length; i += INSERT_CHUNK) out.push(rows.slice(i, i + INSERT_CHUNK));
  return out;
}

/**
 * The outbox step of POST /v1/track (and batches), on its hot path: one indexed query for
 * organisations without webhooks; otherwise the messages and deliveries of the whole batch in a
 * few multi-row inserts, in the events' transaction (`db`).
 */
export async function enqueueEventMessages(db: DbOrTrx, created: EventCreated[]): Promise<void> {
  if (created.length === 0) return;
  const orgIds = [...new Set(created.map((c) => c.ctx.org.id))];
  const hooks = await db
    .selectFrom('webhooks')
    .select(['id', 'org_id', 'event_types'])
    .where('org_id', 'in', orgIds)
    .where('deleted_at', 'is', null)
    .where('status', '<>', 'deactivated')
    .execute();
  if (hooks.length === 0) return;
  const subscribed = new Map<string, string[]>();
  for (const hook of hooks) {
    for (const type of JSON.parse(hook.event_types) as string[]) {
      const key = `${hook.org_id} ${type}`;
      subscribed.set(key, [...(subscribed.get(key) ?? []), hook.id]);
    }
  }
  const messages: Insertable<WebhookMessagesTable>[] = [];
  const deliveries: Insertable<WebhookDeliveriesTable>[] = [];
  const add = (ctx: OrgCtx, type: MessageType, payload: unknown, at: Date) => {
    const orgId = ctx.org.id;
    const webhookIds = subscribed.get(`${orgId} ${type}`);
    if (!webhookIds) return;
    const firstDelaySeconds = ctx.config.webhookRetryDelaysSeconds[0] ?? 0;
    const message = messageRows({ orgId, type, payload, webhookIds, at, firstDelaySeconds });
    messages.push(message.message);
    deliveries.push(...message.deliveries);
  };
  for (const { ctx, event, isNewAgent } of created) {
    const at = new Date(event.received_at);
    add(ctx, 'event.created', event, at);
    if (isNewAgent) add(ctx, 'agent.first_event', { agent_id: event.agent_id, event }, at);
  }
  for (const rows of chunks(messages)) await db.insertInto('webhook_messages').values(rows).execute();
  for (const rows of chunks(deliveries)) await db.insertInto('webhook_deliveries').values(rows).execute();
}
