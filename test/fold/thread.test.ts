import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import type { OrgCtx, ServiceCtx } from '../../src/context.js';
import { createOrganization, getOrganization } from '../../src/orgs/organizations.js';
import { isUnavailableError } from '../../src/storage/db.js';
import type { FoldResult } from '../../src/fold/pass.js';
import { FoldStage } from '../../src/fold/stage.js';
import { tailState } from '../../src/fold/tail.js';
import { foldThreadFor, type FoldThread } from '../../src/fold/thread.js';
import { trackEvent } from '../../src/tracking/track.js';
import { createWebhook } from '../../src/webhooks/subscriptions.js';
import { createTestStorage, type TestStorage } from '../support/engines.js';
import { tempFile } from '../support/temp.js';
import { expectFoldedOnce } from './folded-once.js';
import { TEST_SECRET_KEY } from '../support/secret-key.js';

/**
 * The folding thread of a SQLite file (fold/thread.ts): SQLite only, since PostgreSQL folds in
 * its own server process and a database in memory cannot be opened by a second connection.
 */
describe('the folding thread of a SQLite file', () => {
  let storage: TestStorage;
  let thread: FoldThread;
  let org: OrgCtx;
  const agents = Array.from({ length: 23 }, (_, i) => `agent-${i}`);

  beforeAll(async () => {
    storage = await createTestStorage('sqlite', { file: tempFile('tally-fold-thread-', 'db.sqlite') });
    const config = loadConfig({
      TALLY_LOG_LEVEL: 'silent',
      TALLY_WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      TALLY_SECRET_KEY: TEST_SECRET_KEY,
    });
    const ctx: ServiceCtx = {
      db: storage.db,
      storage,
      engine: 'sqlite',
      clock: new ManualClock('2026-11-20T12:00:00.000Z'),
      config,
    };
    const created = await createOrganization({ ctx, input: { name: 'Thread', plan: 'enterprise' } });
    org = { ...ctx, org: await getOrganization({ ctx, id: created.org.id }), actorKeyId: null };
    await createWebhook({
      ctx: org,
      input: { url: 'http://127.0.0.1:9/hook', event_types: ['event.created', 'agent.first_event'] },
    });
    const found = foldThreadFor(ctx, storage.url, storage.db);
    if (found === null) throw new Error('a SQLite file has a folding thread');
    thread = found;
  });
  afterAll(async () => {
    await thread.close();
    await storage.destroy();
  });

  const track = (i: number) =>
    trackEvent({
      ctx: org,
      idempotencyKey: null,
      input: {
        agent_id: agents[i % agents.length] as string,
        task_type: 'support_ticket_reply',
        outcome: i % 5 === 0 ? 'failure' : 'success',
        metadata: { client_id: `c${i % 3}` },
      },
    });

  it('folds every event once, in its thread, while tracking writes between its passes', async () => {
    const passes: FoldResult[] = [];
    const errors: unknown[] = [];
    const stage = new FoldStage(org, {
      idlePollMs: 1,
      batch: 37,
      onError: (e) => errors.push(e),
      runPass: async (pass) => {
        const result = await thread.run(pass);
        passes.push(result);
        return result;
      },
    });
    stage.start();
    const total = 400;
    for (let burst = 0; burst < total / 40; burst++) {
      await Promise.all(Array.from({ length: 40 }, (_, i) => track(burst * 40 + i)));
    }
    const deadline = Date.now() + 20_000;
    while ((await tailState(storage.db, 'sqlite')).events > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await stage.stop();
    expect(errors).toEqual([]);
    // Every event was folded by the thread's passes, several of them while tracking went on.
    expect(passes.reduce((sum, p) => sum + p.folded, 0)).toBe(total);
    expect(passes.filter((p) => p.folded > 0).length).toBeGreaterThan(total / 37);
    await expectFoldedOnce(storage.db, 'sqlite', agents);
  });

  it('fails a pass with the error and its code, and a thread that dies mid-pass folds nothing twice', async () => {
    // A pass that fails in the thread: its error reaches the stage as it was.
    await sql`CREATE TRIGGER fold_boom BEFORE INSERT ON usage_monthly BEGIN SELECT RAISE(ABORT, 'boom'); END`.execute(
      storage.db,
    );
    // A new month of receipt, so that the pass inserts into usage_monthly.
    (org.clock as ManualClock).set(new Date('2026-12-02T12:00:00.000Z'));
    await track(1);
    const failed = await thread.run({ limit: 100 }).catch((e: unknown) => e);
    expect(failed).toMatchObject({ message: 'boom', code: 'SQLITE_CONSTRAINT_TRIGGER' });
    expect(isUnavailableError(failed)).toBe(false);
    await sql`DROP TRIGGER fold_boom`.execute(storage.db);

    // A pass that takes a while (a trigger counting to a few million), and the thread dies
    // during it: the pass fails, its transaction never commits, and the next pass (in a new
    // thread) folds the events once.
    await sql`CREATE TRIGGER fold_slow BEFORE INSERT ON usage_monthly BEGIN
      SELECT COUNT(*) FROM (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000000) SELECT i FROM n);
    END`.execute(storage.db);
    const slow = thread.run({ limit: 100 }).catch((e: unknown) => e);
    await new Promise((resolve) => setTimeout(resolve, 200));
    await thread.terminate();
    expect(await slow).toBeInstanceOf(Error);
    expect((await tailState(storage.db, 'sqlite')).events).toBe(1);
    await sql`DROP TRIGGER fold_slow`.execute(storage.db);
    expect((await thread.run({ limit: 100 })).folded).toBe(1);
    await expectFoldedOnce(storage.db, 'sqlite', agents);
  });
});
