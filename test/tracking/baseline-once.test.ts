import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AssumptionHistory, type AssumptionVersion } from '../../src/assumptions/history.js';
import type { AssumptionKind } from '../../src/assumptions/kinds.js';
import type { Organization, Outcome } from '../../src/orgs/organization-record.js';
import {
  resolveBaseline,
  resolveBaselineOnce,
  type CatalogueFacts,
  type CustomTypeFacts,
  type ResolvedMemo,
} from '../../src/tracking/baseline.js';

// A batch resolves each task type, outcome and request minutes once per stretch of time in which
// no assumption changes (resolveBaselineOnce): whatever the history and the order of the events,
// every event must get what resolving it alone gives.

const DAY = 86_400_000;
const T0 = Date.UTC(2026, 0, 1);

const org: Organization = {
  id: 'org_once',
  name: 'Once',
  plan: 'pro',
  currency: 'EUR',
  defaultHourlyRateMicros: 50_000_000,
  categoryHourlyRatesMicros: { support: 40_000_000 },
  outcomeCreditMicros: { success: 1_000_000, needs_review: 500_000, failure: 0 },
  fallbackBaselineMinutes: 7,
  usdExchangeRate: null,
  adminEmails: [],
  createdAt: new Date(T0),
  assumptionsRevision: 0,
};

const customs = new Map<string, CustomTypeFacts>([
  [
    'custom_audit',
    { default_baseline_minutes: 30, category: 'support', hourly_rate_micros: null, status: 'active' },
  ],
  [
    'custom_old',
    { default_baseline_minutes: 12, category: 'legal', hourly_rate_micros: 90_000_000, status: 'archived' },
  ],
]);

const SLOTS: Array<[AssumptionKind, string]> = [
  ['baseline_override', 'support_ticket_triage'],
  ['custom_baseline', 'custom_audit'],
  ['fallback_baseline', ''],
  ['default_hourly_rate', ''],
  ['category_hourly_rate', 'support'],
  ['custom_hourly_rate', 'custom_audit'],
  ['outcome_credit', 'needs_review'],
  ['outcome_credit', 'success'],
];
const TASK_TYPES = [
  'support_ticket_triage',
  'support_ticket_reply',
  'custom_audit',
  'custom_old',
  'unknown_kind',
];
const OUTCOME_LIST: Outcome[] = ['success', 'needs_review', 'failure'];

const versionArb = fc.record({
  slot: fc.integer({ min: 0, max: SLOTS.length - 1 }),
  day: fc.integer({ min: 0, max: 6 }),
  value: fc.option(fc.integer({ min: 1, max: 90 }), { nil: null }),
});

const eventArb = fc.record({
  taskType: fc.constantFrom(...TASK_TYPES),
  outcome: fc.constantFrom(...OUTCOME_LIST),
  requestMinutes: fc.option(fc.constantFrom(5, 45), { nil: null }),
  // Days and the instants around a change: just before, at, just after.
  at: fc
    .tuple(fc.integer({ min: -1, max: 7 }), fc.constantFrom(-1, 0, 1, DAY / 2))
    .map(([d, o]) => T0 + d * DAY + o),
});

function historyOf(drafts: Array<{ slot: number; day: number; value: number | null }>): AssumptionHistory {
  const versions: AssumptionVersion[] = drafts.map((d, i) => {
    const [kind, key] = SLOTS[d.slot] as [AssumptionKind, string];
    // Rates and credits in micro-units, baselines in minutes; a credit or a default rate is never null.
    const scaled = kind.endsWith('hourly_rate')
      ? (d.value ?? 0) * 1_000_000
      : kind === 'outcome_credit'
        ? (d.value ?? 50) * 10_000
        : d.value;
    return {
      id: `asv_${i}`,
      revision: i + 1,
      kind,
      key,
      value: kind === 'default_hourly_rate' && scaled === 0 ? 1_000_000 : scaled,
      effectiveFrom: T0 + d.day * DAY,
      recordedAt: T0,
      actorKeyId: null,
      reason: null,
      restatementId: null,
    };
  });
  return new AssumptionHistory(org.id, versions.length, versions);
}

type Ev = { taskType: string; outcome: Outcome; requestMinutes: number | null; at: number };

/** What resolving alone gives: the baseline, or the refusal's code. */
function alone(history: AssumptionHistory, e: Ev) {
  try {
    return resolveBaseline(org, { history, customs }, e.taskType, e.outcome, e.requestMinutes, e.at);
  } catch (error) {
    return { refused: (error as { code?: string }).code };
  }
}

describe('resolving a batch once per combination (pure)', () => {
  it('gives every event what resolving it alone gives, for any history and order', () => {
    fc.assert(
      fc.property(
        fc.array(versionArb, { maxLength: 8 }),
        fc.array(eventArb, { minLength: 1, maxLength: 40 }),
        (drafts, events) => {
          const history = historyOf(drafts);
          const facts: CatalogueFacts = { history, customs };
          const memo: ResolvedMemo = new Map();
          for (const e of events) {
            let once: unknown;
            try {
              once = resolveBaselineOnce(memo, org, facts, e.taskType, e.outcome, e.requestMinutes, e.at);
            } catch (error) {
              once = { refused: (error as { code?: string }).code };
            }
            expect(once).toEqual(alone(history, e));
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('gives an event at the instant of a change the new version, and one a millisecond before the old', () => {
    const history = historyOf([
      { slot: 0, day: 0, value: 10 },
      { slot: 0, day: 3, value: 20 },
    ]);
    const facts: CatalogueFacts = { history, customs };
    const memo: ResolvedMemo = new Map();
    const resolve = (at: number) =>
      resolveBaselineOnce(memo, org, facts, 'support_ticket_triage', 'success', null, at);
    expect(resolve(T0 + 3 * DAY - 1)).toMatchObject({ minutes: 10, versions: { baseline: 'asv_0' } });
    expect(resolve(T0 + 3 * DAY)).toMatchObject({ minutes: 20, versions: { baseline: 'asv_1' } });
    expect(resolve(T0 + 3 * DAY - 2)).toMatchObject({ minutes: 10, versions: { baseline: 'asv_0' } });
    expect(resolve(T0 - 1)).toMatchObject({ minutes: 4, source: 'builtin', versions: { baseline: null } });
  });

  it('resolves again for a request that read other settings of the organisation', () => {
    const history = historyOf([]);
    const facts: CatalogueFacts = { history, customs };
    const memo: ResolvedMemo = new Map();
    const first = resolveBaselineOnce(memo, org, facts, 'support_ticket_reply', 'success', null, T0);
    const changed = { ...org, defaultHourlyRateMicros: 70_000_000, categoryHourlyRatesMicros: {} };
    const second = resolveBaselineOnce(memo, changed, facts, 'support_ticket_reply', 'success', null, T0);
    expect(first.hourlyRateMicros).toBe(40_000_000);
    expect(second.hourlyRateMicros).toBe(70_000_000);
  });
});
