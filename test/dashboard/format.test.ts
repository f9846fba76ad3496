import { describe, expect, it } from 'vitest';
import { compact, hours, money, moneyCompact } from '../../src/dashboard/format.js';

// Figures may go below zero (a review that took longer than doing the work by hand): a negative
// figure keeps its sign, and one that rounds to zero shows none.
describe('dashboard number formats (pure)', () => {
  it('shows a negative figure with its sign and one that rounds to zero without', () => {
    expect(hours(-0.04)).toBe('0.0');
    expect(hours(-0.05)).toBe('-0.1');
    expect(hours(-1234.56)).toBe('-1,234.6');
    expect(hours(0)).toBe('0.0');
    expect(money(-0.004, 'EUR')).toBe('€0.00');
    expect(money(-12.5, 'EUR')).toBe('-€12.50');
    expect(money(1234.5, 'USD')).toBe('$1,234.50');
    expect(compact(-0)).toBe('0');
    expect(compact(-12_500)).toBe('-12.5K');
    expect(moneyCompact(-1250, 'EUR')).toBe('-€1.25K');
  });
});
