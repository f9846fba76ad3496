import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChildDatabase, runCli, type ChildDatabase } from '../support/child-process.js';
import { ENGINES } from '../support/engines.js';
import { serveChild } from '../support/serve.js';

const TRACK = { agent_id: 'bot-1', task_type: 'support_ticket_reply', outcome: 'success' };
const KEY = /tally_live_[A-Za-z0-9]{8}_[A-Za-z0-9]{48}/g;

/** `tally serve` on `databaseUrl`, healthy. */
const serve = (databaseUrl: string) => serveChild({ TALLY_DATABASE_URL: databaseUrl });

async function track(base: string, apiKey: string) {
  const res = await request(`${base}/v1/track`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(TRACK),
  });
  return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
}

describe.each(ENGINES)('tally serve (%s)', (engine) => {
  let database: ChildDatabase;
  beforeAll(async () => {
    database = await createChildDatabase(engine);
  });
  afterAll(async () => database.destroy());

  it('bootstraps the default organisation once and shuts down without losing acknowledged events', async () => {
    // First start on an empty database: the `default` organisation's key, printed once.
    const first = await serve(database.url);
    const printed = first.stdout().match(KEY) ?? [];
    expect(printed).toHaveLength(1);
    const apiKey = printed[0] ?? '';
    expect(first.stdout()).toContain('"default"');

    const tracked = await track(first.base, apiKey);
    expect(tracked.status).toBe(201);
    expect(tracked.body).toMatchObject({ currency: 'EUR', agent_id: 'bot-1' });
    const settings = await request(`${first.base}/v1/settings`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    expect(await settings.body.json()).toMatchObject({
      name: 'default',
      plan: 'enterprise',
      currency: 'EUR',
    });
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);

    // Second start on the same database: no new organisation, no key printed.
    const second = await serve(database.url);
    expect(second.stdout()).not.toMatch(KEY);
    expect((await track(second.base, apiKey)).status).toBe(201);

    // SIGTERM with ~100 track requests in flight.
    const inFlight = Array.from({ length: 100 }, () =>
      track(second.base, apiKey).then(
        (r) =>
          r.status === 503
            ? `503 ${String((r.body.error as { code?: string } | undefined)?.code)}`
            : r.status,
        () => 'no response' as const,
      ),
    );
    await sleep(20);
    second.child.kill('SIGTERM');
    const outcomes = await Promise.all(inFlight);
    expect(await second.exited).toBe(0);
    expect(second.stderr()).toContain('SIGTERM received');

    const answered = outcomes.filter((o) => o !== 'no response');
    // A clean 503 is one in our error shape, which a client knows to retry.
    expect(answered.filter((s) => s !== 201 && s !== '503 service_unavailable')).toEqual([]);
    const acknowledged = answered.filter((s) => s === 201).length;

    const storage = database.open();
    try {
      const row = await storage.db
        .selectFrom('events')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      // The two events tracked before the shutdown, plus every acknowledged one.
      expect(Number(row.n)).toBe(2 + acknowledged);
      const orgs = await storage.db.selectFrom('organizations').select('name').execute();
      expect(orgs).toEqual([{ name: 'default' }]);
    } finally {
      await storage.close();
    }
  }, 90_000);

  it('two processes started at once on an empty database create one default organisation', async () => {
    const empty = await createChildDatabase(engine);
    try {
      const servers = await Promise.all([serve(empty.url), serve(empty.url)]);
      for (const server of servers) server.child.kill('SIGTERM');
      expect(await Promise.all(servers.map((s) => s.exited))).toEqual([0, 0]);
      // One of them printed the key, the other found the organisation.
      expect(servers.flatMap((s) => s.stdout().match(KEY) ?? [])).toHaveLength(1);
      const storage = empty.open();
      try {
        expect(await storage.db.selectFrom('organizations').select('name').execute()).toEqual([
          { name: 'default' },
        ]);
      } finally {
        await storage.close();
      }
    } finally {
      await empty.destroy();
    }
  }, 90_000);
});

describe('tally serve configuration', () => {
  it('stops with one line naming TALLY_PORT when it is not a port', async () => {
    const result = await runCli(['serve'], { TALLY_DATABASE_URL: 'sqlite::memory:', TALLY_PORT: 'abc' });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^tally: invalid configuration: TALLY_PORT /);
  });
});
