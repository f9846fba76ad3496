import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { KyselyPlugin } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimDueDeliveries } from '../../src/webhooks/claim.js';
import { DeliveryWorker } from '../../src/webhooks/worker.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { ALLOW_PRIVATE, subscribe, track } from './helpers.js';
import { startReceiver } from './receiver.js';

/** A real receiver that answers 200 after `holdMs` and notes the most requests it held at once. */
async function holdingReceiver(holdMs: number) {
  let open = 0;
  const state = { most: 0, received: 0 };
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      open++;
      state.most = Math.max(state.most, open);
      setTimeout(() => {
        open--;
        state.received++;
        res.writeHead(200).end('ok');
      }, holdMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    state,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function until(check: () => boolean, ms = 10_000) {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe.each(ENGINES)('each webhook has its share of the worker (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    // A hanging receiver keeps its attempts until the test closes it.
    h = await createHarness(engine, { env: { ...ALLOW_PRIVATE, TALLY_WEBHOOK_TIMEOUT_MS: '30000' } });
  });
  afterAll(async () => {
    await h.close();
  });

  it('one claim takes no more of a webhook than its room, oldest first, and the others’ in their order', async () => {
    const org = await h.createOrg({ plan: 'pro' });
    const a = await subscribe(h, 'http://127.0.0.1:9/a', ['event.created'], org.apiKey);
    // A millisecond apart, so the queue's order (by due time) is known.
    const tracked = async () => {
      h.clock.advance(1);
      await track(h, 'bot', org.apiKey);
    };
    for (let i = 0; i < 6; i++) await tracked();
    const b = await subscribe(h, 'http://127.0.0.1:9/b', ['event.created'], org.apiKey);
    for (let i = 0; i < 3; i++) await tracked();
    const due = await h.ctx.db
      .selectFrom('webhook_deliveries')
      .select(['id', 'webhook_id'])
      .where('org_id', '=', org.id)
      .orderBy('next_attempt_at')
      .orderBy('id')
      .execute();
    const ofA = due.filter((d) => d.webhook_id === a.id).map((d) => d.id);
    const ofB = due.filter((d) => d.webhook_id === b.id).map((d) => d.id);
    expect([ofA.length, ofB.length]).toEqual([9, 3]);

    const claim = (webhooks: Map<string, number>, otherwise: number) =>
      claimDueDeliveries({
        ctx: h.ctx,
        workerId: 'w',
        limit: 10,
        leaseMs: 60_000,
        room: { webhooks, otherwise },
      });
    // A has room for 3: its 3 oldest; B, unlisted, the default 2.
    const first = await claim(new Map([[a.id, 3]]), 2);
    expect(
      first
        .filter((d) => d.webhookId === a.id)
        .map((d) => d.id)
        .sort(),
    ).toEqual(ofA.slice(0, 3).sort());
    expect(
      first
        .filter((d) => d.webhookId === b.id)
        .map((d) => d.id)
        .sort(),
    ).toEqual(ofB.slice(0, 2).sort());
    // A full, B listed with room for 5: only B's last one.
    const second = await claim(
      new Map([
        [a.id, 0],
        [b.id, 5],
      ]),
      2,
    );
    expect(second.map((d) => d.id)).toEqual([ofB[2]]);
    // Without limits from the map: the next 2 of A.
    const third = await claim(new Map(), 2);
    expect(third.map((d) => d.id).sort()).toEqual(ofA.slice(3, 5).sort());
  });

  it('a receiver that hangs holds perWebhook attempts, and another webhook’s deliveries go through meanwhile', async () => {
    const org = await h.createOrg({ plan: 'pro' });
    const hanging = await startReceiver('hang');
    const answering = await startReceiver(200);
    await subscribe(h, hanging.url, ['event.created'], org.apiKey);
    // The hanging receiver's deliveries come first in the queue.
    for (let i = 0; i < 12; i++) await track(h, 'bot', org.apiKey);
    await subscribe(h, answering.url, ['event.created'], org.apiKey);
    for (let i = 0; i < 3; i++) await track(h, 'bot', org.apiKey);
    const worker = new DeliveryWorker(h.ctx, {
      mailTransport: null,
      concurrency: 6,
      perWebhook: 2,
      perFastWebhook: 4,
    });
    worker.start();
    try {
      await until(() => answering.received.length === 3);
      expect(hanging.received).toHaveLength(2);
    } finally {
      await hanging.close();
      await worker.stop();
      await answering.close();
    }
  });

  it('a fast receiver gets up to perFastWebhook attempts at once, a slow one perWebhook', async () => {
    /** The most attempts a receiver answering in 150 ms held at once, for `events` deliveries. */
    async function mostAtOnce(events: number, slowAfterMs: number): Promise<number> {
      const org = await h.createOrg({ plan: 'pro' });
      const receiver = await holdingReceiver(150);
      await subscribe(h, receiver.url, ['event.created'], org.apiKey);
      for (let i = 0; i < events; i++) await track(h, 'bot', org.apiKey);
      const worker = new DeliveryWorker(h.ctx, {
        mailTransport: null,
        concurrency: 8,
        perWebhook: 2,
        perFastWebhook: 6,
        slowAfterMs,
      });
      worker.start();
      try {
        await until(() => receiver.state.received === events);
      } finally {
        await worker.stop();
        await receiver.close();
      }
      return receiver.state.most;
    }
    // It starts at 2 and, once an attempt has ended within slowAfterMs, goes up to 6, never 8.
    const fast = await mostAtOnce(30, 1_000);
    expect(fast).toBeGreaterThan(2);
    expect(fast).toBeLessThanOrEqual(6);
    // The same receiver, but slower than slowAfterMs: 2 at once.
    expect(await mostAtOnce(12, 50)).toBe(2);
  });

  it('a claim that used all the room there was is not followed by another until an attempt ends', async () => {
    const org = await h.createOrg({ plan: 'pro' });
    const receiver = await startReceiver('hang');
    await subscribe(h, receiver.url, ['event.created'], org.apiKey);
    for (let i = 0; i < 5; i++) await track(h, 'bot', org.apiKey);
    // Counts the claim statements (the only UPDATE … WITH) the worker sends.
    let claims = 0;
    const counting: KyselyPlugin = {
      transformQuery: ({ node }) => {
        if (node.kind === 'UpdateQueryNode' && node.with) claims++;
        return node;
      },
      transformResult: async ({ result }) => result,
    };
    // No polling: only the end of an attempt could give the worker something new to claim.
    const worker = new DeliveryWorker(
      { ...h.ctx, db: h.ctx.db.withPlugin(counting) },
      { mailTransport: null, perWebhook: 2, perFastWebhook: 2, idlePollMs: 60_000 },
    );
    worker.start();
    try {
      await until(() => receiver.received.length === 2);
      await new Promise((r) => setTimeout(r, 300));
      // One claim took the webhook's two: a second would have found nothing, after scanning
      // every due row (all of a backlog, to skip a full webhook's).
      expect(receiver.received).toHaveLength(2);
      expect(claims).toBe(1);
    } finally {
      await receiver.close();
      await worker.stop();
    }
  });
});
