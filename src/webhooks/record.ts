import { sql, type Insertable } from 'kysely';
import type { ServiceCtx } from '../context.js';
import type { WebhookAttemptsTable } from '../storage/schema.js';
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
  const [recorded] = await recordAttempts(ctx, [record]);
  return recorded ?? false;
}

/**
 * Writes the outcomes of several attempts, each as recordAttempt would. On PostgreSQL, when all
 * are successes, in one statement (recordSuccesses). Otherwise in one transaction with set-wise
 * statements: one read of the claims, one update for the deliveries that succeeded, one insert
 * of the attempts, and the webhooks' health in the outcomes' order.
 */
export async function recordAttempts(ctx: ServiceCtx, records: AttemptRecord[]): Promise<boolean[]> {
  if (records.length === 0) return [];
  const at = ctx.clock.now();
  const now = at.getTime();
  if (ctx.engine === 'postgres' && records.every(succeeded)) {
    // The usual outcome, a success of a pending delivery, is one statement. What it did not
    // record (a lost or canceled claim, the same delivery twice) goes the general way below.
    const recorded = await recordSuccesses(ctx, records, now);
    const rest = records.filter((r) => !recorded.has(r));
    const restResults = await recordInTransaction(ctx, rest, at);
    return records.map((r) => recorded.has(r) || (restResults[rest.indexOf(r)] ?? false));
  }
  return recordInTransaction(ctx, records, at);
}

const succeeded = (record: AttemptRecord) =>
  record.error === null && record.statusCode !== null && record.statusCode >= 200 && record.statusCode < 300;

/**
 * PostgreSQL: successes recorded in one statement (one round trip, no BEGIN and COMMIT), as the
 * transaction below would: the delivery closed if `token` still holds its claim and it is
 * pending, its attempt logged, its webhook healthy again (test pings excepted). Returns the
 * records it wrote; the first of a delivery's records only.
 */
async function recordSuccesses(
  ctx: ServiceCtx,
  records: AttemptRecord[],
  now: number,
): Promise<Set<AttemptRecord>> {
  const firsts = new Map<string, AttemptRecord>();
  for (const r of records) if (!firsts.has(r.deliveryId)) firsts.set(r.deliveryId, r);
  const rows = [...firsts.values()];
  const column = <T>(value: (r: AttemptRecord) => T, type: string) =>
    sql`${rows.map(value)}::${sql.raw(type)}[]`;
  const { rows: done } = await sql<{ id: string }>`
    WITH input AS (
      SELECT * FROM unnest(
        ${column((r) => r.deliveryId, 'text')}, ${column((r) => r.token, 'text')},
        ${column((r) => r.attempt, 'bigint')}, ${column((r) => r.webhookId, 'text')},
        ${column((r) => r.type, 'text')}, ${column((r) => r.statusCode, 'bigint')},
        ${column((r) => r.responseBody, 'text')}, ${column((r) => r.signature, 'text')},
        ${column((r) => r.durationMs, 'bigint')}, ${column((r) => r.startedAt, 'bigint')}
      ) AS t(delivery_id, token, attempt, webhook_id, type, status_code, response_body, signature,
             duration_ms, started_at)
    ),
    done AS (
      UPDATE webhook_deliveries AS d
      SET status = 'succeeded', next_attempt_at = NULL, locked_until = NULL, claimed_by = NULL,
          last_error = NULL, updated_at = ${now}
      FROM input AS i
      WHERE d.id = i.delivery_id AND d.claimed_by = i.token AND d.status = 'pending'
      RETURNING d.id
    ),
    logged AS (
      INSERT INTO webhook_attempts (delivery_id, attempt, webhook_id, succeeded, status_code,
        response_body, error, signature, duration_ms, started_at, finished_at)
      SELECT i.delivery_id, i.attempt, i.webhook_id, 1, i.status_code, i.response_body, NULL,
             i.signature, i.duration_ms, i.started_at, ${now}::bigint
      FROM input AS i JOIN done ON done.id = i.delivery_id
    ),
    healthy AS (
      UPDATE webhooks
      SET consecutive_failures = 0, status = 'active', updated_at = ${now}
      WHERE id IN (SELECT i.webhook_id FROM input AS i JOIN done ON done.id = i.delivery_id
                   WHERE i.type <> 'test.ping')
        AND status <> 'deactivated' AND (consecutive_failures > 0 OR status <> 'active')
    )
    SELECT id FROM done`.execute(ctx.db);
  const ids = new Set(done.map((d) => d.id));
  return new Set(rows.filter((r) => ids.has(r.deliveryId)));
}

