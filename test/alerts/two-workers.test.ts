import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evaluateAlerts } from '../../src/alerts/evaluate.js';
import { createBudget } from '../../src/budgets/budgets.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import type { OrgCtx, ServiceCtx } from '../../src/context.js';
import { createOrganization } from '../../src/orgs/organizations.js';
import { openStorage, type Storage } from '../../src/storage/db.js';
import { createTestStorage, ENGINES, type TestStorage } from '../support/engines.js';
import { foldOnCommit } from '../support/fold-inline.js';
import { seed } from '../reports/seed.js';
import { updatePlanningSettings } from '../../src/settings/planning-settings.js';

const ORGS = 3;
const THRESHOLDS = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100];

/**
 * Two schedulers on one database evaluating at once, round after round, while spend rises
 * through ten thresholds of several budgets: every alert is written once, with one message and
 * one e-mail, whoever wins. On PostgreSQL each has its own connections (two worker processes'
 * worth; test/alerts/processes.test.ts runs two real ones). SQLite has one writer: in one
 * process a second connection waiting for the lock would block the very thread that holds it,
 * so there the schedulers share the connection and interleave at every await.
 */
describe.each(ENGINES)('alerts from two schedulers on one database (%s)', (engine) => {
  let storage: TestStorage;
  let second: Storage;
  const clock = new ManualClock('2026-11-20T12:00:00.000Z');
  beforeAll(async () => {
    storage = await createTestStorage(engine);
    second =
      engine === 'sqlite' ? storage : openStorage(storage.url, { schema: storage.schema, poolSize: 5 });
  });
  afterAll(async () => {
    if (second !== storage) await second.close();
    await storage.destroy();
  });

  it('sends each threshold of each budget once', async () => {
    const config = loadConfig({ TALLY_LOG_LEVEL: 'silent' });
    const a: ServiceCtx = { db: storage.db, engine, clock, config, storage };
    const stopFolding = foldOnCommit(a);
    const b: ServiceCtx = { db: second.db, engine, clock, config, storage: second };
    const orgs: OrgCtx[] = [];
    for (let i = 0; i < ORGS; i++) {
      const { org } = await createOrganization({
        ctx: a,
        input: { name: `Org ${i}`, plan: 'enterprise', adminEmails: [`cfo${i}@acme.test`] },
      });
      const ctx: OrgCtx = { ...a, org, actorKeyId: null };
      await updatePlanningSettings({ ctx, patch: { alert_emails: [`cfo${i}@acme.test`] } });
      await createBudget({
        ctx,
        input: { name: 'agent', scope: 'agent', scope_value: 'bot', amount: 100, thresholds: THRESHOLDS },
      });
      await createBudget({ ctx, input: { name: 'all', scope: 'org', amount: 200, thresholds: THRESHOLDS } });
      orgs.push(ctx);
    }
    // Eleven rounds: 10 more of spend each, both schedulers evaluating at the same moment.
    for (let round = 0; round < 11; round++) {
      await Promise.all(
        orgs.map((ctx) =>
          seed(ctx, [
            {
              agent: 'bot',
              taskType: 'support_ticket_reply',
              outcome: 'success',
              client: null,
              occurredAt: Date.parse('2026-11-20T09:00:00Z') + round,
              agentCost: 10,
            },
          ]),
        ),
      );
      await Promise.all([evaluateAlerts({ ctx: a }), evaluateAlerts({ ctx: b }), evaluateAlerts({ ctx: a })]);
    }
    // Per organisation: the agent budget (100) crosses all ten thresholds, the whole-org one
    // (200) reaches 110 = 55 %: five; each forecasts past its amount once (the agent's 110 is
    // past 100; the org's month so far 110 and no complete day: forecast 110, below 200).
    const alerts = await storage.db
      .selectFrom('alerts')
      .select(['org_id', 'subject', 'kind', 'threshold', 'message_id'])
      .execute();
    const keys = alerts.map((x) => `${x.org_id} ${x.subject} ${x.kind} ${Number(x.threshold)}`);
    expect(new Set(keys).size).toBe(keys.length);
    const perOrg = (kind: string) => alerts.filter((x) => x.kind === kind).length / ORGS;
    expect(perOrg('threshold')).toBe(10 + 5);
    expect(perOrg('forecast')).toBe(1);
    const messages = await storage.db.selectFrom('webhook_messages').select(['id', 'type']).execute();
    expect(messages.map((m) => m.id).sort()).toEqual(alerts.map((x) => x.message_id).sort());
    const emails = await storage.db.selectFrom('emails').select(['to_address']).execute();
    expect(emails).toHaveLength(alerts.length);
    stopFolding();
  }, 120_000);
});
