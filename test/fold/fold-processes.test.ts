import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_PLANS } from '../../src/billing/plans.js';
import { lcg } from '../reports/seed.js';
import { createChildDatabase, type ChildDatabase } from '../support/child-process.js';
import { ENGINES } from '../support/engines.js';
import { printedApiKey, serveChild, type ServedChild } from '../support/serve.js';
import { tempFile } from '../support/temp.js';
import { startReceiver, type Receiver } from '../webhooks/receiver.js';
import { foldLockHolders, type FoldLockHolders } from './fold-lock.js';
import { expectFoldedOnce } from './folded-once.js';
import { loadPlan, runLoad } from './process-load.js';

const engine = 'postgres';
const AGENTS = Array.from({ length: 12 }, (_, i) => `agent-${i}`);

/**
 * Two `tally serve` processes (API, folding stage and delivery worker each) on one
 * PostgreSQL schema, loaded at once over HTTP. Every acknowledged event is stored once, folded
 * once into the rollups and usage, and has its webhook messages written once, whichever process
 * tracked or folded it.
 *
 * PostgreSQL only: several processes on one database is a PostgreSQL deployment (DESIGN
 * "Scale-out", README). SQLite has one writer; two API processes on one file under this load
 * answer part of the track requests 503 ("database is locked": a tracking transaction that read
 * first cannot take the write lock another process holds).
 */
