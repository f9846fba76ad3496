import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import type { ServiceCtx } from '../../src/context.js';
import type { Db, Engine } from '../../src/storage/db.js';
import type { FoldResult } from '../../src/fold/pass.js';
import { FoldStage } from '../../src/fold/stage.js';

/**
 * How long the folding stage waits between passes that emptied the tail (fold/stage.ts): on SQLite at
 * least as long as the last pass took (tracking waits behind a pass: one writer), on PostgreSQL
 * idlePollMs whatever the pass took. The passes here are the stage's own seam (runPass): each
 * folds a few events and takes PASS_MS (long enough that a busy machine cannot make a
 * 10 ms wait look like one), and none touches a database.
 */
const PASS_MS = 500;
const IDLE_MS = 10;

async function gapsBetweenPasses(engine: Engine, passes: number, more = false): Promise<number[]> {
  const ctx: ServiceCtx = {
    db: null as unknown as Db,
    engine,
    clock: systemClock,
    config: loadConfig({ TALLY_LOG_LEVEL: 'silent' }),
  };
  const spans: Array<[number, number]> = [];
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const stage = new FoldStage(ctx, {
    idlePollMs: IDLE_MS,
    runPass: async (): Promise<FoldResult> => {
      const start = performance.now();
      await new Promise((resolve) => setTimeout(resolve, PASS_MS));
      spans.push([start, performance.now()]);
      if (spans.length === passes) done();
      return { folded: 5, more, watermark: spans.length };
    },
  });
  stage.start();
  await finished;
  await stage.stop();
  return spans.slice(1).map(([start], i) => start - (spans[i] as [number, number])[1]);
}

describe('the folding stage between passes', () => {
  it('waits on SQLite at least as long as the last pass took', async () => {
    for (const gap of await gapsBetweenPasses('sqlite', 3)) expect(gap).toBeGreaterThanOrEqual(PASS_MS - 5);
  });

  it('waits on PostgreSQL idlePollMs, however long the pass took', async () => {
    for (const gap of await gapsBetweenPasses('postgres', 3)) expect(gap).toBeLessThan(PASS_MS);
  });

  it('starts the next pass at once after a full one, on either engine', async () => {
    for (const engine of ['sqlite', 'postgres'] as const) {
      for (const gap of await gapsBetweenPasses(engine, 3, true)) expect(gap).toBeLessThan(PASS_MS);
    }
  });
});
