import { CompiledQuery, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import type { OrgCtx, ServiceCtx } from '../../src/context.js';
import { createOrganization, getOrganization } from '../../src/orgs/organizations.js';
import type { ReportInput } from '../../src/reports/params.js';
import { buildReport } from '../../src/reports/report.js';
import { LAST_RESULT, readDb } from '../../src/storage/db.js';
import { inSnapshot, readFoldState } from '../../src/storage/snapshot.js';
import { foldOnce } from '../../src/fold/pass.js';
import { tailState } from '../../src/fold/tail.js';
import { trackEvent } from '../../src/tracking/track.js';
import { createTestStorage, ENGINES, type TestStorage } from '../support/engines.js';
import { settled, TIMED_OUT } from '../support/settled.js';
import { tempFile } from '../support/temp.js';

/**
 * Reports, usage and the tail read in one snapshot (inSnapshot). On a SQLite file they read on a
 * connection of their own, so that a report does not wait for a track batch or a folding pass
 * holding the write connection (DESIGN §11); on PostgreSQL the pool gives them another.
 */
const BY_AGENT: ReportInput = {
  period: '24h',
  groupBy: ['agent'],
  sort: 'events',
  top: null,
  filters: { metadata: [] },
};

describe.each(ENGINES)('snapshot reads beside the writes (%s)', (engine) => {
  let storage: TestStorage;
  let ctx: ServiceCtx;
  let org: OrgCtx;

  beforeAll(async () => {
    storage = await createTestStorage(
      engine,
      engine === 'sqlite' ? { file: tempFile('tally-reader-', 'db.sqlite') } : {},
    );
    const config = loadConfig({ TALLY_LOG_LEVEL: 'silent' });
    ctx = { db: storage.db, engine, clock: new ManualClock('2026-11-20T12:00:00.000Z'), config, storage };
    const created = await createOrganization({ ctx, input: { name: 'Reader', plan: 'enterprise' } });
    org = { ...ctx, org: await getOrganization({ ctx, id: created.org.id }), actorKeyId: null };
    for (const agent of ['a', 'b', 'b']) {
      await trackEvent({
        ctx: org,
        idempotencyKey: null,
        input: { agent_id: agent, task_type: 'support_ticket_reply', outcome: 'success' },
      });
    }
  });
  afterAll(async () => {
    await storage.destroy();
  });

  it('a report answers while a transaction holds the write connection, with the committed events only', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const writer = ctx.db.transaction().execute(async (trx) => {
      // Takes SQLite's write lock, and writes an event nobody may see before the commit.
      await sql`UPDATE fold_state SET folded_at = folded_at WHERE id = 1`.execute(trx);
      await trx
        .insertInto('events')
        .values({
          ...(await trx
            .selectFrom('events')
            .selectAll()
            .where('org_id', '=', org.org.id)
            .executeTakeFirstOrThrow()),
          id: 'evt_uncommitted',
          agent_id: 'c',
        })
        .execute();
      entered();
      await held;
    });
    await inside;
    try {
      const report = await settled(buildReport({ ctx: org, input: BY_AGENT }));
      expect(report).not.toBe(TIMED_OUT);
      if (report === TIMED_OUT) return;
      expect(report.rows.map((r) => [r.group.agent_id, r.events])).toEqual([
        ['b', 2],
        ['a', 1],
      ]);
      const tail = await settled(tailState(readDb(ctx), engine));
      expect(tail).toMatchObject({ events: 3 });
    } finally {
      release();
      await writer;
    }
    // Committed now: the next snapshot sees it (read-your-writes).
    const after = await buildReport({ ctx: org, input: BY_AGENT });
    expect(after.rows.map((r) => [r.group.agent_id, r.events])).toEqual([
      ['b', 2],
      ['a', 1],
      ['c', 1],
    ]);
    await ctx.db.deleteFrom('events').where('id', '=', 'evt_uncommitted').execute();
  });

  it('one snapshot: a folding pass committed during a read is not seen by that read', async () => {
    const seen = await inSnapshot(readDb(ctx), engine, async (db) => {
      const before = {
        watermark: String((await readFoldState(db)).watermark),
        tail: (await tailState(db, engine)).events,
      };
      // The pass commits on the write connection while this snapshot is open. On PostgreSQL a
      // pass folds only below the oldest running transaction id, cluster-wide: another test
      // file's transaction can hold the events back a moment.
      let pass = await foldOnce(ctx);
      for (let i = 0; pass.folded === 0 && i < 1000; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        pass = await foldOnce(ctx);
      }
      expect(pass.folded).toBe(3);
      const during = {
        watermark: String((await readFoldState(db)).watermark),
        tail: (await tailState(db, engine)).events,
      };
      return { before, during };
    });
    expect(seen.during).toEqual(seen.before);
    expect(seen.before.tail).toBe(3);
    // A snapshot taken after the pass sees it, and the report is the same from the rollups.
    expect((await tailState(readDb(ctx), engine)).events).toBe(0);
    const report = await buildReport({ ctx: org, input: BY_AGENT });
    expect(report.rows.map((r) => [r.group.agent_id, r.events])).toEqual([
      ['b', 2],
      ['a', 1],
    ]);
  });

  it('hands its function the folding state of its own snapshot, before and after a pass', async () => {
    const read = () => inSnapshot(readDb(ctx), engine, async (_db, fold) => fold);
    const before = await read();
    expect(before).toEqual(await readFoldState(ctx.db));
    await trackEvent({
      ctx: org,
      idempotencyKey: null,
      input: { agent_id: 'd', task_type: 'support_ticket_reply', outcome: 'success' },
    });
    let pass = await foldOnce(ctx);
    for (let i = 0; pass.folded === 0 && i < 1000; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      pass = await foldOnce(ctx);
    }
    expect(pass.folded).toBe(1);
    const after = await read();
    expect(String(after.watermark)).not.toBe(String(before.watermark));
    expect(after).toEqual(await readFoldState(ctx.db));
    await ctx.db.deleteFrom('events').where('agent_id', '=', 'd').execute();
  });

  it('is a read-only snapshot transaction, serial when asked (PostgreSQL settings)', async () => {
    const settings = (serial: boolean) =>
      inSnapshot(
        readDb(ctx),
        engine,
        async (db): Promise<Record<string, unknown>> => {
          if (engine === 'sqlite') return { transaction: db.isTransaction };
          const { rows } = await sql<{ isolation: string; readOnly: string; workers: string }>`
            SELECT current_setting('transaction_isolation') AS isolation,
                   current_setting('transaction_read_only') AS "readOnly",
                   current_setting('max_parallel_workers_per_gather') AS workers`.execute(db);
          return { ...rows[0] };
        },
        { serial },
      );
    if (engine === 'sqlite') {
      expect(await settings(true)).toEqual({ transaction: true });
      return;
    }
    const serial = await settings(true);
    expect(serial).toEqual({ isolation: 'repeatable read', readOnly: 'on', workers: '0' });
    const parallel = await settings(false);
    expect(parallel).toMatchObject({ isolation: 'repeatable read', readOnly: 'on' });
    expect(parallel?.workers).not.toBe('0');
    // The setting was the transaction's own: the connection is back to its default.
    const { rows } = await sql<{ workers: string }>`
      SELECT current_setting('max_parallel_workers_per_gather') AS workers`.execute(ctx.db);
    expect(rows[0]?.workers).toBe(parallel?.workers);
  });

  it('a snapshot that fails answers its error and leaves no connection inside it', async () => {
    await expect(
      inSnapshot(readDb(ctx), engine, async (db) => {
        await sql`SELECT no_such_column FROM fold_state`.execute(db);
      }),
    ).rejects.toThrow(/no_such_column|no such column/);
    await expect(
      inSnapshot(readDb(ctx), engine, async () => {
        throw new Error('given up');
      }),
    ).rejects.toThrow('given up');
    // Every connection of the pool (5 in tests) is taken again: none is left in a transaction
    // (PostgreSQL would refuse the next statement on an aborted one).
    const reads = await Promise.all(
      Array.from({ length: 12 }, () =>
        inSnapshot(readDb(ctx), engine, async (_db, fold) => String(fold.watermark)),
      ),
    );
    expect(new Set(reads).size).toBe(1);
    const { rows } = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM events`.execute(ctx.db);
    expect(Number(rows[0]?.n)).toBeGreaterThan(0);
  });

  it('several statements in one round trip answer the last one (PostgreSQL)', async () => {
    if (engine === 'sqlite') {
      // SQLite prepares one statement at a time: LAST_RESULT is PostgreSQL's only.
      await expect(
        ctx.db.executeQuery(CompiledQuery.raw(`${LAST_RESULT}SELECT 1; SELECT 2`)),
      ).rejects.toThrow();
      return;
    }
    const { rows } = await ctx.db.executeQuery(
      CompiledQuery.raw(`${LAST_RESULT}SELECT 1 AS first; SELECT 2 AS last, 'x' AS text`),
    );
    expect(rows).toEqual([{ last: 2, text: 'x' }]);
  });

  it('other transactions keep their savepoints (through the PostgreSQL snapshot driver)', async () => {
    const name = () =>
      ctx.db
        .selectFrom('organizations')
        .select('name')
        .where('id', '=', org.org.id)
        .executeTakeFirstOrThrow();
    const before = (await name()).name;
    const trx = await ctx.db.startTransaction().execute();
    const saved = await trx.savepoint('before_rename').execute();
    await saved.updateTable('organizations').set({ name: 'Renamed' }).where('id', '=', org.org.id).execute();
    const back = await saved.rollbackToSavepoint('before_rename').execute();
    const inside = await back
      .selectFrom('organizations')
      .select('name')
      .where('id', '=', org.org.id)
      .executeTakeFirstOrThrow();
    expect(inside.name).toBe(before);
    await back
      .updateTable('organizations')
      .set({ name: `${before}!` })
      .where('id', '=', org.org.id)
      .execute();
    await back
      .releaseSavepoint('before_rename')
      .execute()
      .then((t) => t.commit().execute());
    expect((await name()).name).toBe(`${before}!`);
    await ctx.db.updateTable('organizations').set({ name: before }).where('id', '=', org.org.id).execute();
  });

  it('a snapshot cannot write', async () => {
    await expect(
      inSnapshot(readDb(ctx), engine, (db) =>
        sql`UPDATE fold_state SET folded_at = folded_at WHERE id = 1`.execute(db),
      ),
    ).rejects.toThrow();
  });
});
