import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { buildApp } from '../../src/app.js';
import { countHeldSpans } from '../../src/otlp/held.js';
import { createOrganization } from '../../src/orgs/organizations.js';
import { openStorage, type Storage } from '../../src/storage/db.js';
import type { StoredEvent } from '../../src/tracking/events.js';
import { createTestStorage, ENGINES, type TestStorage } from '../support/engines.js';
import { unlimited } from '../reports/unlimited.js';
import { agentRun, exportRequest, type JsonSpan } from './otlp-json.js';

const ITERATIONS = 40;
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * A run's model call and its agent span in two exports handled at the same time (two batches of
 * one BatchSpanProcessor, or two exporters behind one endpoint, on one instance or two). Each
 * export's work on a trace comes wholly before or wholly after the other's: the call is in its
 * run, once, or (its export after the run was settled) held and counted late, never lost.
 */
describe.each(ENGINES)('concurrent exports of one trace (%s)', (engine) => {
  let primary: TestStorage;
  let clock: ManualClock;
  let config: ReturnType<typeof loadConfig>;
  let apiKey: string;

  const start = async (storage: Storage) =>
    buildApp({ storage, config, clock, rateLimiter: unlimited }, { logger: false });
  const send = async (app: FastifyInstance, spans: JsonSpan[]) => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/traces',
      headers: { authorization: `Bearer ${apiKey}` },
      payload: exportRequest(spans),
    });
    expect(res.statusCode, res.body).toBe(200);
  };
  const events = async (app: FastifyInstance, agent: string) =>
    (
      await app.inject({
        method: 'GET',
        url: '/v1/events?limit=100',
        headers: { authorization: `Bearer ${apiKey}` },
      })
    )
      .json<{ data: StoredEvent[] }>()
      .data.filter((e) => e.agent_id === agent);
  const runOf = (agent: string, tokens: number) =>
    agentRun({
      endMs: clock.now().getTime(),
      agent: { 'gen_ai.agent.name': agent, 'tally.task_type': 'support_ticket_reply' },
      calls: [
        {
          'gen_ai.operation.name': 'chat',
          'gen_ai.request.model': 'gpt-4o',
          'gen_ai.usage.input_tokens': tokens,
          'gen_ai.usage.output_tokens': 10,
        },
      ],
    });

  beforeAll(async () => {
    primary = await createTestStorage(engine);
    config = loadConfig({ TALLY_LOG_LEVEL: 'silent' });
    clock = new ManualClock(new Date());
    const ctx = { db: primary.db, engine, clock, config };
    apiKey = (await createOrganization({ ctx, input: { name: 'Racers', plan: 'enterprise' } })).api_key;
  });
  afterAll(async () => primary.destroy());

  it('counts a model call sent beside its agent span once: in its run, or held as late', async () => {
    const app = await start(primary);
    try {
      const heldBefore = await countHeldSpans(primary.db);
      const expected = new Map<string, number>();
      for (let i = 0; i < ITERATIONS; i++) {
        const run = runOf('racing-bot', 1000 + i);
        expected.set(run.root.traceId, 1000 + i);
        const child = send(app, run.children);
        for (let turn = 0; turn < i % 5; turn++) await nextTurn();
        await Promise.all([child, send(app, [run.root])]);
      }
      const tracked = await events(app, 'racing-bot');
      expect(tracked).toHaveLength(ITERATIONS);
      let late = 0;
      for (const event of tracked) {
        const trace = (event.metadata as { otel_trace_id: string }).otel_trace_id;
        if (event.tokens_in === null) late++;
        else expect(event.tokens_in).toBe(expected.get(trace));
      }
      expect(await countHeldSpans(primary.db)).toBe(heldBefore + late);
    } finally {
      await app.close();
    }
  });

  // PostgreSQL only (two instances share one database there; SQLite's write lock serialises the
  // exports already): declared for that engine alone, so SQLite's run counts no skipped test.
  const onPostgres = engine === 'postgres' ? it : () => undefined;
  onPostgres(
    'settles a run on one instance only after another instance has held its model call',
    async () => {
      const secondary = openStorage(primary.url, { schema: primary.schema });
      const [a, b] = [await start(primary), await start(secondary)];
      let unblock = () => {};
      try {
        const heldBefore = await countHeldSpans(primary.db);
        const run = runOf('blocked-bot', 4321);
        // The held spans' table is locked against writes: the call's export waits in its
        // transaction, after it locked its trace, until the blocker lets it go.
        let blocked = () => {};
        const blocker = primary.db.transaction().execute(async (trx) => {
          await sql`LOCK TABLE otlp_held_spans IN EXCLUSIVE MODE`.execute(trx);
          blocked();
          await new Promise<void>((resolve) => (unblock = resolve));
        });
        await new Promise<void>((resolve) => (blocked = resolve));
        const waiting = async (pattern: string) => {
          const { rows } = await sql<{ n: number }>`
            SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE wait_event_type = 'Lock' AND query ILIKE ${pattern}`.execute(primary.db);
          return (rows[0]?.n ?? 0) > 0;
        };
        const child = send(a, run.children);
        for (let tries = 0; !(await waiting('insert into "otlp_held_spans"%')); tries++) {
          if (tries > 500) throw new Error('the export of the model call never reached its write');
          await sleep(10);
        }
        // The agent span's export, on the other instance, must not settle the run meanwhile.
        let rootDone = false;
        const root = send(b, [run.root]).then(() => void (rootDone = true));
        for (let tries = 0; tries < 100 && !rootDone; tries++) await sleep(20);
        expect(rootDone).toBe(false);
        unblock();
        await Promise.all([blocker, child, root]);
        expect(await events(a, 'blocked-bot')).toEqual([expect.objectContaining({ tokens_in: 4321 })]);
        expect(await countHeldSpans(primary.db)).toBe(heldBefore);
      } finally {
        unblock();
        await a.close();
        await b.close();
        await secondary.close();
      }
    },
  );
});
