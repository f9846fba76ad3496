import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tailState } from '../../src/fold/tail.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, pausedStageOptions, type Harness } from '../support/harness.js';

const NOW = Date.parse('2026-11-20T12:00:00.000Z');

async function until(check: () => Promise<boolean> | boolean, what: string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * A pass that fails for a reason other than the database being away (here a trigger; in practice
 * a sum past 2^63) fails again on every retry: the stage must say so once, count every failed
 * pass in /metrics, retry less and less often, and fold again once the cause is gone.
 */
describe.each(ENGINES)('a failing folding stage (%s)', (engine) => {
  let h: Harness;
  const reported: unknown[] = [];
  const recovered: number[] = [];
  beforeAll(async () => {
    // The app's /metrics counts the failed passes of this stage.
    h = await createHarness(engine, {
      ...pausedStageOptions(NOW),
      stage: {
        idlePollMs: 1,
        retry: { firstMs: 40, mostMs: 160 },
        onError: (error) => reported.push(error),
        onRecover: (failures) => recovered.push(failures),
      },
    });
  });
  afterAll(async () => h.close());

  async function breakFolding() {
    if (engine === 'sqlite') {
      await sql`CREATE TRIGGER fold_boom BEFORE INSERT ON usage_monthly BEGIN SELECT RAISE(ABORT, 'boom'); END`.execute(
        h.ctx.db,
      );
      return;
    }
    await sql`CREATE FUNCTION fold_boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'boom'; END $$`.execute(
      h.ctx.db,
    );
    await sql`CREATE TRIGGER fold_boom BEFORE INSERT ON usage_monthly FOR EACH ROW EXECUTE FUNCTION fold_boom()`.execute(
      h.ctx.db,
    );
  }

  async function repairFolding() {
    if (engine === 'sqlite') await sql`DROP TRIGGER fold_boom`.execute(h.ctx.db);
    else await sql`DROP TRIGGER fold_boom ON usage_monthly`.execute(h.ctx.db);
  }

  async function metric(kind: string): Promise<number> {
    const res = await h.request({ method: 'GET', url: '/metrics', apiKey: null });
    const line = res.body.split('\n').find((l) => l.startsWith(`tally_fold_errors_total{kind="${kind}"} `));
    return Number(line?.split(' ')[1]);
  }

  it('reports a repeating failure once, counts it in /metrics, backs off, and recovers', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await h.request({
        method: 'POST',
        url: '/v1/track',
        payload: { agent_id: 'a', task_type: 'support_ticket_reply', outcome: 'success' },
      });
      expect(res.statusCode, res.body).toBe(201);
    }
    expect(await metric('failed')).toBe(0);
    await breakFolding();

    const failedAt: number[] = [];
    const stage = h.stage;
    stage.start();
    try {
      let seen = 0;
      await until(() => {
        const { failed } = stage.errors;
        if (failed > seen) {
          failedAt.push(Date.now());
          seen = failed;
        }
        return failed >= 5;
      }, 'five failed passes');
      // The same failure, reported once.
      expect(reported.length).toBe(1);
      expect(String((reported[0] as Error).message)).toContain('boom');
      // Backing off: 40, 80, 160, 160 ms between the five passes (at least), not the poll's 1 ms.
      expect((failedAt[4] as number) - (failedAt[0] as number)).toBeGreaterThanOrEqual(400);
      expect(await metric('failed')).toBeGreaterThanOrEqual(5);
      expect(await metric('unavailable')).toBe(0);
      expect((await tailState(h.ctx.db, h.ctx.engine)).events).toBe(3);

      await repairFolding();
      await until(async () => (await tailState(h.ctx.db, h.ctx.engine)).events === 0, 'the fold');
      await until(() => recovered.length === 1, 'the recovery');
      expect(recovered[0]).toBeGreaterThanOrEqual(5);
      expect(reported.length).toBe(1);
      const usage = await h.request({ method: 'GET', url: '/v1/reports/usage' });
      expect((usage.json() as { lifetime_events: number }).lifetime_events).toBe(3);
    } finally {
      await stage.stop();
    }
  }, 60_000);
});
