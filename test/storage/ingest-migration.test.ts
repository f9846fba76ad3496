import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import type { OrgCtx, ServiceCtx } from '../../src/context.js';
import { getUsage } from '../../src/billing/usage.js';
import { createOrganization, getOrganization } from '../../src/orgs/organizations.js';
import type { Dimension, ReportInput } from '../../src/reports/params.js';
import { buildReport } from '../../src/reports/report.js';
import { coarseThroughAt, rollupDeltas } from '../../src/reports/rollups.js';
import { readFoldState } from '../../src/storage/snapshot.js';
import { migrateToLatest, type Db, type Engine, type Storage } from '../../src/storage/db.js';
import type { EventRow } from '../../src/storage/schema.js';
import { trackEvent } from '../../src/tracking/track.js';
import { lcg } from '../reports/seed.js';
import { openBeforeMigration } from '../support/before-migration.js';
import { ENGINES } from '../support/engines.js';
import { foldOnCommit } from '../support/fold-inline.js';

const NOW = Date.parse('2026-11-20T12:00:00.000Z');
const DAY = 86_400_000;
const ORG = 'org_before_0010';
const FIRST_NEW = '2026_11_24_0010_ingest_watermark';

function openAtPreviousMigration(engine: Engine): Promise<Storage> {
  return openBeforeMigration(engine, FIRST_NEW);
}

/** Events as tracking wrote them before 0010, with their rollups, usage and webhook messages. */
async function seedOldData(db: Db): Promise<number> {
  const rand = lcg(5);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)] as T;
  const rows: Array<Omit<EventRow, 'ingest_seq'>> = Array.from({ length: 300 }, (_, i) => {
    const hours = Math.floor(rand() * 5e6);
    return {
      id: `evt_old_${String(i).padStart(5, '0')}`,
      org_id: ORG,
      agent_id: pick(['a', 'b', 'c']),
      task_type: pick(['support_ticket_reply', 'dev_bug_fix']),
      outcome: pick(['success', 'failure', 'needs_review']),
      client_id: pick(['k1', 'k2', null]),
      resolved_baseline_minutes: 10,
      resolved_baseline_source: 'builtin',
      resolved_hourly_rate_micros: 50_000_000,
      currency: 'EUR',
      agent_duration_seconds: null,
      hours_saved_micros: hours,
      cost_saved_micros: hours * 50,
      agent_cost_micros: rand() < 0.5 ? null : Math.floor(rand() * 1e6),
      resolved_cost_source: 'provided',
      model: null,
      tokens_in: null,
      tokens_out: null,
      metadata: null,
      audit_sample: null,
      pricing: null,
      occurred_at: NOW - Math.floor(rand() * 85 * DAY),
      received_at: NOW - Math.floor(rand() * 3 * DAY),
      idempotency_key: null,
    };
  });
  await db.transaction().execute(async (trx) => {
    await trx.insertInto('events').values(rows).execute();
    // As tracking kept them then: the rollups had no review sums before migration 0060.
    const deltas = rollupDeltas(rows as EventRow[]).map((delta) =>
      Object.fromEntries(
        Object.entries(delta).filter(([column]) => !/review_(hours|cost)_micros$/.test(column)),
      ),
    );
    for (let i = 0; i < deltas.length; i += 200)
      await trx
        .insertInto('report_rollups')
        .values(deltas.slice(i, i + 200) as never)
        .execute();
    await trx
      .insertInto('usage_monthly')
      .values([
        { org_id: ORG, month: '2026-11', shard: 0, events: 200 },
        { org_id: ORG, month: '2026-11', shard: 2, events: 100 },
      ])
      .execute();
    await trx
      .insertInto('webhooks')
      .values({
        id: 'wh_old',
        org_id: ORG,
        url: 'http://127.0.0.1:9/hook',
        description: null,
        event_types: JSON.stringify(['event.created']),
        secret: 'whsec_x',
        status: 'active',
        consecutive_failures: 0,
        digest_since: null,
        created_at: NOW,
        updated_at: NOW,
        deleted_at: null,
      })
      .execute();
    for (let i = 0; i < 5; i++) {
      await trx
        .insertInto('webhook_messages')
        .values({
          id: `whmsg_${i}`,
          org_id: ORG,
          type: 'event.created',
          payload: `{"n":${i}}`,
          created_at: NOW,
        })
        .execute();
      await trx
        .insertInto('webhook_deliveries')
        .values({
          id: `whdel_${i}`,
          org_id: ORG,
          webhook_id: 'wh_old',
          message_id: `whmsg_${i}`,
          event_type: 'event.created',
          status: 'pending',
          attempts: 0,
          next_attempt_at: NOW + i,
          locked_until: null,
          claimed_by: null,
          last_error: null,
          created_at: NOW,
          updated_at: NOW,
        })
        .execute();
    }
  });
  return rows.length;
}

