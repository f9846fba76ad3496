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

/** Shares the windows between instances through Redis (`TALLY_REDIS_URL`). */
export class RedisRateLimiter implements RateLimiter {
  private redis: Redis;

  constructor(
    url: string,
    private prefix = 'tally:rl:',
  ) {
    this.redis = new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: true, lazyConnect: false });
    // Connection errors surface through the failing command; keep them out of the process.
    this.redis.on('error', () => undefined);
  }

  async consume(bucket: string, limit: number, cost: number, nowMs: number): Promise<RateDecision> {
    const key = `${this.prefix}${bucket}:${Math.floor(nowMs / 1000)}`;
    const result = await this.redis.multi().incrby(key, cost).pexpire(key, 2000).exec();
    const count = Number(result?.[0]?.[1] ?? cost);
    return decide(limit, cost, count, nowMs);
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
