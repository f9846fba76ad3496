import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PLANS, type PlanTable } from '../../src/billing/plans.js';
import { RedisRateLimiter } from '../../src/http/rate-limit.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { startSilentServer, startTcpProxy } from '../support/tcp-proxy.js';
import { tempFile } from '../support/temp.js';

const REDIS_URL = process.env.TALLY_TEST_REDIS_URL;
const TRACK = { agent_id: 'bot-1', task_type: 'support_ticket_reply', outcome: 'success' };
/** How long a rate-limit check may wait for Redis here (TALLY_REDIS_TIMEOUT_MS). */
const TIMEOUT_MS = 200;

/** Pro tracks 5 per second, so going over the limit takes a handful of requests. */
const SMALL_PLANS: PlanTable = {
  ...DEFAULT_PLANS,
  pro: { ...DEFAULT_PLANS.pro, track_rate_per_second: 5 },
};

let plansFile: string;
beforeAll(() => {
  plansFile = tempFile('tally-plans-', 'plans.json', JSON.stringify(SMALL_PLANS));
});

function track(h: Harness) {
  return h.request({ method: 'POST', url: '/v1/track', payload: TRACK });
}

/** `count` tracks one after another: their statuses, and the slowest one's milliseconds. */
async function trackInTurn(h: Harness, count: number): Promise<{ statuses: number[]; slowestMs: number }> {
  const statuses: number[] = [];
  let slowestMs = 0;
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    statuses.push((await track(h)).statusCode);
    slowestMs = Math.max(slowestMs, performance.now() - started);
  }
  return { statuses, slowestMs };
}

function limiterOn(port: number, warnings: string[]) {
  return new RedisRateLimiter(`redis://127.0.0.1:${port}`, {
    prefix: `tally:test:${randomBytes(6).toString('hex')}:`,
    timeoutMs: TIMEOUT_MS,
    warn: (message) => warnings.push(message),
  });
}

describe.each(ENGINES)('a Redis that stops answering fails rate limits open (%s)', (engine) => {
  it('lets tracks through quickly when Redis accepts connections and never answers, warning once', async () => {
    const silent = await startSilentServer();
    const warnings: string[] = [];
    const limiter = limiterOn(silent.port, warnings);
    const h = await createHarness(engine, { env: { TALLY_PLANS_FILE: plansFile }, rateLimiter: limiter });
    try {
      // Twice the Pro rate of 5, at once and then one by one: nothing is limited, nothing hangs.
      const together = await Promise.all(Array.from({ length: 10 }, () => track(h)));
      expect(together.map((r) => r.statusCode)).toEqual(Array.from({ length: 10 }, () => 201));
      const inTurn = await trackInTurn(h, 10);
      expect(inTurn.statuses).toEqual(Array.from({ length: 10 }, () => 201));
      // Generous: well below the 5 s test timeout, which a hanging limiter would run into.
      expect(inTurn.slowestMs).toBeLessThan(2_000);
      // Logged once for the outage, not once per request.
      expect(warnings.filter((w) => w.includes('not answering'))).toHaveLength(1);
    } finally {
      await h.close();
      await limiter.close();
      await silent.close();
    }
  }, 15_000);

  it.skipIf(!REDIS_URL)(
    'fails open while Redis stops answering mid-connection and limits again once it answers',
    async () => {
      const redis = new URL(REDIS_URL ?? '');
      const proxy = await startTcpProxy(Number(redis.port || 6379), redis.hostname);
      const warnings: string[] = [];
      const limiter = limiterOn(proxy.port, warnings);
      const h = await createHarness(engine, { env: { TALLY_PLANS_FILE: plansFile }, rateLimiter: limiter });
      try {
        // Through Redis: the sixth track of a second is limited.
        h.clock.advance(1000);
        expect((await trackInTurn(h, 6)).statuses).toEqual([201, 201, 201, 201, 201, 429]);

        proxy.partition();
        h.clock.advance(1000);
        const during = await trackInTurn(h, 10);
        expect(during.statuses).toEqual(Array.from({ length: 10 }, () => 201));
        expect(during.slowestMs).toBeLessThan(2_000);
        expect(warnings.filter((w) => w.includes('not answering'))).toHaveLength(1);

        proxy.heal();
        // Replies held by the partition arrive now; the connection stays in step with its commands.
        let statuses: number[] = [];
        const deadline = performance.now() + 8_000;
        while (performance.now() < deadline) {
          h.clock.advance(1000);
          statuses = (await trackInTurn(h, 6)).statuses;
          if (statuses[5] === 429) break;
          await sleep(100);
        }
        expect(statuses).toEqual([201, 201, 201, 201, 201, 429]);
        expect(warnings.some((w) => w.includes('answers again'))).toBe(true);
      } finally {
        await h.close();
        await limiter.close();
        await proxy.close();
      }
    },
    15_000,
  );
});
