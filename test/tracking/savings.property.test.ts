import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { computeSavings } from '../../src/tracking/savings.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';

/**
 * An independent reference: values as exact fractions of BigInts, rounded half up once per
 * quantity, as DESIGN §4 and §2 describe (hours and money in micro-units).
 */
function roundHalfUp(numerator: bigint, denominator: bigint): bigint {
  return (2n * numerator + denominator) / (2n * denominator);
}
/** A decimal with at most 6 places, as an exact count of millionths. */
const millionths = (text: string): bigint => {
  const [whole = '0', fraction = ''] = text.split('.');
  return BigInt(whole) * 1_000_000n + BigInt(fraction.padEnd(6, '0').slice(0, 6));
};
function reference(baseline: string, credit: string, rate: string, agentCost: string | null) {
  const hours = roundHalfUp(millionths(baseline) * millionths(credit), 60n * 1_000_000n);
  const cost = roundHalfUp(hours * millionths(rate), 1_000_000n);
  const agent = agentCost === null ? 0n : millionths(agentCost);
  return { hours: Number(hours), cost: Number(cost), net: Number(cost - agent) };
}

/** Decimal strings with up to `places` decimals between 0 and max. */
const decimal = (max: number, places: number, min = 0) =>
  fc
    .integer({ min: Math.round(min * 10 ** places), max: max * 10 ** places })
    .map((n) => (n / 10 ** places).toFixed(places));

describe('savings arithmetic (pure)', () => {
  it('matches the exact reference for any baseline, credit, rate and agent cost', () => {
    fc.assert(
      fc.property(
        decimal(525_600, 3, 0.001),
        decimal(1, 4),
        decimal(100_000, 2),
        fc.option(decimal(100_000, 6), { nil: null }),
        (baseline, credit, rate, agentCost) => {
          const got = computeSavings({
            baselineMinutes: Number(baseline),
            creditMicros: Number(millionths(credit)),
            hourlyRateMicros: Number(millionths(rate)),
            agentCostMicros: agentCost === null ? null : Number(millionths(agentCost)),
          });
          const want = reference(baseline, credit, rate, agentCost);
          expect(got).toEqual({
            hoursSavedMicros: want.hours,
            costSavedMicros: want.cost,
            netSavedMicros: want.net,
          });
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe.each(ENGINES)('savings arithmetic through POST /v1/track (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine);
  });
  afterAll(async () => h.close());

  it('returns values with at most 6 decimals where net_saved = cost_saved − agent_cost exactly', async () => {
    await fc.assert(
      fc.asyncProperty(
        decimal(10_000, 3, 0.001),
        fc.constantFrom('success', 'needs_review', 'failure'),
        fc.option(decimal(1000, 6), { nil: null }),
        async (baseline, outcome, agentCost) => {
          const res = await h.request({
            method: 'POST',
            url: '/v1/track',
            payload: {
              agent_id: 'prop',
              task_type: 'anything',
              outcome,
              human_baseline_minutes: Number(baseline),
              ...(agentCost === null ? {} : { agent_cost: Number(agentCost) }),
            },
          });
          expect(res.statusCode).toBe(201);
          const body = res.json();
          const credit = { success: '1', needs_review: '0.5', failure: '0' }[outcome];
          const want = reference(baseline, credit, '50', agentCost);
          for (const field of ['hours_saved', 'cost_saved', 'net_saved']) {
            const text = String(body[field]);
            expect(text.split('.')[1]?.length ?? 0).toBeLessThanOrEqual(6);
          }
          expect(millionths(String(Math.abs(body.hours_saved)))).toBe(BigInt(want.hours));
          expect(Math.round(body.cost_saved * 1e6)).toBe(want.cost);
          expect(Math.round(body.net_saved * 1e6)).toBe(want.net);
          const agentMicros = body.agent_cost === null ? 0 : Math.round(body.agent_cost * 1e6);
          expect(Math.round(body.net_saved * 1e6)).toBe(Math.round(body.cost_saved * 1e6) - agentMicros);
          expect(body.resolved_cost_source).toBe(agentCost === null ? 'none' : 'provided');
        },
      ),
      { numRuns: 60 },
    );
  });
});
