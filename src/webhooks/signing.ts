import { createHmac, randomBytes } from 'node:crypto';

const SECRET_PREFIX = 'whsec_';

/** `whsec_` + base64 of 24 random bytes: the part after the prefix is what Standard Webhooks decodes. */
export function newWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(24).toString('base64');
}

export interface SignedHeaders {
  'X-Tally-Signature': string;
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/**
 * Both signatures of one attempt (DESIGN §8). `X-Tally-Signature` is keyed with the UTF-8 bytes
 * of the whole secret (what the spec's verification recipe does with "the webhook secret");
 * `webhook-signature` with the decoded key, as the Standard Webhooks libraries expect.
 */
export function signDelivery(input: {
  secret: string;
  messageId: string;
  body: string;
  at: Date;
}): SignedHeaders {
  const t = Math.floor(input.at.getTime() / 1000);
  const tally = createHmac('sha256', Buffer.from(input.secret, 'utf8'))
    .update(`${t}.${input.body}`)
    .digest('hex');
  const key = Buffer.from(input.secret.slice(SECRET_PREFIX.length), 'base64');
  const standard = createHmac('sha256', key).update(`${input.messageId}.${t}.${input.body}`).digest('base64');
  return {
    'X-Tally-Signature': `t=${t},v1=${tally}`,
    'webhook-id': input.messageId,
    'webhook-timestamp': String(t),
    'webhook-signature': `v1,${standard}`,
  };
}
