import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChildDatabase, type ChildDatabase } from '../support/child-process.js';
import { ENGINES } from '../support/engines.js';
import { printedApiKey, serveChild, type ServedChild } from '../support/serve.js';

const TRACK = { agent_id: 'bot-1', task_type: 'support_ticket_reply', outcome: 'success' };

/**
 * Opens a raw connection that sends `head` and then nothing more; resolves with it once the
 * bytes are written. `closed` says after how many milliseconds the server closed it.
 */
async function stalledClient(
  port: number,
  head: string,
): Promise<{ socket: Socket; closed: Promise<number> }> {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const started = performance.now();
  const closed = new Promise<number>((resolve) =>
    socket.once('close', () => resolve(performance.now() - started)),
  );
  socket.resume();
  await new Promise<void>((resolve) => socket.write(head, () => resolve()));
  return { socket, closed };
}

/** Headers of a track request announcing a 100-byte body, and 11 bytes of that body. */
function partialTrack(apiKey: string): string {
  return (
    'POST /v1/track HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
    `Authorization: Bearer ${apiKey}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n` +
    '{"agent_id"'
  );
}

/** Resolves with what `promise` resolved with, or with 'timed out' after `ms`. */
function within<T>(promise: Promise<T>, ms: number): Promise<T | 'timed out'> {
  return Promise.race([promise, sleep(ms).then(() => 'timed out' as const)]);
}

async function track(
  base: string,
  apiKey: string,
): Promise<{ status: number | 'no response'; eventId?: string }> {
  try {
    const res = await request(`${base}/v1/track`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(TRACK),
    });
    const body = (await res.body.json()) as { event_id?: string };
    return { status: res.statusCode, eventId: res.statusCode === 201 ? body.event_id : undefined };
  } catch {
    return { status: 'no response' };
  }
}

describe.each(ENGINES)('slow clients (%s)', (engine) => {
  let database: ChildDatabase;
  let served: ServedChild | null = null;
  /** The `default` organisation's key, printed by the first start on this database. */
  let apiKey = '';
  beforeAll(async () => {
    database = await createChildDatabase(engine);
  });
  afterAll(async () => {
    if (served?.alive()) {
      served.child.kill('SIGKILL');
      await served.exited;
    }
    await database.destroy();
  });

  it('closes a connection that sent its headers and 11 bytes of its body, then stalled', async () => {
    served = await serveChild({
      TALLY_DATABASE_URL: database.url,
      TALLY_HTTP_REQUEST_TIMEOUT_MS: '1000',
      TALLY_HTTP_HEADERS_TIMEOUT_MS: '500',
    });
    apiKey = printedApiKey(served);
    const body = await stalledClient(served.port, partialTrack(apiKey));
    const headers = await stalledClient(served.port, 'POST /v1/track HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    // Closed by the server after its (shortened) timeouts, long before the test gives up.
    expect(await within(body.closed, 6_000)).toBeGreaterThan(800);
    expect(await within(headers.closed, 6_000)).toBeGreaterThan(400);
    // Nothing of the stalled request was stored, and the service goes on serving.
    expect((await track(served.base, apiKey)).status).toBe(201);
    served.child.kill('SIGTERM');
    expect(await served.exited).toBe(0);
    const storage = database.open();
    try {
      const row = await storage.db
        .selectFrom('events')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      expect(Number(row.n)).toBe(1);
    } finally {
      await storage.close();
    }
  }, 60_000);

  it('stops within the shutdown deadline on SIGTERM with a stalled client connected, losing no acknowledged event', async () => {
    served = await serveChild({
      TALLY_DATABASE_URL: database.url,
      // Longer than the deadline, so only the deadline can end the stalled request.
      TALLY_HTTP_REQUEST_TIMEOUT_MS: '60000',
      TALLY_SHUTDOWN_TIMEOUT_MS: '1500',
    });
    const { base } = served;
    const stalled = await stalledClient(served.port, partialTrack(apiKey));

    let running = true;
    const answers: { status: number | 'no response'; eventId?: string }[] = [];
    const loops = Array.from({ length: 8 }, async () => {
      while (running) answers.push(await track(base, apiKey));
    });
    while (answers.filter((a) => a.status === 201).length < 30) await sleep(20);

    const signalled = performance.now();
    served.child.kill('SIGTERM');
    const exit = await within(served.exited, 15_000);
    const tookMs = performance.now() - signalled;
    running = false;
    await Promise.all(loops);

    expect(exit).toBe(0);
    // The deadline (1.5 s) and a margin for a loaded machine; without a deadline it never ends.
    expect(tookMs).toBeLessThan(6_000);
    expect(await within(stalled.closed, 1_000)).not.toBe('timed out');
    expect(served.stderr()).toContain('SIGTERM received');

    const acknowledged = answers.flatMap((a) => (a.eventId ? [a.eventId] : []));
    expect(answers.filter((a) => a.status !== 201 && a.status !== 503 && a.status !== 'no response')).toEqual(
      [],
    );
    const storage = database.open();
    try {
      const rows = await storage.db
        .selectFrom('events')
        .select('id')
        .where('id', 'in', acknowledged)
        .execute();
      expect(rows.length).toBe(acknowledged.length);
    } finally {
      await storage.close();
    }
  }, 60_000);
});
