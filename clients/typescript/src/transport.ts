import { TallyError, type ErrorDetail } from './errors.js';

export interface RetryOptions {
  /** Retries after the first attempt (default 3). */
  maxRetries: number;
  /** First backoff delay in ms (default 500), doubled per retry, with full jitter. */
  baseDelayMs: number;
  /** Longest backoff delay in ms (default 20000). */
  maxDelayMs: number;
}

export interface TransportOptions {
  apiKey: string;
  baseUrl: string;
  timeoutMs: number;
  retry: RetryOptions;
  fetch: typeof fetch;
  userAgent: string | undefined;
}

export type QueryValue = string | number | boolean | undefined | null;

export interface RequestOptions {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, QueryValue> | undefined;
  body?: unknown;
  headers?: Record<string, string> | undefined;
  /**
   * `all`: network errors, 5xx and 429 are retried (reads, and writes the service deduplicates).
   * `rate_limited`: only 429, which the service answers before doing anything.
   */
  retry: 'all' | 'rate_limited';
  signal?: AbortSignal | undefined;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });

/** Exponential backoff with full jitter, at least what Retry-After asks for. */
export function retryDelay(retry: RetryOptions, attempt: number, retryAfter: string | null): number {
  const backoff = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** attempt);
  const jittered = backoff / 2 + Math.random() * (backoff / 2);
  if (retryAfter === null) return jittered;
  const seconds = Number(retryAfter);
  const asked = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(retryAfter) - Date.now();
  return Number.isFinite(asked) ? Math.max(asked, 0) + Math.random() * 100 : jittered;
}

function buildUrl(base: string, path: string, query: RequestOptions['query']): string {
  const url = new URL(base.replace(/\/+$/, '') + path);
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value !== undefined && value !== null) url.searchParams.set(name, String(value));
  }
  return url.toString();
}

async function errorFrom(response: Response): Promise<TallyError> {
  const requestId = response.headers.get('x-request-id');
  const text = await response.text().catch(() => '');
  try {
    const body = JSON.parse(text) as {
      error?: { code?: string; message?: string; details?: ErrorDetail[]; request_id?: string };
    };
    if (body.error?.code) {
      return new TallyError({
        code: body.error.code as TallyError['code'],
        message: body.error.message ?? response.statusText,
        status: response.status,
        requestId: body.error.request_id ?? requestId,
        details: body.error.details ?? [],
      });
    }
  } catch {
    // not the service's error body (a proxy's page, say): described below
  }
  return new TallyError({
    code: response.status >= 500 ? 'internal_error' : 'invalid_response',
    message: `HTTP ${response.status}: ${text.slice(0, 200)}`,
    status: response.status,
    requestId,
  });
}

/** Sends one logical request, retrying as `options.retry` allows; resolves with the 2xx response. */
export async function send(transport: TransportOptions, options: RequestOptions): Promise<Response> {
  const url = buildUrl(transport.baseUrl, options.path, options.query);
  const headers: Record<string, string> = {
    authorization: `Bearer ${transport.apiKey}`,
    accept: 'application/json',
    ...options.headers,
  };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  if (transport.userAgent) headers['user-agent'] = transport.userAgent;
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);

  for (let attempt = 0; ; attempt++) {
    let failure: TallyError;
    let retryAfter: string | null = null;
    // The timeout covers the wait for the answer's headers, not the reading of a long body
    // (a streamed export may take longer than any sensible request timeout).
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(new Error('timeout')), transport.timeoutMs);
    const signal = options.signal ? AbortSignal.any([options.signal, timeout.signal]) : timeout.signal;
    try {
      const response = await transport.fetch(url, { method: options.method, headers, body, signal });
      clearTimeout(timer);
      if (response.ok) return response;
      failure = await errorFrom(response);
      retryAfter = response.headers.get('retry-after');
    } catch (error) {
      clearTimeout(timer);
      if (options.signal?.aborted) throw error;
      const timedOut = timeout.signal.aborted;
      failure = new TallyError({
        code: timedOut ? 'timeout' : 'network_error',
        message: timedOut
          ? `No answer from ${transport.baseUrl} within ${transport.timeoutMs} ms`
          : `Could not reach ${transport.baseUrl}: ${(error as Error).message}`,
        cause: error,
      });
    }
    const may = options.retry === 'all' ? failure.retryable : failure.status === 429;
    if (!may || attempt >= transport.retry.maxRetries) throw failure;
    await sleep(retryDelay(transport.retry, attempt, retryAfter), options.signal);
  }
}

/** A fresh idempotency key: random, so two logical calls never share one. */
export function newIdempotencyKey(): string {
  // randomUUID needs a secure context in browsers; getRandomValues does not.
  if (typeof crypto.randomUUID === 'function') return `tally-js-${crypto.randomUUID()}`;
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `tally-js-${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}
