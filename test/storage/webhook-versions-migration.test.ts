import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest } from '../../src/storage/db.js';
import { recordFailedDelivery } from '../../src/webhooks/health.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, pausedStageOptions, type Harness } from '../support/harness.js';
import { foldAll } from '../fold/derived.js';

const NOW = Date.parse('2026-11-20T12:00:00.000Z');
const MIGRATION = '2026_11_27_0017_webhook_subscription_versions';

/**
 * Migration 0017 on a database with webhooks and events still in the tail, as the code before it
 * left them: a webhook that can receive gets an open version from the beginning, so the tail's
 * events go where they went before; a deactivated or deleted one gets none.
 */
describe.each(ENGINES)('migration 0017 on a database with webhooks (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, pausedStageOptions(NOW));
  });
  afterAll(async () => h.close());

  it('opens a version from the beginning for each webhook that can receive', async () => {
    const org = await h.createOrg({ plan: 'pro' });
    const subscribe = async () => {
      const res = await h.request({
        method: 'POST',
        url: '/v1/webhooks',
        apiKey: org.apiKey,
        payload: { url: 'https://hooks.example.com/tally', event_types: ['event.created'] },
      });
      expect(res.statusCode, res.body).toBe(201);
      return res.json().id as string;
    };
    const [live, failing, deactivated, deleted] = [
      await subscribe(),
      await subscribe(),
      await subscribe(),
      await subscribe(),
    ];
    await h.ctx.db.updateTable('webhooks').set({ status: 'failing' }).where('id', '=', failing).execute();
    await h.ctx.db
      .updateTable('webhooks')
      .set({ status: 'failing', consecutive_failures: 19 })
      .where('id', '=', deactivated)
      .execute();
    await h.ctx.db
      .transaction()
      .execute((trx) => recordFailedDelivery({ ...h.ctx, db: trx }, deactivated, h.clock.now()));
    await h.request({ method: 'DELETE', url: `/v1/webhooks/${deleted}`, apiKey: org.apiKey });
    const events: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await h.request({
        method: 'POST',
        url: '/v1/track',
        apiKey: org.apiKey,
        payload: { agent_id: 'a', task_type: 'support_ticket_reply', outcome: 'success' },
      });
      events.push(res.json().event_id);
    }
    // The database before 0017.
    await sql`DROP TABLE webhook_subscription_versions`.execute(h.ctx.db);
    await sql`DELETE FROM tally_migrations WHERE name = ${MIGRATION}`.execute(h.ctx.db);

    expect(await migrateToLatest(h.ctx.db)).toEqual([MIGRATION]);
    const versions = await h.ctx.db
      .selectFrom('webhook_subscription_versions')
      .select(['webhook_id', 'event_types', 'valid_from', 'valid_to'])
      .where('org_id', '=', org.id)
      .orderBy('webhook_id')
      .execute();
    expect(versions).toEqual(
      [live, failing].sort().map((id) => ({
        webhook_id: id,
        event_types: '["event.created"]',
        valid_from: null,
        valid_to: null,
      })),
    );

    await foldAll(h.ctx);
    for (const [id, expected] of [
      [live, events],
      [failing, events],
      [deactivated, []],
      [deleted, []],
    ] as const) {
      const { rows } = await sql<{ payload: string }>`
        SELECT m.payload FROM webhook_deliveries d JOIN webhook_messages m ON m.id = d.message_id
        WHERE d.webhook_id = ${id}`.execute(h.ctx.db);
      const ids = rows.map((r) => (JSON.parse(r.payload) as { event_id: string }).event_id).sort();
      expect(ids, id).toEqual([...expected].sort());
    }
  });
});
