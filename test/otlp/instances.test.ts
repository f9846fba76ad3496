import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import type { ServiceCtx } from '../../src/context.js';
import { buildApp } from '../../src/app.js';
import { sweepHeldSpans } from '../../src/otlp/sweeper.js';
import { readCounters } from '../../src/otlp/held.js';
import { createOrganization } from '../../src/orgs/organizations.js';
import { openStorage, type Storage } from '../../src/storage/db.js';
import type { StoredEvent } from '../../src/tracking/events.js';
import { createTestStorage, ENGINES, type TestStorage } from '../support/engines.js';
import { tempFile } from '../support/temp.js';
import { unlimited } from '../reports/unlimited.js';
import { agentRun, exportRequest, type JsonSpan } from './otlp-json.js';

/**
 * Two service instances on one database, as in scale-out (several `tally serve` on one
 * PostgreSQL), and an instance that stops and starts again: held spans live in the database.
 */
describe.each(ENGINES)('held spans across instances and restarts (%s)', (engine) => {
  let primary: TestStorage;
  let clock: ManualClock;
  let config: ReturnType<typeof loadConfig>;
  let apiKey: string;
  let ctx: ServiceCtx;

  const start = async (storage: Storage) =>
    buildApp({ storage, config, clock, rateLimiter: unlimited }, { logger: false });
  const send = (app: FastifyInstance, spans: JsonSpan[]) =>
    app.inject({
      method: 'POST',
      url: '/v1/traces',
      headers: { authorization: `Bearer ${apiKey}` },
      payload: exportRequest(spans),
    });
  const events = async (app: FastifyInstance, agent: string) =>
    (await app.inject({ method: 'GET', url: '/v1/events', headers: { authorization: `Bearer ${apiKey}` } }))
      .json<{ data: StoredEvent[] }>()
      .data.filter((e) => e.agent_id === agent);

  beforeAll(async () => {
    const file = engine === 'sqlite' ? tempFile('tally-otlp-', 't.db') : undefined;
    primary = await createTestStorage(engine, { file });
    config = loadConfig({ TALLY_LOG_LEVEL: 'silent' });
    clock = new ManualClock(new Date());
    ctx = { db: primary.db, engine, clock, config, storage: primary };
    apiKey = (await createOrganization({ ctx, input: { name: 'Twins', plan: 'enterprise' } })).api_key;
  });
  afterAll(async () => primary.destroy());

  it('finishes a run on one instance with the children another one held', async () => {
    const secondary = openStorage(primary.url, { schema: primary.schema });
    const [a, b] = [await start(primary), await start(secondary)];
    try {
      const run = agentRun({
        endMs: clock.now().getTime(),
        agent: { 'gen_ai.agent.name': 'twin-bot', 'tally.task_type': 'dev_code_review' },
      });
      expect((await send(a, run.children)).statusCode).toBe(200);
      expect((await send(b, [run.root])).statusCode).toBe(200);
      expect(await events(a, 'twin-bot')).toEqual([
        expect.objectContaining({ tokens_in: 1000, tokens_out: 100 }),
      ]);
    } finally {
      await a.close();
      await b.close();
      await secondary.close();
    }
  });

  it('keeps acknowledged children over a restart of the instance', async () => {
    const run = agentRun({
      endMs: clock.now().getTime(),
      agent: { 'gen_ai.agent.name': 'restart-bot', 'tally.task_type': 'dev_code_review' },
    });
    const before = openStorage(primary.url, { schema: primary.schema });
    const first = await start(before);
    expect((await send(first, run.children)).statusCode).toBe(200);
    // The instance goes away: nothing of it in memory is left.
    await first.close();
    await before.close();
    const after = openStorage(primary.url, { schema: primary.schema });
    const second = await start(after);
    try {
      expect((await send(second, [run.root])).statusCode).toBe(200);
      expect(await events(second, 'restart-bot')).toEqual([expect.objectContaining({ tokens_in: 1000 })]);
    } finally {
      await second.close();
      await after.close();
    }
  });

  it('counts a dropped trace once when two sweepers settle it at the same time', async () => {
    const app = await start(primary);
    try {
      const run = agentRun({ endMs: clock.now().getTime(), agent: { 'gen_ai.agent.name': 'lost-bot' } });
      expect((await send(app, run.children)).statusCode).toBe(200);
      const before = (await readCounters(primary.db)).get('dropped_traces') ?? 0;
      clock.advance(config.otlpHoldSeconds * 1000 + 1);
      // PostgreSQL: two processes' connections. SQLite: two sweeps of one process (a second
      // connection to the file in the same thread would wait for the first one synchronously).
      const other = engine === 'postgres' ? openStorage(primary.url, { schema: primary.schema }) : primary;
      try {
        const results = await Promise.all([sweepHeldSpans(ctx), sweepHeldSpans({ ...ctx, db: other.db })]);
        expect(results.reduce((n, r) => n + r.droppedTraces, 0)).toBe(1);
      } finally {
        if (other !== primary) await other.close();
      }
      expect((await readCounters(primary.db)).get('dropped_traces')).toBe(before + 1);
    } finally {
      clock.set(new Date());
      await app.close();
    }
  });
});
