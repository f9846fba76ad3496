import type { Insertable } from 'kysely';
import type { DbOrTrx } from '../storage/db.js';
import type { WebhookDeliveriesTable, WebhookMessagesTable } from '../storage/schema.js';
import type { IngestSeq } from '../storage/snapshot.js';
import { newId } from '../ids.js';
import type { StoredEvent } from '../tracking/events.js';
import type { MessageType } from './event-types.js';
import type { Subscribers } from './subscribers.js';

interface MessageInput {
  orgId: string;
  type: MessageType;
  payload: unknown;
  webhookIds: readonly string[];
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
  /** Its position in commit order (`ingest_seq`), which decides who receives it (subscribers.ts). */
  seq: IngestSeq | null;
  /** True when this is the first event of its agent in the organisation. */
  isNewAgent: boolean;
}

/**
 * The messages of new events (`event.created`; `agent.first_event` for an agent's first event),
 * each with a pending delivery per webhook subscribed to its type when it was committed
 * (`subscribers`, read once per pass), in a few multi-row inserts with `db`. Each message is
 * dated at its event's receipt. The folding stage calls it in the transaction that advances its
 * watermark (src/fold/), so each message is written exactly once.
 */
export async function enqueueNewEventMessages(
  db: DbOrTrx,
  created: readonly NewEventMessage[],
  firstDelaySeconds: number,
  subscribers: Subscribers,
): Promise<number> {
  if (created.length === 0) return 0;
  const messages: Insertable<WebhookMessagesTable>[] = [];
  const deliveries: Insertable<WebhookDeliveriesTable>[] = [];
  const add = (orgId: string, type: MessageType, payload: unknown, seq: IngestSeq | null, at: Date) => {
    const webhookIds = subscribers.webhooksFor(orgId, type, seq);
    if (webhookIds.length === 0) return;
    const message = messageRows({ orgId, type, payload, webhookIds, at, firstDelaySeconds });
    messages.push(message.message);
    deliveries.push(...message.deliveries);
  };
  for (const { orgId, event, seq, isNewAgent } of created) {
    const at = new Date(event.received_at);
    add(orgId, 'event.created', event, seq, at);
    if (isNewAgent) add(orgId, 'agent.first_event', { agent_id: event.agent_id, event }, seq, at);
  }
  for (const rows of chunks(messages)) await db.insertInto('webhook_messages').values(rows).execute();
  for (const rows of chunks(deliveries)) await db.insertInto('webhook_deliveries').values(rows).execute();
  return messages.length;
}