describe.skipIf(!ENGINES.includes(engine))('two API processes and two folders on one PostgreSQL', () => {
  // Enterprise is limited to 1,000 tracked events/s per process: the load must not meet it.
  const plansFile = tempFile(
    'tally-procs-',
    'plans.json',
    JSON.stringify({
      ...DEFAULT_PLANS,
      enterprise: { ...DEFAULT_PLANS.enterprise, track_rate_per_second: 1_000_000 },
    }),
  );
  const run = randomBytes(4).toString('hex');
  let database: ChildDatabase | null = null;
  let receiver: Receiver | null = null;
  let holders: FoldLockHolders | null = null;
  const served: ServedChild[] = [];

  afterEach(async () => {
    await holders?.stop();
    for (const child of served.splice(0)) {
      if (child.alive()) {
        child.child.kill('SIGKILL');
        await child.exited;
      }
    }
    await receiver?.close();
    await database?.destroy();
    holders = null;
    receiver = null;
    database = null;
  });

  /** `tally serve` on the test's schema, its database sessions named `name`. */
  async function serve(db: ChildDatabase, name: string): Promise<ServedChild> {
    const child = await serveChild({
      TALLY_DATABASE_URL: `${db.url}&application_name=${name}`,
      TALLY_PLANS_FILE: plansFile,
      TALLY_WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      // Each process folds in the background, as in production, and the two stages race.
    });
    served.push(child);
    return child;
  }

  /**
   * A fresh schema, a receiver, and two processes on it with a webhook for both event types;
   * the folding lock is watched for the sessions of `sampled`.
   */
  async function start(names: [string, string], sampled: string[] = names) {
    database = await createChildDatabase(engine);
    receiver = await startReceiver(200);
    // One after the other: the first start creates the `default` organisation (Enterprise).
    const a = await serve(database, names[0]);
    const apiKey = printedApiKey(a);
    const b = await serve(database, names[1]);
    const hook = await request(`${a.base}/v1/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: receiver.url, event_types: ['event.created', 'agent.first_event'] }),
    });
    expect(hook.statusCode).toBe(201);
    await hook.body.dump();
    holders = foldLockHolders(sampled);
    return { db: database, receiver, a, b, apiKey };
  }

  /** Until both processes' /metrics show an empty tail (both read the one shared tail). */
  async function untilTailEmpty(bases: string[]) {
    const deadline = Date.now() + 45_000;
    for (;;) {
      const tails = await Promise.all(bases.map((base) => metric(base, 'tally_fold_tail_events')));
      if (tails.every((n) => n === 0)) return;
      if (Date.now() > deadline) throw new Error(`the tail did not empty: ${tails.join(', ')}`);
      await sleep(100);
    }
  }

  async function stop(children: ServedChild[]) {
    for (const child of children) child.child.kill('SIGTERM');
    expect(await Promise.all(children.map((c) => c.exited))).toEqual(children.map(() => 0));
    expect(children.map((c) => c.stderr()).join('')).not.toMatch(/folding stage: a pass failed/);
  }

  it('folds every event once and writes and delivers every webhook message once', async () => {
    const names: [string, string] = [`tally-fold-a-${run}`, `tally-fold-b-${run}`];
    const { db, receiver: r, a, b, apiKey } = await start(names);
    const plan = loadPlan(lcg(14), AGENTS.length);
    const started = performance.now();
    const load = await runLoad([a.base, b.base], apiKey, plan, 16);
    const loadMs = performance.now() - started;

    expect(load.failures).toEqual([]);
    // Both processes were sent each idempotency key at once: one event, one answer replayed.
    expect(load.keyedPairs).toHaveLength(100);
    expect(load.keyedPairs.filter(([x, y]) => x.eventId !== y.eventId || x.replayed === y.replayed)).toEqual(
      [],
    );
    const acknowledged = new Set(load.eventIds);
    expect(acknowledged.size).toBe(plan.uniqueEvents);

    await untilTailEmpty([a.base, b.base]);
    const foldedMs = performance.now() - started;
    // Each message reaches the receiver, from one delivery worker or the other.
    const deadline = Date.now() + 30_000;
    while (distinctMessages(r) < plan.uniqueEvents + AGENTS.length && Date.now() < deadline) await sleep(100);
    const held = await holders?.stop();
    await stop([a, b]);

    const storage = db.open();
    try {
      const { events, messages } = await expectFoldedOnce(storage.db, engine, AGENTS);
      // Every acknowledged event stored, once, and nothing else.
      expect(events).toEqual(acknowledged);
      const received = new Map<string, string[]>();
      for (const m of r.received) {
        const id = String(m.headers['x-tally-message-id']);
        received.set(id, [...(received.get(id) ?? []), String(m.headers['x-tally-attempt'])]);
      }
      expect(received).toEqual(new Map(messages.map((m) => [m.id, ['1']])));
    } finally {
      await storage.close();
    }
    // Both stages folded: each process's sessions were seen holding the folding stage's lock.
    expect(Object.keys(held?.samples ?? {}).sort()).toEqual([...names].sort());
    console.info(
      `${load.requests} requests, ${plan.uniqueEvents} events in ${Math.round(loadMs)} ms; tail empty ` +
        `after ${Math.round(foldedMs)} ms; fold lock held ${JSON.stringify(held?.samples)}, waited on ${held?.waits}`,
    );
  }, 120_000);

  it('loses nothing to a kill -9 of one process mid-load: after its restart every event is folded once', async () => {
    const names: [string, string] = [`tally-kill-a-${run}`, `tally-kill-b-${run}`];
    const restartedName = `tally-kill-b2-${run}`;
    const { db, a, b, apiKey } = await start(names, [...names, restartedName]);
    const plan = loadPlan(lcg(15), AGENTS.length);
    const bases = [a.base, b.base];
    const killAt = Math.floor(plan.jobs.length * 0.4);
    const restart: { child?: Promise<ServedChild> } = {};
    let killedMidPass = false;
    const kill = (midPass: boolean) => {
      if (restart.child) return;
      killedMidPass = midPass;
      b.child.kill('SIGKILL');
      // B's share goes to A until B runs again.
      bases[1] = a.base;
      restart.child = serve(db, restartedName).then((child) => {
        bases[1] = child.base;
        return child;
      });
    };
    let timer: NodeJS.Timeout | undefined;
    const load = await runLoad(bases, apiKey, plan, 16, (index) => {
      if (index !== killAt) return;
      // In the middle of one of B's folding passes (a sample saw it holding the stage's lock),
      // or half a second later if B takes none by then.
      holders?.onHeld((holder) => holder === names[1] && kill(true));
      timer = setTimeout(() => kill(false), 500);
    });
    clearTimeout(timer);
    holders?.onHeld(null);
    // A load that ended first (a fast machine) still has B killed, and its tail to fold.
    kill(false);
    const b2 = await restart.child;
    if (b2 === undefined) throw new Error('B was never killed');
    expect(await b.exited).toBeNull();

    // Only the requests B had in flight went unanswered.
    expect(load.failures.filter((f) => f.process !== 1 || f.status !== 'no response')).toEqual([]);
    expect(load.failures.length).toBeLessThanOrEqual(16);
    await untilTailEmpty([a.base, b2.base]);
    const held = await holders?.stop();
    await stop([a, b2]);

    const storage = db.open();
    try {
      const { events } = await expectFoldedOnce(storage.db, engine, AGENTS);
      // Every acknowledged event is stored; an unanswered one may be stored too (then folded once).
      const acknowledged = new Set(load.eventIds);
      expect([...acknowledged].filter((id) => !events.has(id))).toEqual([]);
      console.info(
        `killed B ${killedMidPass ? 'holding the fold lock' : 'not seen holding it'}: ${load.failures.length} requests unanswered, ` +
          `${events.size - acknowledged.size} unacknowledged events stored; fold lock held ${JSON.stringify(held?.samples)}`,
      );
    } finally {
      await storage.close();
    }
    // The stage of the surviving process folded.
    expect(held?.samples[names[0]]).toBeGreaterThan(0);
  }, 120_000);
});

async function metric(base: string, name: string): Promise<number> {
  const res = await request(`${base}/metrics`);
  const text = await res.body.text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return Number(line?.split(' ')[1]);
}

function distinctMessages(receiver: Receiver): number {
  return new Set(receiver.received.map((r) => r.headers['x-tally-message-id'])).size;
}
