import { createServer, type Server } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgCluster, type PgCluster } from '../support/pg-cluster.js';
import { printedApiKey, serveChild, type ServedChild } from '../support/serve.js';
import { startTcpProxy } from '../support/tcp-proxy.js';

const POSTGRES_URL = process.env.TALLY_TEST_POSTGRES_URL;
const TRACK = { agent_id: 'bot-1', task_type: 'support_ticket_reply', outcome: 'success' };

/** Short bounds, so an outage shows within a second or two. */
const TIMEOUTS = {
  TALLY_DB_CONNECT_TIMEOUT_MS: '1000',
  TALLY_DB_STATEMENT_TIMEOUT_MS: '1500',
  TALLY_READYZ_TIMEOUT_MS: '1000',
  TALLY_WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
};

interface Answer {
  status: number | 'no response';
  code?: string;
  retryAfter?: string;
  eventId?: string;
  ms: number;
}

async function track(base: string, apiKey: string): Promise<Answer> {
  const started = performance.now();
  try {
    const res = await request(`${base}/v1/track`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(TRACK),
      headersTimeout: 20_000,
      bodyTimeout: 20_000,
    });
    const body = (await res.body.json()) as { event_id?: string; error?: { code?: string } };
    const retryAfter = res.headers['retry-after'];
    return {
      status: res.statusCode,
      code: body.error?.code,
      retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined,
      eventId: res.statusCode === 201 ? body.event_id : undefined,
      ms: performance.now() - started,
    };
  } catch {
    return { status: 'no response', ms: performance.now() - started };
  }
}

async function readyz(
  base: string,
): Promise<{ status: number; code?: string; retryAfter?: unknown; ms: number }> {
  const started = performance.now();
  const res = await request(`${base}/readyz`, { headersTimeout: 20_000 });
  const body = (await res.body.json()) as { error?: { code?: string } };
  return {
    status: res.statusCode,
    code: body.error?.code,
    retryAfter: res.headers['retry-after'],
    ms: performance.now() - started,
  };
}

/** `concurrency` loops of track requests until stopped; every answer is kept. */
function startLoad(base: string, apiKey: string, concurrency: number) {
  const answers: Answer[] = [];
  let running = true;
  const loops = Array.from({ length: concurrency }, async () => {
    while (running) {
      const answer = await track(base, apiKey);
      answers.push(answer);
      // An outage answers fast; pace the retries like a client would.
      if (answer.status !== 201) await sleep(50);
    }
  });
  return {
    answers,
    async stop() {
      running = false;
      await Promise.all(loops);
      return answers;
    },
  };
}

