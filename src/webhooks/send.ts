import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import { checkLiteralHost, checkedLookup } from './url-policy.js';

/** The response body kept in the delivery log. */
export const RESPONSE_BODY_LIMIT = 4096;

export interface HttpOutcome {
  statusCode: number | null;
  responseBody: string | null;
  error: string | null;
  durationMs: number;
}

/** One HTTP client per worker: connections are pinned to addresses the SSRF check accepted. */
export function createDeliveryAgent(allowPrivate: boolean, timeoutMs: number): Agent {
  return new Agent({
    connect: { lookup: checkedLookup(allowPrivate), timeout: timeoutMs },
    keepAliveTimeout: 4_000,
    // Redirects are not followed (undici's default): a 3xx fails the attempt, so a redirect
    // cannot lead a delivery past the address check.
  });
}

/**
 * The body as the delivery log keeps it: text without NUL (PostgreSQL refuses \u0000 in text,
 * which would roll back the whole attempt record), at most RESPONSE_BODY_LIMIT UTF-8 bytes, cut
 * between characters.
 */
export function responseBodyText(bytes: Buffer): string {
  const text = bytes.toString('utf8').replaceAll('\u0000', '\uFFFD');
  let size = 0;
  let end = 0;
  for (const char of text) {
    size += Buffer.byteLength(char, 'utf8');
    if (size > RESPONSE_BODY_LIMIT) break;
    end += char.length;
  }
  return text.slice(0, end);
}

async function readCapped(body: AsyncIterable<Buffer>): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    // Leaving the loop destroys the stream: a huge body costs us no more than the cap.
    if (size >= RESPONSE_BODY_LIMIT) break;
  }
  return responseBodyText(Buffer.concat(chunks).subarray(0, RESPONSE_BODY_LIMIT));
}

function describe(error: unknown, timedOut: boolean, timeoutMs: number): string {
  if (timedOut) return `timeout: no complete response within ${timeoutMs} ms`;
  const e = error as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  const code = e.cause?.code ?? e.code;
  const message = e.cause?.message ?? e.message ?? String(error);
  return code ? `${code}: ${message}` : message;
}

/** POSTs one signed body; every failure (network, timeout, blocked address) becomes `error`. */
export async function postDelivery(input: {
  agent: Agent;
  url: string;
  body: string;
  headers: Record<string, string>;
  timeoutMs: number;
  allowPrivate: boolean;
}): Promise<HttpOutcome> {
  const started = performance.now();
  const signal = AbortSignal.timeout(input.timeoutMs);
  const elapsed = () => Math.round(performance.now() - started);
  try {
    checkLiteralHost(new URL(input.url), input.allowPrivate);
    const response = await request(input.url, {
      method: 'POST',
      dispatcher: input.agent,
      body: input.body,
      headers: { 'content-type': 'application/json', 'user-agent': 'Tally-Webhooks/1', ...input.headers },
      signal,
      headersTimeout: input.timeoutMs,
      bodyTimeout: input.timeoutMs,
    });
    const responseBody = await readCapped(response.body);
    return { statusCode: response.statusCode, responseBody, error: null, durationMs: elapsed() };
  } catch (error) {
    return {
      statusCode: null,
      responseBody: null,
      error: describe(error, signal.aborted, input.timeoutMs),
      durationMs: elapsed(),
    };
  }
}
