import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PLANS } from '../../src/billing/plans.js';
import { createChildDatabase, type ChildDatabase } from '../support/child-process.js';
import { ENGINES } from '../support/engines.js';
import { printedApiKey, serveChild } from '../support/serve.js';
import { tempFile } from '../support/temp.js';

/** Enough keep-alive connections that some are idle, some busy and some not yet accepted at the signal. */
const CONNECTIONS = 128;
const TRACK = { agent_id: 'bot-1', task_type: 'support_ticket_reply', outcome: 'success' };
const BATCH = { events: Array.from({ length: 20 }, (_, i) => ({ ...TRACK, agent_id: `bot-${i % 4}` })) };

/** Rates high enough that the load meets no 429: the test is about shutdown, not limits. */
const UNLIMITED_PLANS = JSON.stringify(
  Object.fromEntries(
    Object.entries(DEFAULT_PLANS).map(([name, plan]) => [
      name,
      { ...plan, track_rate_per_second: 1_000_000, other_rate_per_second: 1_000_000 },
    ]),
  ),
);

interface Outcome {
  /** Whether the request was written to its connection before the test sent SIGTERM. */
  beforeSignal: boolean;
  status: number | null;
  code: string | null;
  connection: string | null;
  /** Events the answer acknowledged (201, or the items of a 207 that are 201). */
  stored: number;
  /** The client's error when no response came (a reset or closed connection). */
  error: string | null;
}

interface Answer {
  error?: { code?: string };
  data?: Array<{ status: number }>;
}

describe.each(ENGINES)('SIGTERM under load (%s)', (engine) => {
  let database: ChildDatabase;
  beforeAll(async () => {
    database = await createChildDatabase(engine);
  });
  afterAll(async () => database.destroy());

  it('answers every request sent before the signal (its result or 503) and closes keep-alive connections', async () => {
    const served = await serveChild({
      TALLY_DATABASE_URL: database.url,
      TALLY_PLANS_FILE: tempFile('tally-plans-', 'plans.json', UNLIMITED_PLANS),
    });
    const apiKey = printedApiKey(served);
    // Long keep-alive on the client's side: every connection stays open through the signal.
    const pool = new Pool(served.base, {
      connections: CONNECTIONS,
      pipelining: 1,
      keepAliveTimeout: 60_000,
      keepAliveMaxTimeout: 60_000,
    });
    let signalled = false;
    const outcomes: Outcome[] = [];
    // A request counts as sent when undici writes it to its connection, not when the test asks
    // for it (a busy client may write it much later); told by its x-load-id header.
    const sent = new Set<string>();
    const onSend = (message: unknown) => {
      const id = /x-load-id: (\d+)/.exec((message as { headers: string }).headers)?.[1];
      if (id !== undefined && !signalled) sent.add(id);
    };
    subscribe('undici:client:sendHeaders', onSend);

    let nextId = 0;
    const send = async (batch: boolean): Promise<Outcome> => {
      const id = String(nextId++);
      try {
        const res = await pool.request({
          method: 'POST',
          path: batch ? '/v1/track/batch' : '/v1/track',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'x-load-id': id },
          body: JSON.stringify(batch ? BATCH : TRACK),
        });
        const body = (await res.body.json()) as Answer;
        const connection = res.headers.connection;
        return {
          beforeSignal: sent.has(id),
          status: res.statusCode,
          code: body.error?.code ?? null,
          connection: typeof connection === 'string' ? connection : null,
          stored:
            res.statusCode === 201
              ? 1
              : res.statusCode === 207
                ? (body.data ?? []).filter((d) => d.status === 201).length
                : 0,
          error: null,
        };
      } catch (error) {
        const { code, message } = error as { code?: string; message?: string };
        const failure = { status: null, code: null, connection: null, stored: 0 };
        return { beforeSignal: sent.has(id), ...failure, error: `${String(code)}: ${String(message)}` };
      }
    };

    try {
      // One loop per connection, each sending as soon as its previous answer came: at any time
      // nearly every connection has a request on the wire, in the server's hands or about to.
      const loops = Array.from({ length: CONNECTIONS }, async (_, i) => {
        for (let n = i; ; n += CONNECTIONS) {
          const outcome = await send(n % 5 === 0);
          outcomes.push(outcome);
          // After the signal, a loop stops at its first refusal: a 503 or a closed door.
          if (signalled && (outcome.status === null || outcome.status === 503)) return;
        }
      });
      await sleep(1_500);
      signalled = true;
      served.child.kill('SIGTERM');
      expect(await served.exited).toBe(0);
      await Promise.all(loops);
    } finally {
      unsubscribe('undici:client:sendHeaders', onSend);
      await pool.destroy();
    }

    const summary = JSON.stringify(summarise(outcomes));
    const before = outcomes.filter((o) => o.beforeSignal);
    expect(before.length, summary).toBeGreaterThan(CONNECTIONS);
    // Every request written before the signal got an HTTP answer: none met a reset.
    expect(
      before.filter((o) => o.status === null).map((o) => o.error),
      summary,
    ).toEqual([]);
    // Its result (201, or 207 for a batch) or a 503 in the error shape a client retries.
    const answered = outcomes.filter((o) => o.status !== null);
    expect(
      answered.filter((o) => ![201, 207, 503].includes(o.status ?? 0)),
      summary,
    ).toEqual([]);
    const refused = answered.filter((o) => o.status === 503);
    expect(refused.filter((o) => o.code !== 'service_unavailable')).toEqual([]);
    // A refusal tells its keep-alive connection to close, so the client sends no more on it.
    expect(refused.filter((o) => o.connection !== 'close')).toEqual([]);
    expect(served.stderr()).toContain('SIGTERM received');

    // What was acknowledged, singles and batches in flight at the signal included, is stored.
    const storage = database.open();
    try {
      const row = await storage.db
        .selectFrom('events')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      expect(Number(row.n)).toBe(outcomes.reduce((n, o) => n + o.stored, 0));
    } finally {
      await storage.close();
    }
  }, 90_000);
});

/** Outcomes by whether sent before the signal (B) or after (A), and status or error code. */
function summarise(outcomes: Outcome[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const o of outcomes) {
    const what = `${o.beforeSignal ? 'B' : 'A'} ${o.status ?? o.error?.split(':')[0] ?? '?'}`;
    counts[what] = (counts[what] ?? 0) + 1;
  }
  return counts;
}
