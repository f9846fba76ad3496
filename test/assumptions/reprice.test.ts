import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AssumptionHistory, type AssumptionVersion } from '../../src/assumptions/history.js';
import { recordVersion } from '../../src/assumptions/record.js';
import { reprice, type Assumptions } from '../../src/assumptions/reprice.js';
import { getOrganization } from '../../src/orgs/organizations.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { unlimited } from '../reports/unlimited.js';

const OCT = Date.parse('2026-10-01T00:00:00Z');
const NOV = Date.parse('2026-11-01T00:00:00Z');
let n = 0;
const v = (
  kind: AssumptionVersion['kind'],
  key: string,
  value: number | null,
  effectiveFrom: number,
): AssumptionVersion => ({
  id: `asv_${++n}`,
  revision: n,
  kind,
  key,
  value,
  effectiveFrom,
  recordedAt: 0,
  actorKeyId: null,
  reason: null,
  restatementId: null,
});

describe('reprice, a pure function of an event and a history', () => {
  const org = {
    id: 'org_x',
    defaultHourlyRateMicros: 50_000_000,
    categoryHourlyRatesMicros: {},
    outcomeCreditMicros: { success: 1_000_000, needs_review: 500_000, failure: 0 },
    fallbackBaselineMinutes: null,
  } as unknown as Assumptions['org'];
  const history = new AssumptionHistory('org_x', 0, [
    v('default_hourly_rate', '', 50_000_000, 0),
    v('default_hourly_rate', '', 60_000_000, NOV),
    v('category_hourly_rate', 'dev', 90_000_000, NOV),
    v('baseline_override', 'dev_code_review', 45, OCT),
    v('baseline_override', 'dev_code_review', null, NOV),
    v('custom_baseline', 'kyc', 20, 0),
    v('custom_baseline', 'kyc', 25, NOV),
    // Two versions with one date: the one recorded last applies.
    v('outcome_credit', 'needs_review', 250_000, NOV),
    v('outcome_credit', 'needs_review', 400_000, NOV),
  ]);
  const a: Assumptions = {
    org,
    history,
    customs: new Map([
      [
        'kyc',
        { default_baseline_minutes: 20, category: 'legal', hourly_rate_micros: null, status: 'archived' },
      ],
    ]),
  };
  const event = (taskType: string, source: string, minutes: number, at: string, outcome = 'success') => ({
    task_type: taskType,
    outcome,
    occurred_at: Date.parse(at),
    resolved_baseline_minutes: minutes,
    resolved_baseline_source: source,
    agent_cost_micros: 1_000_000,
  });

  it('takes each layer’s value in force at occurred_at', () => {
    expect(reprice(event('dev_code_review', 'builtin', 30, '2026-10-10T00:00:00Z'), a)).toMatchObject({
      resolved_baseline_minutes: 45,
      resolved_baseline_source: 'override',
      resolved_hourly_rate_micros: 50_000_000,
      hours_saved_micros: 750_000,
      cost_saved_micros: 37_500_000,
      net_saved_micros: 36_500_000,
    });
    // Removed from November on: back to the built-in default, at the dev rate of November.
    expect(reprice(event('dev_code_review', 'override', 45, '2026-11-02T00:00:00Z'), a)).toMatchObject({
      resolved_baseline_minutes: 30,
      resolved_baseline_source: 'builtin',
      resolved_hourly_rate_micros: 90_000_000,
      versions: { baseline: null },
    });
    // Before any override: the default.
    expect(
      reprice(event('dev_code_review', 'builtin', 30, '2026-09-30T23:59:59Z'), a).resolved_baseline_minutes,
    ).toBe(30);
  });

  it('keeps a request’s baseline, a custom type’s layer even archived, and a fallback without one', () => {
    const req = reprice(event('dev_code_review', 'request', 7, '2026-10-10T00:00:00Z', 'needs_review'), a);
    expect(req).toMatchObject({
      resolved_baseline_minutes: 7,
      resolved_baseline_source: 'request',
      credit_micros: 500_000,
    });
    const nov = reprice(event('dev_code_review', 'request', 7, '2026-11-10T00:00:00Z', 'needs_review'), a);
    expect(nov.credit_micros).toBe(400_000);
    expect(reprice(event('kyc', 'custom', 20, '2026-11-10T00:00:00Z'), a)).toMatchObject({
      resolved_baseline_minutes: 25,
      resolved_baseline_source: 'custom',
      resolved_hourly_rate_micros: 60_000_000,
    });
    expect(reprice(event('mystery', 'fallback', 12, '2026-11-10T00:00:00Z'), a)).toMatchObject({
      resolved_baseline_minutes: 12,
      resolved_baseline_source: 'fallback',
      resolved_hourly_rate_micros: 60_000_000,
    });
  });
});

describe.each(ENGINES)('the history kept per process (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, { now: '2026-11-20T12:00:00.000Z', rateLimiter: unlimited });
  });
  afterAll(async () => h.close());

  it('is read again when another instance changes it (the revision comes with the API key)', async () => {
    const track = async () =>
      (
        await h.request({
          method: 'POST',
          url: '/v1/track',
          payload: { agent_id: 'a', task_type: 'dev_code_review', outcome: 'success' },
        })
      ).json();
    expect((await track()).resolved_hourly_rate).toBe(50);
    // Another instance's change: written to the database only, not through this process's routes.
    const org = await getOrganization({ ctx: h.ctx, id: h.org.id });
    await h.storage.db.transaction().execute((trx) =>
      recordVersion(
        { ...h.ctx, db: trx, org, actorKeyId: null },
        {
          kind: 'default_hourly_rate',
          key: '',
          value: 70_000_000,
          effectiveFrom: Date.parse('2026-11-20T00:00:00Z'),
        },
      ),
    );
    expect((await track()).resolved_hourly_rate).toBe(70);
  });
});
