import { describe, expect, it } from 'vitest';
import { DEFAULT_PLANS, parsePlanTable } from '../../src/billing/plans.js';
import { loadConfig } from '../../src/config.js';
import { tempFile } from '../support/temp.js';

const table = (proTiers: unknown) => ({
  ...DEFAULT_PLANS,
  pro: { ...DEFAULT_PLANS.pro, overage_tiers: proTiers },
});

describe('TALLY_PLANS_FILE plan table', () => {
  it('accepts the default table, and a plan without overage pricing', () => {
    expect(parsePlanTable(DEFAULT_PLANS)).toEqual(DEFAULT_PLANS);
    expect(parsePlanTable(table([])).pro.overage_tiers).toEqual([]);
  });

  it('rejects a last tier with a finite up_to: events beyond it would cost nothing', () => {
    const bounded = table([
      { up_to: 400_000, unit_price_eur: 0.0005 },
      { up_to: 1_900_000, unit_price_eur: 0.0003 },
    ]);
    expect(() => parsePlanTable(bounded)).toThrow(
      'pro.overage_tiers[1].up_to must be null: the last tier prices every overage event beyond the others',
    );
    const file = tempFile('tally-plans-', 'plans.json', JSON.stringify(bounded));
    expect(() => loadConfig({ TALLY_PLANS_FILE: file })).toThrow(
      /TALLY_PLANS_FILE.*overage_tiers\[1\]\.up_to must be null/,
    );
  });

  it('still rejects a null up_to before the last tier and negative counts', () => {
    expect(() =>
      parsePlanTable(
        table([
          { up_to: null, unit_price_eur: 1 },
          { up_to: null, unit_price_eur: 1 },
        ]),
      ),
    ).toThrow('pro.overage_tiers[0].up_to may be null only on the last tier');
    expect(() =>
      parsePlanTable({ ...DEFAULT_PLANS, free: { ...DEFAULT_PLANS.free, track_rate_per_second: -1 } }),
    ).toThrow('free.track_rate_per_second must be a non-negative whole number');
  });
});
