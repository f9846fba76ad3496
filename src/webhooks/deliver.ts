import type { Agent } from 'undici';
import type { ServiceCtx } from '../context.js';
import type { ClaimedDelivery } from './claim.js';
import { recordAttempt, type AttemptRecord } from './record.js';
import { postDelivery } from './send.js';
import { signDelivery } from './signing.js';

/** The envelope of DESIGN §8; the stored payload is already JSON text, spliced in as is. */
export function envelopeOf(d: ClaimedDelivery): string {
  const created = new Date(d.messageCreatedAt).toISOString();
  return `{"id":${JSON.stringify(d.messageId)},"type":${JSON.stringify(d.type)},"created_at":"${created}","data":${d.payload}}`;
}

/** Makes one claimed attempt: signs it afresh, POSTs it, records the outcome with `record`. */
export async function deliverMessage({
  ctx,
  agent,
  delivery,
  record,
}: {
  ctx: ServiceCtx;
  agent: Agent;
  delivery: ClaimedDelivery;
  record: (outcome: AttemptRecord) => Promise<boolean>;
}): Promise<boolean> {
  const startedAt = ctx.clock.now();
  const attempt = {
    deliveryId: delivery.id,
    webhookId: delivery.webhookId,
    type: delivery.type,
    attempt: delivery.attempt,
    token: delivery.token,
    startedAt: startedAt.getTime(),
  };
  if ('error' in delivery.secret) {
    // Unsigned, it would be refused anyway: the attempt fails here, in the delivery log.
    const failure = { statusCode: null, responseBody: null, signature: null, durationMs: 0 };
    return record({ ...attempt, ...failure, error: delivery.secret.error });
  }
  const body = envelopeOf(delivery);
  const signed = signDelivery({
    secret: delivery.secret.ok,
    messageId: delivery.messageId,
    body,
    at: startedAt,
  });
  const outcome = await postDelivery({
    agent,
    url: delivery.url,
    body,
    timeoutMs: ctx.config.webhookTimeoutMs,
    allowPrivate: ctx.config.webhookAllowPrivateNetworks,
    headers: {
      ...signed,
      'X-Tally-Event-Type': delivery.type,
      'X-Tally-Message-Id': delivery.messageId,
      'X-Tally-Attempt': String(delivery.attempt),
    },
  });
  return record({
    ...attempt,
    statusCode: outcome.statusCode,
    responseBody: outcome.responseBody,
    error: outcome.error,
    signature: signed['X-Tally-Signature'],
    durationMs: outcome.durationMs,
  });
}

/** Closes claims whose worker died: the attempt counts as failed, and the schedule goes on. */
export async function recoverExpiredClaims(
  ctx: ServiceCtx,
  claims: Array<Omit<ClaimedDelivery, 'messageId' | 'payload' | 'messageCreatedAt' | 'url' | 'secret'>>,
) {
  for (const claim of claims) {
    await recordAttempt(ctx, {
      deliveryId: claim.id,
      webhookId: claim.webhookId,
      type: claim.type,
      attempt: claim.attempt,
      token: claim.token,
      statusCode: null,
      responseBody: null,
      error: 'lease expired: the worker stopped before recording this attempt',
      signature: null,
      durationMs: 0,
      startedAt: ctx.clock.now().getTime(),
    });
  }
}
