import type { DbOrTrx } from '../storage/db.js';
import { newId } from '../ids.js';
import type { EventCreated } from '../tracking/side-effects.js';
import type { MessageType } from './event-types.js';

/**
 * Writes one message and one pending delivery per webhook, with `db` (the transaction of the
 * change that causes it: the transactional outbox). The first attempt is due at once.
 */
export async function enqueueMessage(input: {
  db: DbOrTrx;
  orgId: string;
  type: MessageType;
  payload: unknown;
  webhookIds: string[];
  at: Date;
}): Promise<{ messageId: string; deliveryIds: string[] }> {
  const { db, at } = input;
  const now = at.getTime();
  const messageId = newId('whmsg', at);
  await db
    .insertInto('webhook_messages')
    .values({
      id: messageId,
      org_id: input.orgId,
      type: input.type,
      payload: JSON.stringify(input.payload),
      created_at: now,
    })
    .execute();
  const deliveries = input.webhookIds.map((webhookId) => ({
    id: newId('whdel', at),
    org_id: input.orgId,
    webhook_id: webhookId,
    message_id: messageId,
    event_type: input.type,
    status: 'pending',
    attempts: 0,
    next_attempt_at: now,
    locked_until: null,
    claimed_by: null,
    last_error: null,
    created_at: now,
    updated_at: now,
  }));
  if (deliveries.length > 0) await db.insertInto('webhook_deliveries').values(deliveries).execute();
  return { messageId, deliveryIds: deliveries.map((d) => d.id) };
}

/**
 * The outbox step of POST /v1/track, on its hot path: one indexed query for an organisation
 * without webhooks; messages only when some active subscription wants them.
 */
export async function enqueueEventMessages(created: EventCreated): Promise<void> {
  const { ctx, event } = created;
  const hooks = await ctx.db
    .selectFrom('webhooks')
    .select(['id', 'event_types'])
    .where('org_id', '=', ctx.org.id)
    .where('deleted_at', 'is', null)
    .where('status', '<>', 'deactivated')
    .execute();
  if (hooks.length === 0) return;
  const subscribed = (type: MessageType) =>
    hooks.filter((h) => (JSON.parse(h.event_types) as string[]).includes(type)).map((h) => h.id);
  const at = new Date(event.received_at);
  const forEvent = subscribed('event.created');
  if (forEvent.length > 0) {
    await enqueueMessage({
      db: ctx.db,
      orgId: ctx.org.id,
      type: 'event.created',
      payload: event,
      webhookIds: forEvent,
      at,
    });
  }
  const forAgent = created.isNewAgent ? subscribed('agent.first_event') : [];
  if (forAgent.length > 0) {
    await enqueueMessage({
      db: ctx.db,
      orgId: ctx.org.id,
      type: 'agent.first_event',
      payload: { agent_id: event.agent_id, event },
      webhookIds: forAgent,
      at,
    });
  }
}
