import type { Insertable } from 'kysely';
import type { DbOrTrx } from '../storage/db.js';
import type { WebhookDeliveriesTable, WebhookMessagesTable } from '../storage/schema.js';
import { newId } from '../ids.js';
import type { StoredEvent } from '../tracking/events.js';
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

/** A new event whose webhook messages are to be written. */
export interface NewEventMessage {
  orgId: string;
  event: StoredEvent;
  /** True when this is the first event of its agent in the organisation. */
  isNewAgent: boolean;
}

/**
 * The messages of new events (`event.created`; `agent.first_event` for an agent's first event),
 * each with a pending delivery per subscribed webhook, in a few multi-row inserts with `db`:
 * one indexed query for organisations without webhooks. Each message is dated at its event's
 * receipt. The folding stage calls it in the transaction that advances its watermark (fold.ts),
 * so each message is written exactly once.
 */
export async function enqueueNewEventMessages(
  db: DbOrTrx,
  created: readonly NewEventMessage[],
  firstDelaySeconds: number,
): Promise<number> {
  if (created.length === 0) return 0;
  const orgIds = [...new Set(created.map((c) => c.orgId))];
  const hooks = [];
  for (let i = 0; i < orgIds.length; i += INSERT_CHUNK) {
    hooks.push(
      ...(await db
        .selectFrom('webhooks')
        .select(['id', 'org_id', 'event_types'])
        .where('org_id', 'in', orgIds.slice(i, i + INSERT_CHUNK))
        .where('deleted_at', 'is', null)
        .where('status', '<>', 'deactivated')
        .execute()),
    );
  }
  if (hooks.length === 0) return 0;
  const subscribed = new Map<string, string[]>();
  for (const hook of hooks) {
    for (const type of JSON.parse(hook.event_types) as string[]) {
      const key = `${hook.org_id} ${type}`;
      subscribed.set(key, [...(subscribed.get(key) ?? []), hook.id]);
    }
  }
  const messages: Insertable<WebhookMessagesTable>[] = [];
  const deliveries: Insertable<WebhookDeliveriesTable>[] = [];
  const add = (orgId: string, type: MessageType, payload: unknown, at: Date) => {
    const webhookIds = subscribed.get(`${orgId} ${type}`);
    if (!webhookIds) return;
    const message = messageRows({ orgId, type, payload, webhookIds, at, firstDelaySeconds });
    messages.push(message.message);
    deliveries.push(...message.deliveries);
  };
  for (const { orgId, event, isNewAgent } of created) {
    const at = new Date(event.received_at);
    add(orgId, 'event.created', event, at);
    if (isNewAgent) add(orgId, 'agent.first_event', { agent_id: event.agent_id, event }, at);
  }
  for (const rows of chunks(messages)) await db.insertInto('webhook_messages').values(rows).execute();
  for (const rows of chunks(deliveries)) await db.insertInto('webhook_deliveries').values(rows).execute();
  return messages.length;
}
