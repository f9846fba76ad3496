import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimDueDeliveries, type ClaimedDelivery } from '../../src/webhooks/claim.js';
import { AttemptRecorder, recordAttempts, type AttemptRecord } from '../../src/webhooks/record.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { ALLOW_PRIVATE, subscribe, track } from './helpers.js';

/** The outcome of a claimed attempt: 200, or the status given (null: no answer). */
function outcome(d: ClaimedDelivery, status: number | null = 200, token = d.token): AttemptRecord {
  return {
    deliveryId: d.id,
    webhookId: d.webhookId,
    type: d.type,
    attempt: d.attempt,
    token,
    statusCode: status,
    responseBody: status === null ? null : 'ok',
    error: status === null ? 'ECONNREFUSED: refused' : null,
    signature: 'v1,x',
    durationMs: 3,
    startedAt: 0,
  };
}

describe.each(ENGINES)('outcomes recorded together (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, { env: ALLOW_PRIVATE });
  });
  afterAll(async () => {
    await h.close();
  });

  /** A webhook of a new organisation with `n` claimed deliveries, oldest first. */
  async function claimed(n: number) {
    const org = await h.createOrg({ plan: 'pro' });
    const hook = await subscribe(h, 'http://127.0.0.1:9/hook', ['event.created'], org.apiKey);
    for (let i = 0; i < n; i++) {
      h.clock.advance(1);
      await track(h, 'bot', org.apiKey);
    }
    const deliveries = await claimDueDeliveries({
      ctx: h.ctx,
      workerId: 'w',
      limit: n,
      leaseMs: 60_000,
      room: { webhooks: new Map(), otherwise: n },
    });
    expect(deliveries).toHaveLength(n);
    const byId = await h.ctx.db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('webhook_id', '=', hook.id)
      .orderBy('next_attempt_at')
      .execute();
    const order = byId.map((d) => d.id);
    return { hook, deliveries: deliveries.sort((a, b) => order.indexOf(a.id) - order.indexOf(b.id)) };
  }
  const delivery = (id: string) =>
    h.ctx.db.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const webhook = (id: string) =>
    h.ctx.db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

  it('each outcome as alone: a success closes, a failure schedules the retry, a lost claim writes nothing', async () => {
    const { deliveries } = await claimed(3);
    const [ok, lost, failed] = deliveries as [ClaimedDelivery, ClaimedDelivery, ClaimedDelivery];
    const results = await recordAttempts(h.ctx, [
      outcome(ok),
      outcome(lost, 200, 'w.another-claim'),
      outcome(failed, 500),
      // The same attempt twice: its claim is spent by the first.
      outcome(ok),
    ]);
    expect(results).toEqual([true, false, true, false]);
    expect(await delivery(ok.id)).toMatchObject({
      status: 'succeeded',
      claimed_by: null,
      next_attempt_at: null,
    });
    expect(await delivery(lost.id)).toMatchObject({ status: 'pending', claimed_by: lost.token });
    const retry = await delivery(failed.id);
    expect(retry).toMatchObject({ status: 'pending', claimed_by: null, last_error: 'HTTP 500' });
    expect(Number(retry.next_attempt_at)).toBe(h.clock.now().getTime() + 30_000);
    const attempts = await h.ctx.db
      .selectFrom('webhook_attempts')
      .select(['delivery_id', 'succeeded', 'status_code'])
      .where('delivery_id', 'in', [ok.id, lost.id, failed.id])
      .execute();
    expect(attempts.map((a) => [a.delivery_id, Number(a.succeeded), a.status_code]).sort()).toEqual(
      [
        [ok.id, 1, 200],
        [failed.id, 0, 500],
      ].sort(),
    );
  });

  it('successes alone (one statement on PostgreSQL) are recorded as each would be alone', async () => {
    const { hook, deliveries } = await claimed(5);
    const [ok, lost, twice, canceled, ping] = deliveries as [
      ClaimedDelivery,
      ClaimedDelivery,
      ClaimedDelivery,
      ClaimedDelivery,
      ClaimedDelivery,
    ];
    await h.ctx.db
      .updateTable('webhooks')
      .set({ consecutive_failures: 3, status: 'failing' })
      .where('id', '=', hook.id)
      .execute();
    // The webhook was deleted while this attempt was out: its delivery stays canceled.
    await h.ctx.db
      .updateTable('webhook_deliveries')
      .set({ status: 'canceled', next_attempt_at: null })
      .where('id', '=', canceled.id)
      .execute();
    // A test ping's success says nothing of the webhook's health.
    const pingOutcome = { ...outcome(ping), type: 'test.ping' as const };
    expect(await recordAttempts(h.ctx, [pingOutcome])).toEqual([true]);
    expect(await webhook(hook.id)).toMatchObject({ status: 'failing', consecutive_failures: 3 });

    const results = await recordAttempts(h.ctx, [
      outcome(ok),
      outcome(lost, 200, 'w.another-claim'),
      outcome(twice),
      outcome(twice),
      outcome(canceled),
    ]);
    expect(results).toEqual([true, false, true, false, true]);
    for (const d of [ok, twice, ping]) {
      expect(await delivery(d.id)).toMatchObject({
        status: 'succeeded',
        claimed_by: null,
        locked_until: null,
        next_attempt_at: null,
        last_error: null,
      });
    }
    expect(await delivery(lost.id)).toMatchObject({ status: 'pending', claimed_by: lost.token });
    expect(await delivery(canceled.id)).toMatchObject({ status: 'canceled', claimed_by: null });
    const attempts = await h.ctx.db
      .selectFrom('webhook_attempts')
      .select(['delivery_id', 'attempt', 'succeeded', 'status_code', 'response_body', 'finished_at'])
      .where('webhook_id', '=', hook.id)
      .execute();
    expect(
      attempts
        .map((a) => [a.delivery_id, Number(a.attempt), Number(a.succeeded), Number(a.status_code)])
        .sort(),
    ).toEqual([ok, twice, canceled, ping].map((d) => [d.id, d.attempt, 1, 200]).sort());
    expect(
      attempts.every((a) => a.response_body === 'ok' && Number(a.finished_at) === h.clock.now().getTime()),
    ).toBe(true);
    expect(await webhook(hook.id)).toMatchObject({ status: 'active', consecutive_failures: 0 });
  });

  it('the webhook’s health follows the outcomes in their order', async () => {
    const last = h.ctx.config.webhookRetryDelaysSeconds.length;
    for (const [order, failures] of [
      ['failure, then success', 0],
      ['success, then failure', 1],
    ] as const) {
      const { hook, deliveries } = await claimed(2);
      const [a, b] = deliveries as [ClaimedDelivery, ClaimedDelivery];
      await h.ctx.db
        .updateTable('webhooks')
        .set({ consecutive_failures: 3 })
        .where('id', '=', hook.id)
        .execute();
      // The last attempt, failed: the delivery fails for good and counts against the webhook.
      const finalFailure = { ...outcome(a, 500), attempt: last };
      const success = outcome(b);
      const batch = order === 'failure, then success' ? [finalFailure, success] : [success, finalFailure];
      expect(await recordAttempts(h.ctx, batch)).toEqual([true, true]);
      expect(Number((await webhook(hook.id)).consecutive_failures), order).toBe(failures);
    }
  });

  it('a recorder writes outcomes of one moment together, and one that fails fails only itself', async () => {
    const { deliveries } = await claimed(3);
    const [a, b, c] = deliveries as [ClaimedDelivery, ClaimedDelivery, ClaimedDelivery];
    // b's attempt is already in the log: its insert breaks the primary key, and the batch with it.
    await h.ctx.db
      .insertInto('webhook_attempts')
      .values({
        delivery_id: b.id,
        attempt: b.attempt,
        webhook_id: b.webhookId,
        succeeded: 0,
        status_code: null,
        response_body: null,
        error: 'planted',
        signature: null,
        duration_ms: 0,
        started_at: 0,
        finished_at: 0,
      })
      .execute();
    const recorder = new AttemptRecorder(h.ctx);
    const settled = await Promise.allSettled([a, b, c].map((d) => recorder.record(outcome(d))));
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(settled[0]).toMatchObject({ value: true });
    expect(settled[2]).toMatchObject({ value: true });
    expect((await delivery(a.id)).status).toBe('succeeded');
    expect(await delivery(b.id)).toMatchObject({ status: 'pending', claimed_by: b.token });
    expect((await delivery(c.id)).status).toBe('succeeded');
  });
});
