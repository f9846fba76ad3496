import { TallyError } from './errors.js';
import type { WebhookEnvelope } from './types.js';

export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export interface VerifyOptions {
  /** Oldest accepted signature, in seconds (default 300). */
  toleranceSeconds?: number;
  /** The current time in ms (default Date.now()). */
  now?: number;
}

const SECRET_PREFIX = 'whsec_';
const encoder = new TextEncoder();

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  for (const [key, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}

const invalid = (message: string) => new TallyError({ code: 'invalid_signature', message });

type Bytes = Uint8Array<ArrayBuffer>;

function hexBytes(hex: string): Bytes | null {
  if (!/^(?:[0-9a-f]{2})+$/i.test(hex)) return null;
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}

function base64Bytes(text: string): Bytes | null {
  try {
    const binary = atob(text);
    return Uint8Array.from(binary, (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
}

/** HMAC-SHA256 check through WebCrypto, whose `verify` compares in constant time. */
async function hmacMatches(key: Bytes, message: Bytes, signatures: Bytes[]): Promise<boolean> {
  const cryptoKey = await crypto.subtle.importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, [
    'verify',
  ]);
  let matched = false;
  for (const signature of signatures) {
    if (await crypto.subtle.verify('HMAC', cryptoKey, signature, message)) matched = true;
  }
  return matched;
}

function concat(...parts: (string | Uint8Array)[]): Bytes {
  const chunks = parts.map((p) => (typeof p === 'string' ? encoder.encode(p) : p));
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}

/**
 * Verifies a delivery from its raw body (exactly as received), its headers and the webhook's
 * `whsec_…` secret, and returns the parsed envelope. Accepts `X-Tally-Signature` (t=…,v1=<hex>
 * of "<t>.<body>" keyed with the whole secret's UTF-8 bytes) or the Standard Webhooks headers
 * (`webhook-signature: v1,<base64>` of "<id>.<t>.<body>" keyed with the decoded secret).
 * Throws a TallyError `invalid_signature`, or `stale_signature` beyond the tolerance.
 */
export async function verifyWebhook(
  rawBody: string | Uint8Array | ArrayBuffer,
  headers: WebhookHeaders,
  secret: string,
  options: VerifyOptions = {},
): Promise<WebhookEnvelope> {
  const body =
    typeof rawBody === 'string'
      ? encoder.encode(rawBody)
      : rawBody instanceof Uint8Array
        ? rawBody
        : new Uint8Array(rawBody);
  const tolerance = options.toleranceSeconds ?? 300;
  const now = options.now ?? Date.now();

  let timestamp: string;
  let verified: boolean;
  const tally = header(headers, 'x-tally-signature');
  const standard = header(headers, 'webhook-signature');
  if (tally !== undefined) {
    const parts = tally.split(',').map((part) => part.trim().split('='));
    timestamp = parts.find(([k]) => k === 't')?.[1] ?? '';
    const signatures = parts.filter(([k]) => k === 'v1').map(([, v]) => hexBytes(v ?? ''));
    if (!/^\d+$/.test(timestamp) || signatures.length === 0 || signatures.some((s) => s === null)) {
      throw invalid('X-Tally-Signature is malformed');
    }
    verified = await hmacMatches(encoder.encode(secret), concat(timestamp, '.', body), signatures as Bytes[]);
  } else if (standard !== undefined) {
    const id = header(headers, 'webhook-id');
    timestamp = header(headers, 'webhook-timestamp') ?? '';
    if (!id || !/^\d+$/.test(timestamp)) throw invalid('webhook-id or webhook-timestamp is missing');
    const key = base64Bytes(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret);
    if (!key) throw invalid('The secret is not whsec_<base64>');
    const signatures = standard
      .split(' ')
      .filter((s) => s.startsWith('v1,'))
      .map((s) => base64Bytes(s.slice(3)))
      .filter((s): s is Bytes => s !== null);
    if (signatures.length === 0) throw invalid('webhook-signature has no v1 signature');
    verified = await hmacMatches(key, concat(id, '.', timestamp, '.', body), signatures);
  } else {
    throw invalid('Neither X-Tally-Signature nor webhook-signature is present');
  }
  if (!verified) throw invalid('The signature does not match the body');
  // Checked after the signature, so a forged timestamp cannot pass as merely stale.
  if (Math.abs(now / 1000 - Number(timestamp)) > tolerance) {
    throw new TallyError({ code: 'stale_signature', message: `The signature is older than ${tolerance} s` });
  }
  try {
    return JSON.parse(new TextDecoder().decode(body)) as WebhookEnvelope;
  } catch (error) {
    throw new TallyError({ code: 'invalid_response', message: 'The body is not JSON', cause: error });
  }
}
