import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadHistory } from '../../src/assumptions/history.js';
import { migrateToLatest, type Storage } from '../../src/storage/db.js';
import { openBeforeMigration } from '../support/before-migration.js';
import { ENGINES } from '../support/engines.js';

const MIGRATION = '2026_11_28_0065_assumption_versions';

describe.each(ENGINES)('migration 0065 (%s)', (engine) => {
  let storage: Storage;
  beforeAll(async () => {
    storage = await openBeforeMigration(engine, MIGRATION);
  });
  afterAll(async () => storage.close());

  it('makes every existing value its organisation’s first version, from the beginning', async () => {
    const db = storage.db;
    await db
      .insertInto('organizations')
      .values({
        id: 'org_1',
        name: 'Acme',
        plan: 'pro',
        currency: 'EUR',
        default_hourly_rate_micros: 60_000_000,
        category_hourly_rates: JSON.stringify({ legal: 120.5 }),
        outcome_credit: JSON.stringify({ success: 1, needs_review: 0.4, failure: 0 }),
        fallback_baseline_minutes: 7,
        usd_exchange_rate: null,
        admin_emails: '[]',
        created_at: 1_000,
      } as never)
      .execute();
    await db
      .insertInto('task_type_overrides')
      .values({
        org_id: 'org_1',
        task_key: 'dev_code_review',
        baseline_minutes_override: 44,
        reason: 'r',
        updated_at: 2_000,
      })
      .execute();
    await db
      .insertInto('custom_task_types')
      .values({
        org_id: 'org_1',
        key: 'kyc',
        display_name: 'KYC',
        category: 'legal',
        default_baseline_minutes: 35.5,
        baseline_source: null,
        hourly_rate_micros: 75_000_000,
        status: 'active',
        created_at: 3_000,
        archived_at: null,
      })
      .execute();
    expect(await migrateToLatest(db)).toContain(MIGRATION);
    const history = await loadHistory(db, 'org_1');
    expect(history.versions.map((v) => [v.revision, v.kind, v.key, v.value, v.effectiveFrom])).toEqual([
      [1, 'default_hourly_rate', '', 60_000_000, 0],
      [2, 'category_hourly_rate', 'legal', 120_500_000, 0],
      [3, 'outcome_credit', 'success', 1_000_000, 0],
      [4, 'outcome_credit', 'needs_review', 400_000, 0],
      [5, 'outcome_credit', 'failure', 0, 0],
      [6, 'fallback_baseline', '', 7, 0],
      [7, 'baseline_override', 'dev_code_review', 44, 0],
      [8, 'custom_baseline', 'kyc', 35.5, 0],
      [9, 'custom_hourly_rate', 'kyc', 75_000_000, 0],
    ]);
    const org = await db.selectFrom('organizations').select('assumptions_revision').executeTakeFirstOrThrow();
    expect(Number(org.assumptions_revision)).toBe(9);
  });
});
