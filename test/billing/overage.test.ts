import { describe, expect, it } from 'vitest';
import { graduatedChargeCents, projectMonthEvents, projectedOverageEur } from '../../src/billing/overage.js';
import { DEFAULT_PLANS } from '../../src/billing/plans.js';

const PRO = DEFAULT_PLANS.pro.overage_tiers;
const ENTERPRISE = DEFAULT_PLANS.enterprise.overage_tiers;

describe('graduated overage tiers', () => {
  it.each([
    [0, 0],
    [1, 0], // €0.0005 rounds to 0 cents
    [10, 1], // €0.005 rounds half up to 1 cent
    [399_999, 20_000], // €199.9995 → €200.00
    [400_000, 20_000],
    [400_001, 20_000], // + €0.0003
    [400_017, 20_001], // + €0.0051
    [1_900_000, 65_000], // 200 + 1,500,000 × 0.0003
    [1_900_001, 65_000], // + €0.00015
    [1_900_034, 65_001], // + €0.0051
    [2_000_000, 66_500], // + 100,000 × 0.00015
  ])('pro: %i overage events cost %i cents', (events, cents) => {
    expect(graduatedChargeCents(events, PRO)).toBe(cents);
  });

  it.each([
    [9_000_000, 180_000],
    [9_000_001, 180_000],
    [9_000_050, 180_001], // + €0.005
    [10_000_000, 190_000],
  ])('enterprise: %i overage events cost %i cents', (events, cents) => {
    expect(graduatedChargeCents(events, ENTERPRISE)).toBe(cents);
  });

  it('prices a single unbounded tier', () => {
    expect(graduatedChargeCents(1_000, [{ up_to: null, unit_price_eur: 0.01 }])).toBe(1_000);
  });
});

describe('projection to the end of the month', () => {
  it('counts elapsed time as at least 24 hours', () => {
    // November has 30 days: 6 hours in counts as one day → × 30.
    expect(projectMonthEvents(1_000, new Date('2026-11-01T06:00:00.000Z'))).toBe(30_000);
    expect(projectMonthEvents(1_000, new Date('2026-11-02T00:00:00.000Z'))).toBe(30_000);
    expect(projectMonthEvents(1_000, new Date('2026-11-16T00:00:00.000Z'))).toBe(2_000);
    expect(projectMonthEvents(0, new Date('2026-11-16T00:00:00.000Z'))).toBe(0);
  });

  it('stays exact where events × month length passes 2^53', () => {
    // Floating point gives 19,998,424,132: the product is rounded before the division.
    expect(projectMonthEvents(10_000_164_591, new Date('2026-11-16T00:02:03.457Z'))).toBe(19_998_424_131);
  });

  it('is null without a forecast overage or overage pricing', () => {
    const mid = new Date('2026-11-16T00:00:00.000Z'); // half of November
    expect(projectedOverageEur(DEFAULT_PLANS.pro, 50_000, mid)).toBeNull(); // exactly 100,000
    expect(projectedOverageEur(DEFAULT_PLANS.free, 9_000, mid)).toBeNull();
    expect(projectedOverageEur({ ...DEFAULT_PLANS.pro, overage_tiers: [] }, 90_000, mid)).toBeNull();
  });

  it('prices the projected overage at each tier boundary', () => {
    const mid = new Date('2026-11-16T00:00:00.000Z');
    // Projected = 2 × events; overage = projected − 100,000.
    expect(projectedOverageEur(DEFAULT_PLANS.pro, 50_001, mid)).toBe(0); // 2 overage events
    expect(projectedOverageEur(DEFAULT_PLANS.pro, 250_000, mid)).toBe(200); // 400,000
    expect(projectedOverageEur(DEFAULT_PLANS.pro, 1_000_000, mid)).toBe(650); // 1,900,000
    expect(projectedOverageEur(DEFAULT_PLANS.pro, 1_050_000, mid)).toBe(665); // 2,000,000
    expect(projectedOverageEur(DEFAULT_PLANS.enterprise, 5_000_000, mid)).toBe(1_800); // 9,000,000
  });
});
