import { Redis } from 'ioredis';

export interface RateDecision {
  /** How many of the requested units were granted (a batch may get fewer than it asked). */
  granted: number;
  limit: number;
  remaining: number;
  resetSeconds: number;
}

/** Fixed one-second windows per key; `cost` units are taken at once. */
export interface RateLimiter {
  consume(bucket: string, limit: number, cost: number, nowMs: number): Promise<RateDecision>;
  close(): Promise<void>;
}

function decide(limit: number, cost: number, countAfter: number, nowMs: number): RateDecision {
  const before = countAfter - cost;
  const granted = Math.max(0, Math.min(cost, limit - before));
  return {
    granted,
    limit,
    remaining: Math.max(0, limit - countAfter),
    resetSeconds: Math.max(1, Math.ceil((1000 - (nowMs % 1000)) / 1000)),
  };
}

export class MemoryRateLimiter implements RateLimiter {
  private windows = new Map<string, { second: number; count: number }>();

  async consume(bucket: string, limit: number, cost: number, nowMs: number): Promise<RateDecision> {
    const second = Math.floor(nowMs / 1000);
    let window = this.windows.get(bucket);
    if (!window || window.second !== second) {
      // Drop stale windows now and then so the map does not grow with every key ever seen.
      if (this.windows.size > 10_000) {
        for (const [k, w] of this.windows) if (w.second < second) this.windows.delete(k);
      }
      window = { second, count: 0 };
      this.windows.set(bucket, window);
    }
    window.count += cost;
    return decide(limit, cost, window.count, nowMs);
  }

  async close(): Promise<void> {}
}

export interface RedisLimiterOptions {
  /** Prefix of the Redis keys (tests use one per run). */
  prefix?: string;
  /** How long one check may wait for Redis before the request is let through. */
  timeoutMs?: number;
  /** Told when Redis stops answering (at most every WARN_EVERY_MS) and when it answers again. */
  warn?: (message: string, error?: unknown) => void;
}

const WARN_EVERY_MS = 30_000;
const RETRY_AFTER_FAILURE_MS = 1_000;

/**
 * Shares the windows between instances through Redis (`TALLY_REDIS_URL`). Rate limits fail open
 * (DESIGN §1): a Redis that is down, or that accepts connections and never answers, lets the
 * request through after at most `timeoutMs` instead of holding it, and says so in the log once
 * in a while rather than once per request.
 */
export class RedisRateLimiter implements RateLimiter {
  private redis: Redis;
  private readonly prefix: string;
  private readonly timeoutMs: number;
  private readonly warn: (message: string, error?: unknown) => void;
  private failing = false;
  /** Requests let through since Redis stopped answering. */
  private letThrough = 0;
  private lastWarningAt = -Infinity;
  private lastFailureAt = -Infinity;
  private ready: Promise<void> | null = null;

  constructor(url: string, options: RedisLimiterOptions = {}) {
    this.prefix = options.prefix ?? 'tally:rl:';
    this.timeoutMs = options.timeoutMs ?? 300;
    this.warn = options.warn ?? (() => undefined);
    this.redis = new Redis(url, {
      // Nothing queues while disconnected (a check fails at once and the request goes through);
      // a command on a connection that stopped answering gives up after the timeout, and so does
      // the ready check of one that never answered, which makes ioredis reconnect.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: this.timeoutMs,
      connectTimeout: Math.max(1_000, this.timeoutMs),
      retryStrategy: (times) => Math.min(times * 100, 2_000),
      lazyConnect: false,
    });
    // Connection errors surface through the failing command; keep them out of the process.
    this.redis.on('error', () => undefined);
  }

  async consume(bucket: string, limit: number, cost: number, nowMs: number): Promise<RateDecision> {
    // Right after a failure, let requests through at once instead of each waiting out the
    // timeout; a request after RETRY_AFTER_FAILURE_MS tries Redis again.
    if (this.failing && performance.now() - this.lastFailureAt < RETRY_AFTER_FAILURE_MS) {
      this.letThrough++;
      return decide(limit, cost, cost, nowMs);
    }
    const key = `${this.prefix}${bucket}:${Math.floor(nowMs / 1000)}`;
    let timer: NodeJS.Timeout | undefined;
    try {
      // ioredis bounds each command; this bounds the whole check, waiting for a connection included.
      const count = await Promise.race([
        this.increment(key, cost),
        new Promise<never>((_resolve, reject) => {
          timer = setTimeout(
            () => reject(new Error(`Redis did not answer within ${this.timeoutMs} ms`)),
            this.timeoutMs,
          );
        }),
      ]);
      this.succeeded();
      return decide(limit, cost, count, nowMs);
    } catch (error) {
      this.failed(error);
      // Fail open: the request counts as the only one of its window.
      return decide(limit, cost, cost, nowMs);
    } finally {
      clearTimeout(timer);
    }
  }

  private async increment(key: string, cost: number): Promise<number> {
    // Right after start (or a reconnect) the connection may not be ready yet: wait for it
    // rather than fail, within the caller's bound.
    if (this.redis.status !== 'ready') await this.whenReady();
    const result = await this.redis.multi().incrby(key, cost).pexpire(key, 2000).exec();
    const [error, count] = result?.[0] ?? [null, cost];
    if (error) throw error;
    return Number(count);
  }

  private whenReady(): Promise<void> {
    this.ready ??= new Promise<void>((resolve) => {
      this.redis.once('ready', () => {
        this.ready = null;
        resolve();
      });
    });
    return this.ready;
  }

  private succeeded(): void {
    if (!this.failing) return;
    this.failing = false;
    this.warn(`rate limiter: Redis answers again; ${this.letThrough} requests were let through unlimited`);
    this.letThrough = 0;
    this.lastWarningAt = -Infinity;
  }

  private failed(error: unknown): void {
    this.failing = true;
    this.letThrough++;
    // A monotonic clock: this paces retries and the log; it is no business time.
    const now = performance.now();
    this.lastFailureAt = now;
    if (now - this.lastWarningAt < WARN_EVERY_MS) return;
    this.lastWarningAt = now;
    this.warn(
      `rate limiter: Redis is not answering; letting requests through unlimited (${this.letThrough} so far)`,
      error,
    );
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