async function snapshot(db: Db) {
  const all = async (table: string, order: string) =>
    (
      await sql<
        Record<string, unknown>
      >`SELECT * FROM ${sql.table(table)} ORDER BY ${sql.raw(order)}`.execute(db)
    ).rows;
  return {
    // Without the review sums migration 0060 adds later (0 on every row).
    rollups: (await all('report_rollups', 'org_id, grain, day, agent_id, task_type, client_key, shard')).map(
      (row) =>
        Object.fromEntries(
          Object.entries(row).filter(([column]) => !/review_(hours|cost)_micros$/.test(column)),
        ),
    ),
    usage: await all('usage_monthly', 'org_id, month, shard'),
    messages: await all('webhook_messages', 'id'),
    deliveries: await all('webhook_deliveries', 'id'),
    events: (await all('events', 'id')).map(({ ingest_seq: _, ...rest }) => rest),
  };
}

describe.each(ENGINES)('migration 0010 on a database with data (%s)', (engine) => {
  let storage: Storage;
  beforeAll(async () => {
    storage = await openAtPreviousMigration(engine);
  });
  afterAll(async () => storage.close());

  it('keeps events, rollups, usage and pending deliveries exactly; reports and usage are unchanged', async () => {
    const n = await seedOldData(storage.db);
    const before = await snapshot(storage.db);
    const migratedFrom = Date.now();
    expect(await migrateToLatest(storage.db)).toContain(FIRST_NEW);
    expect(await snapshot(storage.db)).toEqual(before);
    // 0013: the old code kept every week's and month's rows, so reports may read them all, up
    // to the current week (rollups.ts coarseThroughAt).
    const { coarseThrough } = await readFoldState(storage.db);
    expect(coarseThrough).toBeGreaterThanOrEqual(coarseThroughAt(migratedFrom));
    expect(coarseThrough).toBeLessThanOrEqual(coarseThroughAt(Date.now()));

    const clock = new ManualClock(new Date(NOW).toISOString());
    const config = loadConfig({ TALLY_LOG_LEVEL: 'silent' });
    const service: ServiceCtx = { db: storage.db, engine, clock, config, storage };
    const stopFolding = foldOnCommit(service);
    const created = await createOrganization({ ctx: service, input: { name: 'Old', plan: 'pro' } });
    const org = await getOrganization({ ctx: service, id: created.org.id });
    // The organisation whose data the old code wrote.
    const ctx: OrgCtx = { ...service, org: { ...org, id: ORG }, actorKeyId: null };
    const cases: Array<[Dimension[], ReportInput['period']]> = [
      [['agent'], '30d'],
      [['agent', 'client'], '90d'],
      [['agent', 'task_type', 'client'], '7d'],
      [['task_type', 'week'], '90d'],
      [['month'], 'all'],
    ];
    const reports = async () => {
      for (const [groupBy, period] of cases) {
        const input: ReportInput = { period, groupBy, sort: 'events', top: null, filters: { metadata: [] } };
        const served = await buildReport({ ctx, input });
        const raw = await buildReport({ ctx, input, options: { forceRaw: true } });
        expect(served.rows, `${groupBy.join(',')} ${period}`).toEqual(raw.rows);
        expect(served.rows.length).toBeGreaterThan(0);
      }
    };
    await reports();
    expect((await getUsage({ ctx })).lifetime_events).toBe(n);

    // A new event goes into the tail, then into the rollups, once; the old ones are not folded again.
    await trackEvent({
      ctx,
      idempotencyKey: null,
      input: { agent_id: 'a', task_type: 'dev_bug_fix', outcome: 'success' },
    });
    await reports();
    expect((await getUsage({ ctx })).lifetime_events).toBe(n + 1);
    const all = await sql<{ n: unknown }>`
      SELECT SUM(events) AS n FROM report_rollups WHERE org_id = ${ORG} AND grain = 'all'`.execute(
      storage.db,
    );
    expect(Number(all.rows[0]?.n)).toBe(n + 1);
    // The old pending deliveries are untouched; the new event has its own.
    const after = await snapshot(storage.db);
    const old = new Set(before.deliveries.map((d) => d.id));
    expect(after.deliveries.filter((d) => old.has(d.id))).toEqual(before.deliveries);
    expect(after.deliveries.filter((d) => !old.has(d.id))).toHaveLength(1);
    stopFolding();
  });
});
