import type { ServiceCtx } from '../context.js';
import type { MessageType } from './event-types.js';
import { markWebhookHealthy, recordFailedDelivery } from './health.js';

export interface AttemptRecord {
  deliveryId: string;
  webhookId: string;
  type: MessageType;
  attempt: number;
  token: string;
  statusCode: number | null;
  responseBody: string | null;
  error: string | null;
  signature: string | null;
  durationMs: number;
  startedAt: number;
}

/** Attempts a delivery may make: test pings go once; others follow the retry schedule. */
export function maxAttempts(type: MessageType, delays: number[]): number {
  return type === 'test.ping' ? 1 : delays.length;
}

/**
 * Writes the outcome of one attempt, only if `token` still holds the claim (a worker whose lease
 * ran out must not overwrite the recovery). Schedules the next attempt from the failure time
 * (DESIGN §8), or closes the delivery and updates the webhook's health. Returns false when the
 * claim was lost.
 */
export async function recordAttempt(ctx: ServiceCtx, record: AttemptRecord): Promise<boolean> {
  const succeeded =
    record.error === null &&
    record.statusCode !== null &&
    record.statusCode >= 200 &&
    record.statusCode < 300;
  const at = ctx.clock.now();
  const now = at.getTime();
  return ctx.db.transaction().execute(async (trx) => {
    const tctx = { ...ctx, db: trx };
    const current = await trx
      .selectFrom('webhook_deliveries')
      .select(['status', 'claimed_by'])
      .where('id', '=', record.deliveryId)
      .$if(ctx.engine === 'postgres', (qb) => qb.forUpdate())
      .executeTakeFirst();
    if (!current || current.claimed_by !== record.token) return false;

    const delays = ctx.config.webhookRetryDelaysSeconds;
    const nextDelay = delays[record.attempt];
    const final = succeeded || record.attempt >= maxAttempts(record.type, delays) || nextDelay === undefined;
    const canceled = current.status !== 'pending';
    const error = record.error ?? (succeeded ? null : `HTTP ${record.statusCode ?? '?'}`);
    await trx
      .updateTable('webhook_deliveries')
      .set({
        status: canceled ? current.status : succeeded ? 'succeeded' : final ? 'failed' : 'pending',
        next_attempt_at: final || canceled ? null : now + (nextDelay ?? 0) * 1000,
        locked_until: null,
        claimed_by: null,
        last_error: error,
        updated_at: now,
      })
      .where('id', '=', record.deliveryId)
      .execute();
    await trx
      .insertInto('webhook_attempts')
      .values({
        delivery_id: record.deliveryId,
        attempt: record.attempt,
        webhook_id: record.webhookId,
        succeeded: succeeded ? 1 : 0,
        status_code: record.statusCode,
        response_body: record.responseBody,
        error: record.error,
        signature: record.signature,
        duration_ms: record.durationMs,
        started_at: record.startedAt,
        finished_at: now,
      })
      .execute();
    // Test pings are for checking a receiver by hand; they never move the webhook's state.
    if (record.type !== 'test.ping' && !canceled) {
      if (succeeded) await markWebhookHealthy(tctx, record.webhookId, now);
      else if (final) await recordFailedDelivery(tctx, record.webhookId, at);
    }
    return true;
  });
}
