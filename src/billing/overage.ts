import { mulDivRound } from '../money.js';
import { DAY_MS } from '../reports/rollups.js';
import type { Plan, OverageTier } from './plans.js';

const NANOS_PER_EUR = 1_000_000_000n;
const NANOS_PER_CENT = 10_000_000n;

/**
 * The graduated charge for `overageEvents` events past the included ones, in whole cents: each
 * tier prices the events between the previous tier's `up_to` and its own (cumulative counts).
 * Exact: unit prices become integer nano-euros and the sum is rounded to cents once, half up.
 */
export function graduatedChargeCents(overageEvents: number, tiers: readonly OverageTier[]): number {
  let nanos = 0n;
  let floor = 0;
  for (const tier of tiers) {
    const ceiling = tier.up_to ?? Number.POSITIVE_INFINITY;
    const inTier = Math.min(overageEvents, ceiling) - floor;
    if (inTier <= 0) break;
    nanos += BigInt(inTier) * BigInt(Math.round(tier.unit_price_eur * Number(NANOS_PER_EUR)));
    floor = ceiling;
  }
  return Number((nanos + NANOS_PER_CENT / 2n) / NANOS_PER_CENT);
}

/** Start and end (exclusive) of the UTC calendar month of `now`. */
export function monthBounds(now: Date): { start: number; end: number } {
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  return { start: Date.UTC(y, m, 1), end: Date.UTC(y, m + 1, 1) };
}

/** The month's events projected linearly to its end; elapsed time counts as at least 24 h. */
export function projectMonthEvents(eventsSoFar: number, now: Date): number {
  const { start, end } = monthBounds(now);
  const elapsed = Math.max(now.getTime() - start, DAY_MS);
  // Exact: events × month length passes 2^53 beyond a few million events.
  return mulDivRound(eventsSoFar, end - start, elapsed);
}

/** DESIGN §6: EUR charge of the projected overage, or null when none is forecast or priced. */
export function projectedOverageEur(plan: Plan, eventsSoFar: number, now: Date): number | null {
  if (plan.hard_cap || plan.overage_tiers.length === 0) return null;
  const overage = projectMonthEvents(eventsSoFar, now) - plan.included_events_per_month;
  if (overage <= 0) return null;
  return graduatedChargeCents(overage, plan.overage_tiers) / 100;
}
