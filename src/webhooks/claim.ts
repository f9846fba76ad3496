import { sql } from 'kysely';
import type { ServiceCtx } from '../context.js';
import { SecretBoxError } from '../crypto/secret-box.js';
import { randomAlnum } from '../ids.js';
import type { MessageType } from './event-types.js';
import { openWebhookSecret } from './secret-storage.js';

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
  /** The signing secret, opened; an error instead when it cannot be (its key is not configured). */
  secret: { ok: string } | { error: string };
  /** The claim token, new at each claim: only its holder may record the result. */
  token: string;
}

/**
 * How many more attempts a worker may start per webhook: `webhooks` for those it has a say on
 * (those with attempts in flight), `otherwise` for the rest.
 */
export interface ClaimRoom {
  webhooks: ReadonlyMap<string, number>;
  otherwise: number;
}

/**
 * Claims up to `limit` due deliveries with a lease, in one statement, and no more of a webhook's
 * than its `room`: the due rows are taken in order of their due time, and a webhook's beyond
 * its room are left for a later claim. The attempt number is
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
  room,
}: {
  ctx: ServiceCtx;
  workerId: string;
  limit: number;
  leaseMs: number;
  /** Per webhook: a slow receiver waits for its own attempts, and others don't wait for it. */
  room: ClaimRoom;
}): Promise<ClaimedDelivery[]> {
  if (limit <= 0) return [];
  // Webhooks without room are left out of the scan; the others' room is a CASE on the webhook.
  const full = [...room.webhooks].flatMap(([id, n]) => (n <= 0 ? [id] : []));
  const some = [...room.webhooks].filter(([, n]) => n > 0);
  const int = (n: number) => sql<number>`CAST(${Math.floor(n)} AS INTEGER)`;
  // Ranked only when some webhook's room is below the limit (else every candidate may go).
  const ranked = room.otherwise < limit || some.some(([, n]) => n < limit);
  const roomOf =
    some.length === 0
      ? int(room.otherwise)
      : sql<number>`CASE webhook_id ${sql.join(
          some.map(([id, n]) => sql`WHEN ${id} THEN ${int(n)}`),
          sql` `,
        )} ELSE ${int(room.otherwise)} END`;
  const now = ctx.clock.now().getTime();
  const token = `${workerId}.${randomAlnum(16)}`;
  // The due rows are picked in a materialised CTE: PostgreSQL may re-run an `IN (SELECT …
  // LIMIT n SKIP LOCKED)` subquery and so claim more than n rows. They are ranked per webhook
  // in a second one (PostgreSQL allows no window function beside FOR UPDATE).
  const claimed = await ctx.db
    .with(
      (cte) => cte('candidates').materialized(),
      (db) =>
        db
          .selectFrom('webhook_deliveries as d')
          .innerJoin('webhooks as w', 'w.id', 'd.webhook_id')
          .select(['d.id', 'd.webhook_id', 'd.next_attempt_at'])
          .where('d.status', '=', 'pending')
          .where('d.next_attempt_at', '<=', now)
          .where('d.locked_until', 'is', null)
          .where('w.deleted_at', 'is', null)
          // A deactivated webhook's deliveries wait (not lost) until it is reactivated; test pings go anyway.
          .where((eb) => eb.or([eb('w.status', '<>', 'deactivated'), eb('d.event_type', '=', 'test.ping')]))
          .$if(full.length > 0, (qb) => qb.where('d.webhook_id', 'not in', full))
          .orderBy('d.next_attempt_at')
          .limit(limit)
          .$if(ctx.engine === 'postgres', (qb) => qb.forUpdate(['d']).skipLocked()),
    )
    .with('due', (db) =>
      db
        .selectFrom('candidates')
        .select([
          'id',
          (ranked
            ? sql<number>`row_number() OVER (PARTITION BY webhook_id ORDER BY next_attempt_at, id)`
            : int(1)
          ).as('nth'),
          (ranked ? roomOf : int(1)).as('room'),
        ]),
    )
    .updateTable('webhook_deliveries')
    .set((eb) => ({
      attempts: eb('attempts', '+', 1),
      locked_until: now + leaseMs,
      claimed_by: token,
      updated_at: now,
    }))
    .where('id', 'in', (eb) => eb.selectFrom('due').select('due.id').whereRef('due.nth', '<=', 'due.room'))
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
      'w.secret_key_id',
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
    secret: signingSecret(ctx, { id: r.webhook_id, secret: r.secret, secret_key_id: r.secret_key_id }),
    token,
  }));
}

function signingSecret(
  ctx: ServiceCtx,
  row: Parameters<typeof openWebhookSecret>[1],
): ClaimedDelivery['secret'] {
  try {
    return { ok: openWebhookSecret(ctx, row) };
  } catch (error) {
    if (!(error instanceof SecretBoxError)) throw error;
    const hint = error.reason === 'unknown_key' ? '; configure that key in TALLY_SECRET_KEY_PREVIOUS' : '';
    return { error: `the signing secret cannot be decrypted: ${error.message}${hint}` };
  }
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