/** Any outcomes, in one transaction, as described at recordAttempts. */
async function recordInTransaction(ctx: ServiceCtx, records: AttemptRecord[], at: Date): Promise<boolean[]> {
  if (records.length === 0) return [];
  const now = at.getTime();
  const delays = ctx.config.webhookRetryDelaysSeconds;
  return ctx.db.transaction().execute(async (trx) => {
    const tctx = { ...ctx, db: trx };
    const claims = await trx
      .selectFrom('webhook_deliveries')
      .select(['id', 'status', 'claimed_by'])
      .where(
        'id',
        'in',
        records.map((r) => r.deliveryId),
      )
      .$if(ctx.engine === 'postgres', (qb) => qb.forUpdate())
      .execute();
    const current = new Map(claims.map((d) => [d.id, d]));
    const results: boolean[] = [];
    const succeededIds: string[] = [];
    const attempts: Array<Insertable<WebhookAttemptsTable>> = [];
    const health: Array<{ webhookId: string; healthy: boolean }> = [];
    for (const record of records) {
      const claim = current.get(record.deliveryId);
      if (!claim || claim.claimed_by !== record.token) {
        results.push(false);
        continue;
      }
      // Its claim is spent: the same delivery again in the batch is a lost claim.
      current.delete(record.deliveryId);
      const success = succeeded(record);
      const nextDelay = delays[record.attempt];
      const final = success || record.attempt >= maxAttempts(record.type, delays) || nextDelay === undefined;
      const canceled = claim.status !== 'pending';
      if (success && !canceled) succeededIds.push(record.deliveryId);
      else {
        await trx
          .updateTable('webhook_deliveries')
          .set({
            status: canceled ? claim.status : success ? 'succeeded' : final ? 'failed' : 'pending',
            next_attempt_at: final || canceled ? null : now + (nextDelay ?? 0) * 1000,
            locked_until: null,
            claimed_by: null,
            last_error: record.error ?? (success ? null : `HTTP ${record.statusCode ?? '?'}`),
            updated_at: now,
          })
          .where('id', '=', record.deliveryId)
          .execute();
      }
      attempts.push({
        delivery_id: record.deliveryId,
        attempt: record.attempt,
        webhook_id: record.webhookId,
        succeeded: success ? 1 : 0,
        status_code: record.statusCode,
        response_body: record.responseBody,
        error: record.error,
        signature: record.signature,
        duration_ms: record.durationMs,
        started_at: record.startedAt,
        finished_at: now,
      });
      // Test pings are for checking a receiver by hand; they never move the webhook's state.
      if (record.type !== 'test.ping' && !canceled && (success || final))
        health.push({ webhookId: record.webhookId, healthy: success });
      results.push(true);
    }
    if (succeededIds.length > 0) {
      await trx
        .updateTable('webhook_deliveries')
        .set({
          status: 'succeeded',
          next_attempt_at: null,
          locked_until: null,
          claimed_by: null,
          last_error: null,
          updated_at: now,
        })
        .where('id', 'in', succeededIds)
        .execute();
    }
    if (attempts.length > 0) await trx.insertInto('webhook_attempts').values(attempts).execute();
    // In the outcomes' order; a success right after a success of the same webhook changes nothing.
    const last = new Map<string, boolean>();
    for (const { webhookId, healthy } of health) {
      if (healthy && last.get(webhookId) === true) continue;
      last.set(webhookId, healthy);
      if (healthy) await markWebhookHealthy(tctx, webhookId, now);
      else await recordFailedDelivery(tctx, webhookId, at);
    }
    return results;
  });
}

/** Most outcomes one transaction of an AttemptRecorder writes. */
const RECORD_BATCH = 100;

/**
 * Records attempts' outcomes as they come (the worker's), those that come together with one
 * recordAttempts: one transaction on SQLite, which has one writer (at 500 deliveries/s a
 * transaction each kept the worker waiting on its own writes), and one statement on PostgreSQL
 * while they are all successes (on PostgreSQL `bench:webhooks` measured a p99 of 1.3–3.2 s with
 * a transaction per outcome, six round trips each, 0.8 s with a statement per outcome, and
 * 0.25–0.7 s batched). A batch that fails is written again one outcome at a time, so one bad
 * outcome fails only itself.
 */
export class AttemptRecorder {
  private readonly queue: Array<{
    record: AttemptRecord;
    resolve(recorded: boolean): void;
    reject(error: unknown): void;
  }> = [];
  private scheduled = false;
  private writing = false;

  constructor(private readonly ctx: ServiceCtx) {}

  record(record: AttemptRecord): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.queue.push({ record, resolve, reject });
      this.flush();
    });
  }

  private flush(): void {
    if (this.scheduled || this.writing) return;
    this.scheduled = true;
    // The outcomes that arrive in this turn of the event loop join the batch.
    setImmediate(() => {
      this.scheduled = false;
      const batch = this.queue.splice(0, RECORD_BATCH);
      if (batch.length === 0) return;
      this.writing = true;
      void this.write(batch).finally(() => {
        this.writing = false;
        if (this.queue.length > 0) this.flush();
      });
    });
  }

  private async write(batch: AttemptRecorder['queue']): Promise<void> {
    try {
      const results = await recordAttempts(
        this.ctx,
        batch.map((b) => b.record),
      );
      batch.forEach((b, i) => b.resolve(results[i] ?? false));
      return;
    } catch (error) {
      if (batch.length === 1) {
        batch[0]?.reject(error);
        return;
      }
    }
    for (const b of batch) {
      try {
        b.resolve(await recordAttempt(this.ctx, b.record));
      } catch (error) {
        b.reject(error);
      }
    }
  }
}
