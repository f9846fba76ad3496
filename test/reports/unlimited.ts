import type { RateLimiter } from '../../src/http/rate-limit.js';

/** Report tests send many requests at one frozen instant; rate limits are not what they test. */
export const unlimited: RateLimiter = {
  consume: async (_bucket, limit, cost) => ({ granted: cost, limit, remaining: limit, resetSeconds: 1 }),
  close: async () => undefined,
};