/** Polls `check` until it gives a value; fails at once if `served` has exited meanwhile. */
async function until<T>(
  what: string,
  check: () => Promise<T | null>,
  served: ServedChild,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (!served.alive()) throw new Error(`tally serve exited while waiting for ${what}: ${served.stderr()}`);
    const value = await check().catch(() => null);
    if (value !== null) return value;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** A webhook receiver: the ids of the events whose `event.created` arrived. */
async function startReceiver(): Promise<{ server: Server; url: string; eventIds: Set<string> }> {
  const eventIds = new Set<string>();
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const envelope = JSON.parse(body) as { type: string; data: { event_id?: string } };
      if (envelope.type === 'event.created' && envelope.data.event_id) eventIds.add(envelope.data.event_id);
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return { server, url: `http://127.0.0.1:${address.port}/hook`, eventIds };
}

/** Statuses other than 201 and a 503 in our error shape with Retry-After. */
function unexpected(answers: Answer[]): Answer[] {
  return answers.filter(
    (a) =>
      a.status !== 201 &&
      !(a.status === 503 && a.code === 'service_unavailable' && a.retryAfter !== undefined),
  );
}

describe.skipIf(!POSTGRES_URL)('a PostgreSQL outage, on a throw-away server of the test', () => {
  let cluster: PgCluster;
  let admin: pg.Client;
  let databases = 0;

  beforeAll(async () => {
    cluster = await createPgCluster();
  }, 120_000);
  afterAll(async () => {
    await cluster?.destroy();
  }, 60_000);

  /** A fresh database on the cluster (the cluster must be up). */
  async function createDatabase(): Promise<string> {
    const name = `tally_${++databases}`;
    admin = new pg.Client({ connectionString: cluster.url });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    return cluster.url.replace(/\/postgres$/, `/${name}`);
  }

  async function storedEventIds(url: string, ids: string[]): Promise<Set<string>> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query<{ id: string }>('select id from events where id = any($1)', [ids]);
      return new Set(rows.map((r) => r.id));
    } finally {
      await client.end();
    }
  }

  it.each(['fast', 'immediate'] as const)(
    'stays up through pg_ctl stop -m %s under load, answers 503 meanwhile, and recovers with every 201 kept',
    async (mode) => {
      const url = await createDatabase();
      const receiver = await startReceiver();
      let served: ServedChild | null = null;
      try {
        served = await serveChild({ TALLY_DATABASE_URL: url, ...TIMEOUTS });
        const { base } = served;
        const apiKey = printedApiKey(served);
        const hook = await request(`${base}/v1/webhooks`, {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ url: receiver.url, event_types: ['event.created'] }),
        });
        expect(hook.statusCode).toBe(201);
        await hook.body.dump();

        const load = startLoad(base, apiKey, 6);
        await until(
          '201s under load',
          async () => (load.answers.filter((a) => a.status === 201).length >= 50 ? true : null),
          served,
        );

        await cluster.stop(mode);
        const stoppedAt = load.answers.length;
        await until(
          '503s while the database is down',
          async () =>
            load.answers.slice(stoppedAt).filter((a) => a.status === 503).length >= 20 ? true : null,
          served,
        );
        expect(served.alive()).toBe(true);
        const notReady = await readyz(base);
        expect(notReady).toMatchObject({ status: 503, code: 'service_unavailable' });
        expect(notReady.retryAfter).toBeDefined();
        const down = await track(base, apiKey);
        expect(down).toMatchObject({ status: 503, code: 'service_unavailable' });
        expect(Number(down.retryAfter)).toBeGreaterThan(0);

        await cluster.start();
        await until(
          '/readyz 200 after the restart',
          async () => ((await readyz(base)).status === 200 ? true : null),
          served,
        );
        const restartedAt = load.answers.length;
        await until(
          '201s after the restart',
          async () =>
            load.answers.slice(restartedAt).filter((a) => a.status === 201).length >= 20 ? true : null,
          served,
        );
        const answers = await load.stop();
        expect(served.alive()).toBe(true);
        expect(unexpected(answers)).toEqual([]);

        // The worker loop lived through it too: a new event's webhook arrives.
        const after = await track(base, apiKey);
        expect(after.status).toBe(201);
        await until(
          'event.created after the restart',
          async () => (after.eventId && receiver.eventIds.has(after.eventId) ? true : null),
          served,
          60_000,
        );

        const acknowledged = answers.flatMap((a) => (a.eventId ? [a.eventId] : []));
        expect(acknowledged.length).toBeGreaterThan(70);
        const stored = await storedEventIds(url, acknowledged);
        expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
      } finally {
        if (served?.alive()) {
          served.child.kill('SIGTERM');
          await served.exited;
        }
        receiver.server.close();
        // A failed run must not leave the next test without its server.
        await cluster.ensureRunning();
      }
    },
    120_000,
  );

  it('bounds every wait when the database stops answering (a partition) and recovers when it heals', async () => {
    const url = await createDatabase();
    const proxy = await startTcpProxy(cluster.port);
    let served: ServedChild | null = null;
    try {
      const proxied = url.replace(`:${cluster.port}/`, `:${proxy.port}/`);
      served = await serveChild({ TALLY_DATABASE_URL: proxied, ...TIMEOUTS });
      const { base } = served;
      const apiKey = printedApiKey(served);
      for (let i = 0; i < 20; i++) expect((await track(base, apiKey)).status).toBe(201);

      proxy.partition();
      // Requests on pooled connections (statement bound: 1.5 s + 1 s), on new connections
      // (connect bound: 1 s), and waiting for a connection all fail fast with 503.
      const during = await Promise.all(Array.from({ length: 30 }, () => track(base, apiKey)));
      expect(unexpected(during)).toEqual([]);
      expect(during.filter((a) => a.status === 503).length).toBe(30);
      expect(Math.max(...during.map((a) => a.ms))).toBeLessThan(8_000);
      const notReady = await readyz(base);
      expect(notReady).toMatchObject({ status: 503, code: 'service_unavailable' });
      expect(notReady.ms).toBeLessThan(3_000);
      expect(served.alive()).toBe(true);

      proxy.heal();
      await until(
        '/readyz 200 after the partition',
        async () => ((await readyz(base)).status === 200 ? true : null),
        served,
      );
      const healed = await Promise.all(Array.from({ length: 10 }, () => track(base, apiKey)));
      expect(healed.map((a) => a.status)).toEqual(Array.from({ length: 10 }, () => 201));
      expect(served.alive()).toBe(true);
    } finally {
      if (served?.alive()) {
        served.child.kill('SIGTERM');
        await served.exited;
      }
      await proxy.close();
    }
  }, 120_000);
});
