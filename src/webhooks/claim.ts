import type { ServiceCtx } from '../context.js';
import { randomAlnum } from '../ids.js';
import type { MessageType } from './event-types.js';

export interface ClaimedDelivery {
  id: string;
  orgId: string;
  webhookId: string;
  messageId: string;
  type: MessageType;
  payload: string;
  messageCreatedAt: number;
  /** The number of the attempt this claim makes (1-based); never sent under this number again. */
  attempt: number;
  url: string;
  secret: string;
  /** The claim token, new at each claim: only its holder may record the result. */
  token: string;
}

/**
 * Claims up to `limit` due deliveries with a lease, in one statement. The attempt number is
 * taken at claim time, so a claim that dies (crash, kill) is never re-sent under the same
 * number. PostgreSQL: `FOR UPDATE SKIP LOCKED` lets several workers claim side by side without
 * waiting on or taking each other's rows; SQLite serialises writers anyway. Each claim gets a
 * random token (after the worker id, for the reader of the table), so the late result of an
 * earlier claim never matches a newer one, even by the same worker.
 */
export async function claimDueDeliveries({
  ctx,
  workerId,
  limit,
  leaseMs,
  busyWebhookIds,
}: {
  ctx: ServiceCtx;
  workerId: string;
  limit: number;
  leaseMs: number;
  /** Webhooks this worker already has enough in flight for: a slow receiver waits, others don't. */
  busyWebhookIds: string[];
}): Promise<ClaimedDelivery[]> {
  if (limit <= 0) return [];
  const now = ctx.clock.now().getTime();
  const token = `${workerId}.${randomAlnum(16)}`;
  // The due rows are picked in a materialised CTE: PostgreSQL may re-run an `IN (SELECT …
  // LIMIT n SKIP LOCKED)` subquery and so claim more than n rows.
  const claimed = await ctx.db
    .with(
      (cte) => cte('due').materialized(),
      (db) =>
        db
          .selectFrom('webhook_deliveries as d')
          .innerJoin('webhooks as w', 'w.id', 'd.webhook_id')
          .select('d.id')
          .where('d.status', '=', 'pending')
          .where('d.next_attempt_at', '<=', now)
          .where('d.locked_until', 'is', null)
          .where('w.deleted_at', 'is', null)
          // A deactivated webhook's deliveries wait (not lost) until it is reactivated; test pings go anyway.
          .where((eb) => eb.or([eb('w.status', '<>', 'deactivated'), eb('d.event_type', '=', 'test.ping')]))
          .$if(busyWebhookIds.length > 0, (qb) => qb.where('d.webhook_id', 'not in', busyWebhookIds))
          .orderBy('d.next_attempt_at')
          .limit(limit)
          .$if(ctx.engine === 'postgres', (qb) => qb.forUpdate(['d']).skipLocked()),
    )
    .updateTable('webhook_deliveries')
    .set((eb) => ({
      attempts: eb('attempts', '+', 1),
      locked_until: now + leaseMs,
      claimed_by: token,
      updated_at: now,
    }))
    .where('id', 'in', (eb) => eb.selectFrom('due').select('due.id'))
    .where('status', '=', 'pending')
    .where('locked_until', 'is', null)
    .returning(['id', 'attempts'])
    .execute();
  if (claimed.length === 0) return [];

  const rows = await ctx.db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_messages as m', 'm.id', 'd.message_id')
    .innerJoin('webhooks as w', 'w.id', 'd.webhook_id')
    .select([
      'd.id',
      'd.org_id',
      'd.webhook_id',
      'd.message_id',
      'm.type',
      'm.payload',
      'm.created_at',
      'w.url',
      'w.secret',
    ])
    .where(
      'd.id',
      'in',
      claimed.map((c) => c.id),
    )
    .execute();
  const attempts = new Map(claimed.map((c) => [c.id, Number(c.attempts)]));
  return rows.map((r) => ({
    id: r.id,
    orgId: r.org_id,
    webhookId: r.webhook_id,
    messageId: r.message_id,
    type: r.type as MessageType,
    payload: r.payload,
    messageCreatedAt: Number(r.created_at),
    attempt: attempts.get(r.id) ?? 1,
    url: r.url,
    secret: r.secret,
    token,
  }));
}

/** Claims whose lease ran out: their worker died (or hung) before recording the attempt. */
export async function findExpiredClaims({ ctx, limit }: { ctx: ServiceCtx; limit: number }) {
  const now = ctx.clock.now().getTime();
  const rows = await ctx.db
    .selectFrom('webhook_deliveries')
    .select(['id', 'org_id', 'webhook_id', 'event_type', 'attempts', 'claimed_by'])
    .where('status', '=', 'pending')
    .where('locked_until', 'is not', null)
    .where('locked_until', '<=', now)
    .limit(limit)
    .execute();
  return rows.flatMap((r) =>
    r.claimed_by === null
      ? []
      : [
          {
            id: r.id,
            orgId: r.org_id,
            webhookId: r.webhook_id,
            type: r.event_type as MessageType,
            attempt: Number(r.attempts),
            token: r.claimed_by,
          },
        ],
  );
}
