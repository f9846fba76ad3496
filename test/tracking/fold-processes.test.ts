import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PLANS } from '../../src/billing/plans.js';
import { tailState } from '../../src/tracking/fold.js';
import { lcg } from '../reports/seed.js';
import { createChildDatabase, type ChildDatabase } from '../support/child-process.js';
import { ENGINES } from '../support/engines.js';
import { printedApiKey, serveChild, type ServedChild } from '../support/serve.js';
import { tempFile } from '../support/temp.js';
import { startReceiver, type Receiver } from '../webhooks/receiver.js';
import { derived, rollupsAndEvents } from './derived.js';
import { foldLockHolders, type FoldLockHolders } from './fold-lock.js';
import { loadPlan, runLoad, type Load } from './process-load.js';

const AGENTS = 12;

const engine = 'postgres';

/**
 * Issue 14: two `tally serve` processes (API, folding stage and delivery worker each) on one
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
  let database: ChildDatabase;
  let receiver: Receiver;
  const served: ServedChild[] = [];
  let holders: FoldLockHolders | null = null;
  // Enterprise is limited to 1,000 tracked events/s per process: the load must not meet it.
  const plansFile = tempFile(
    'tally-procs-',
    'plans.json',
    JSON.stringify({
      ...DEFAULT_PLANS,
      enterprise: { ...DEFAULT_PLANS.enterprise, track_rate_per_second: 1_000_000 },
    }),
  );

  beforeAll(async () => {
    database = await createChildDatabase(engine);
    receiver = await startReceiver(200);
  });
  afterAll(async () => {
    await holders?.stop();
    for (const child of served) {
      if (child.alive()) {
        child.child.kill('SIGKILL');
        await child.exited;
      }
    }
    await receiver.close();
    await database.destroy();
  });

  /** `tally serve` on the shared schema, its database sessions named `name`. */
  async function serve(name: string): Promise<ServedChild> {
    const url = `${database.url}&application_name=${name}`;
    const child = await serveChild({
      TALLY_DATABASE_URL: url,
      TALLY_PLANS_FILE: plansFile,
      TALLY_WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      // Not TALLY_FOLD_INLINE (childEnv passes no TALLY_ setting of ours): each process folds
      // in the background, as in production, and the two stages race.
    });
    served.push(child);
    return child;
  }

  it('folds every event once and writes every webhook message once', async () => {
    const run = randomBytes(4).toString('hex');
    const names = [`tally-fold-a-${run}`, `tally-fold-b-${run}`];
    // One after the other: the first start creates the `default` organisation (Enterprise).
    const a = await serve(names[0] ?? '');
    const apiKey = printedApiKey(a);
    const b = await serve(names[1] ?? '');
    const hook = await request(`${a.base}/v1/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: receiver.url, event_types: ['event.created', 'agent.first_event'] }),
    });
    expect(hook.statusCode).toBe(201);
    await hook.body.dump();

    holders = foldLockHolders(names);
    const plan = loadPlan(lcg(14), AGENTS);
    const started = performance.now();
    const load: Load = await runLoad([a.base, b.base], apiKey, plan, 16);
    const loadMs = performance.now() - started;

    // Every request answered 201 (207 with every item 201 for a batch).
    expect(load.failures).toEqual([]);
    // Both processes answered a share of one idempotency key each time: one stored event.
    expect(load.keyedPairs.filter(([x, y]) => x.eventId !== y.eventId)).toEqual([]);
    expect(load.keyedPairs.filter(([x, y]) => x.replayed === y.replayed)).toEqual([]);
    const acknowledged = new Set(load.eventIds);
    expect(acknowledged.size).toBe(plan.uniqueEvents);

    // The tail empties: both stages fold in the background (each /metrics reads the shared tail).
    const deadline = Date.now() + 45_000;
    for (;;) {
      const tails = await Promise.all([a.base, b.base].map((base) => metric(base, 'tally_fold_tail_events')));
      if (tails.every((n) => n === 0)) break;
      if (Date.now() > deadline) throw new Error(`the tail did not empty: ${tails.join(', ')}`);
      await sleep(100);
    }
    const foldedMs = performance.now() - started;
    // Each message reaches the receiver, from one delivery worker or the other.
    const messages = plan.uniqueEvents + AGENTS;
    while (distinctMessages(receiver) < messages && Date.now() < deadline) await sleep(100);
    const held = await holders.stop();

    for (const child of [a, b]) child.child.kill('SIGTERM');
    expect(await Promise.all([a.exited, b.exited])).toEqual([0, 0]);
    expect([a.stderr(), b.stderr()].join('')).not.toMatch(/folding stage: a pass failed/);

    const storage = database.open();
    try {
      const { db } = storage;
      expect((await tailState(db, engine)).events).toBe(0);
      const org = await db.selectFrom('organizations').select('id').executeTakeFirstOrThrow();
      const stored = await db
        .selectFrom('events')
        .select(['id', 'agent_id'])
        .where('org_id', '=', org.id)
        .execute();
      // Every acknowledged event stored, once, and nothing else.
      expect(stored.length).toBe(acknowledged.size);
      expect(stored.every((e) => acknowledged.has(e.id))).toBe(true);

      const total = acknowledged.size;
      expect(await derived(db, org.id)).toEqual({
        rolledUp: total,
        rolledUpMonths: total,
        usage: total,
        created: total,
        createdEvents: total,
        firsts: AGENTS,
      });
      for (const grain of ['all', 'agent'] as const) {
        const { rollups, events } = await rollupsAndEvents(db, org.id, grain);
        expect(rollups, grain).toEqual(events);
      }

      const rows = await db
        .selectFrom('webhook_messages')
        .select(['id', 'type', 'payload'])
        .where('org_id', '=', org.id)
        .execute();
      const created = rows.filter((m) => m.type === 'event.created');
      const perEvent = tally(created.map((m) => (JSON.parse(m.payload) as { event_id: string }).event_id));
      expect(perEvent.size).toBe(total);
      expect([...perEvent].filter(([id, n]) => n !== 1 || !acknowledged.has(id))).toEqual([]);
      const firsts = rows.filter((m) => m.type === 'agent.first_event');
      const perAgent = tally(firsts.map((m) => (JSON.parse(m.payload) as { agent_id: string }).agent_id));
      expect([...perAgent].sort()).toEqual(
        Array.from({ length: AGENTS }, (_, i) => [`agent-${i}`, 1] as const).sort(),
      );
      // The first event of each agent is the one recorded as its first when it was tracked.
      const agents = await db
        .selectFrom('agents')
        .select(['agent_id', 'first_event_id'])
        .where('org_id', '=', org.id)
        .execute();
      expect(
        firsts
          .map((m) => JSON.parse(m.payload) as { agent_id: string; event: { event_id: string } })
          .map((p) => [p.agent_id, p.event.event_id])
          .sort(),
      ).toEqual(agents.map((r) => [r.agent_id, r.first_event_id]).sort());

      // One delivery per message (one webhook), each received once, at its first attempt.
      const deliveries = await db
        .selectFrom('webhook_deliveries')
        .select('message_id')
        .where('org_id', '=', org.id)
        .execute();
      expect(deliveries.length).toBe(rows.length);
      const received = tally(receiver.received.map((r) => String(r.headers['x-tally-message-id'])));
      expect(received.size).toBe(rows.length);
      expect([...received].filter(([, n]) => n !== 1)).toEqual([]);
      expect(new Set(rows.map((m) => m.id))).toEqual(new Set(received.keys()));
    } finally {
      await storage.close();
    }

    // Both stages folded: each process's sessions were seen holding the folding lock.
    expect([...held.holders].sort()).toEqual([...names].sort());
    console.info(
      `${engine}: ${load.requests} requests, ${plan.uniqueEvents} events in ${Math.round(loadMs)} ms; ` +
        `tail empty after ${Math.round(foldedMs)} ms` +
        `; fold lock seen held ${JSON.stringify(held.samples)} times, waited on ${held.waits}`,
    );
  }, 120_000);
});

async function metric(base: string, name: string): Promise<number> {
  const res = await request(`${base}/metrics`);
  const text = await res.body.text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return Number(line?.split(' ')[1]);
}

function tally(values: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return counts;
}

function distinctMessages(receiver: Receiver): number {
  return new Set(receiver.received.map((r) => r.headers['x-tally-message-id'])).size;
}
