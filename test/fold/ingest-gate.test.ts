import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, ConfigError } from '../../src/config.js';
import { foldOnce } from '../../src/fold/pass.js';
import { foldLag, tailState } from '../../src/fold/tail.js';
import { IngestGate, INGEST_GATE_TIMING } from '../../src/fold/ingest-gate.js';
import { unlimited } from '../reports/unlimited.js';
import { ENGINES, createTestStorage } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { PAUSED } from './derived.js';

const NOW = Date.parse('2026-11-20T12:00:00.000Z');

const event = (i: number) => ({
  agent_id: `agent-${i % 3}`,
  task_type: 'support_ticket_reply',
  outcome: 'success',
  occurred_at: new Date(NOW - 3_600_000).toISOString(),
});

/** Whether `promise` is still pending after `ms` of real time (the gate reads every 100 ms). */
async function pendingAfter(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const marker = Symbol('pending');
  const timer = new Promise((resolve) => setTimeout(() => resolve(marker), ms));
  return (await Promise.race([promise.then(() => null), timer])) === marker;
}

async function metric(h: Harness, name: string): Promise<number> {
  const res = await h.request({ method: 'GET', url: '/metrics', apiKey: null });
  const line = res.body.split('\n').find((l) => l.startsWith(`${name} `));
  return Number(line?.split(' ')[1] ?? NaN);
}

/** Folds until the tail is empty (on PostgreSQL a pass may wait for another test's transaction). */
async function foldEverything(h: Harness): Promise<void> {
  for (let i = 0; i < 500; i++) {
    await foldOnce(h.ctx);
    if ((await tailState(h.ctx.db, h.engine)).events === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('the tail did not empty');
}

/**
 * TALLY_INGEST_MAX_LAG_SECONDS (fold/ingest-gate.ts): a batch admitted while the folding
 * stage is further behind waits until the stage is back within it, then is stored as usual.
 */
describe.each(ENGINES)('backfill batches wait for the folding stage (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, {
      now: new Date(NOW).toISOString(),
      rateLimiter: unlimited,
      ...PAUSED,
      env: { ...PAUSED.env, TALLY_INGEST_MAX_LAG_SECONDS: '10' },
    });
  });
  afterAll(async () => h.close());

  const batch = (from: number, n: number) =>
    h.request({
      method: 'POST',
      url: '/v1/track/batch',
      payload: { events: Array.from({ length: n }, (_, i) => event(from + i)) },
    });

  it('stores a batch at once while the lag is within the bound', async () => {
    const res = await batch(0, 5);
    expect(res.statusCode).toBe(207);
    expect(await metric(h, 'tally_ingest_held_batches_total')).toBe(0);
  });

  it('holds a batch while the stage is further behind, and stores it once the stage folds', async () => {
    // The five events above are now a minute old and not folded: the stage is 60 s behind.
    h.clock.advance(60_000);
    expect((await foldLag(h.ctx.db, engine, h.clock.now().getTime())).lagMs).toBe(60_000);
    // The gate reuses its last reading (lag 0, by the batch above) for checkEveryMs.
    await new Promise((resolve) => setTimeout(resolve, INGEST_GATE_TIMING.checkEveryMs + 50));
    const held = batch(5, 3);
    expect(await pendingAfter(held, 400)).toBe(true);
    expect((await tailState(h.ctx.db, engine)).events).toBe(5);

    await foldEverything(h);
    const res = await held;
    expect(res.statusCode).toBe(207);
    const results = (res.json() as { data: Array<{ status: number }> }).data;
    expect(results.map((r) => r.status)).toEqual([201, 201, 201]);
    expect((await tailState(h.ctx.db, engine)).events).toBe(3);
    expect(await metric(h, 'tally_ingest_held_batches_total')).toBe(1);
    expect(await metric(h, 'tally_ingest_held_seconds_total')).toBeGreaterThan(0);
  });

  it('never holds a single POST /v1/track', async () => {
    h.clock.advance(60_000);
    const res = await h.request({ method: 'POST', url: '/v1/track', payload: event(100) });
    expect(res.statusCode).toBe(201);
    expect(await metric(h, 'tally_ingest_held_batches_total')).toBe(1);
  });
});

describe.each(ENGINES)('the ingest gate itself (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, {
      now: new Date(NOW).toISOString(),
      rateLimiter: unlimited,
      ...PAUSED,
      env: { ...PAUSED.env, TALLY_INGEST_MAX_LAG_SECONDS: '0' },
    });
    const res = await h.request({ method: 'POST', url: '/v1/track/batch', payload: { events: [event(0)] } });
    expect(res.statusCode).toBe(207);
    h.clock.advance(3_600_000);
  });
  afterAll(async () => h.close());

  const read = () => foldLag(h.ctx.db, engine, h.clock.now().getTime());

  it('is off at 0', () => {
    expect(h.app.ingestGate).toBeNull();
  });

  it('stops holding when the watermark stands still (no stage folds)', async () => {
    // With a wait of a minute, only the stall ends the hold: a gate without it fails the test by
    // its timeout.
    const gate = new IngestGate(read, 10_000, { checkEveryMs: 20, maxWaitMs: 60_000, stallMs: 300 });
    const waited = await gate.admit();
    expect(waited).toBeGreaterThan(0);
    // Stalled: the next batch does not wait at all.
    expect(await gate.admit()).toBe(0);
  });

  it('holds one batch at most maxWaitMs', async () => {
    const gate = new IngestGate(read, 10_000, { checkEveryMs: 20, maxWaitMs: 300, stallMs: 3_600_000 });
    expect(await gate.admit()).toBeGreaterThan(0);
  });

  it('lets the waiting batches go when the service shuts down', async () => {
    const gate = new IngestGate(read, 10_000, { checkEveryMs: 20, maxWaitMs: 60_000, stallMs: 3_600_000 });
    const waiting = gate.admit();
    expect(await pendingAfter(waiting, 200)).toBe(true);
    gate.close();
    expect(await waiting).toBeGreaterThan(0);
    expect(await gate.admit()).toBe(0);
  });

  it('does not hold a batch when the lag cannot be read', async () => {
    const gone = await createTestStorage(engine);
    await gone.destroy();
    const gate = new IngestGate(() => foldLag(gone.db, engine, NOW), 10_000, INGEST_GATE_TIMING);
    expect(await gate.admit()).toBe(0);
  });
});

describe('TALLY_INGEST_MAX_LAG_SECONDS', () => {
  it('defaults to 12 s and takes 0 to turn the gate off', () => {
    expect(loadConfig({}).ingestMaxLagSeconds).toBe(12);
    expect(loadConfig({ TALLY_INGEST_MAX_LAG_SECONDS: '0' }).ingestMaxLagSeconds).toBe(0);
    expect(loadConfig({ TALLY_INGEST_MAX_LAG_SECONDS: '45' }).ingestMaxLagSeconds).toBe(45);
  });

  it.each(['-1', '1.5', 'ten', '86401'])('refuses %s', (raw) => {
    expect(() => loadConfig({ TALLY_INGEST_MAX_LAG_SECONDS: raw })).toThrow(ConfigError);
  });
});
