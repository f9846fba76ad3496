import { AppError } from '../errors.js';

export const PLAN_NAMES = ['free', 'pro', 'enterprise'] as const;
export type PlanName = (typeof PLAN_NAMES)[number];

export interface OverageTier {
  /** Cumulative count of overage events this tier reaches; null = no upper bound. */
  up_to: number | null;
  unit_price_eur: number;
}

export interface Plan {
  track_rate_per_second: number;
  other_rate_per_second: number;
  included_events_per_month: number;
  hard_cap: boolean;
  overage_tiers: OverageTier[];
}

export type PlanTable = Record<PlanName, Plan>;

export const DEFAULT_PLANS: PlanTable = {
  free: {
    track_rate_per_second: 60,
    other_rate_per_second: 20,
    included_events_per_month: 10_000,
    hard_cap: true,
    overage_tiers: [],
  },
  pro: {
    track_rate_per_second: 200,
    other_rate_per_second: 50,
    included_events_per_month: 100_000,
    hard_cap: false,
    overage_tiers: [
      { up_to: 400_000, unit_price_eur: 0.0005 },
      { up_to: 1_900_000, unit_price_eur: 0.0003 },
      { up_to: null, unit_price_eur: 0.00015 },
    ],
  },
  enterprise: {
    track_rate_per_second: 1000,
    other_rate_per_second: 100,
    included_events_per_month: 1_000_000,
    hard_cap: false,
    overage_tiers: [
      { up_to: 9_000_000, unit_price_eur: 0.0002 },
      { up_to: null, unit_price_eur: 0.0001 },
    ],
  },
};

export function isPlanName(value: string): value is PlanName {
  return (PLAN_NAMES as readonly string[]).includes(value);
}

/** Which endpoints a plan may use stays in code: free < pro < enterprise. */
export function planAtLeast(plan: PlanName, needed: PlanName): boolean {
  return PLAN_NAMES.indexOf(plan) >= PLAN_NAMES.indexOf(needed);
}

export function requirePlan(plan: PlanName, needed: PlanName): void {
  if (!planAtLeast(plan, needed)) {
    const label = needed === 'pro' ? 'Pro' : 'Enterprise';
    throw new AppError(
      'plan_upgrade_required',
      `This endpoint needs the ${label} plan or above; the organisation is on the ${plan} plan.`,
    );
  }
}

function nonNegativeInteger(value: unknown, where: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new Error(`${where} must be a non-negative whole number`);
  }
  return value;
}

function parsePlan(value: unknown, name: string): Plan {
  if (typeof value !== 'object' || value === null) throw new Error(`plan "${name}" must be an object`);
  const p = value as Record<string, unknown>;
  if (typeof p.hard_cap !== 'boolean') throw new Error(`${name}.hard_cap must be true or false`);
  if (!Array.isArray(p.overage_tiers)) throw new Error(`${name}.overage_tiers must be an array`);
  let previous = 0;
  const tiers = p.overage_tiers.map((tier: unknown, i: number): OverageTier => {
    const where = `${name}.overage_tiers[${i}]`;
    if (typeof tier !== 'object' || tier === null) throw new Error(`${where} must be an object`);
    const t = tier as Record<string, unknown>;
    const upTo = t.up_to === null ? null : nonNegativeInteger(t.up_to, `${where}.up_to`);
    if (upTo !== null && upTo <= previous) throw new Error(`${where}.up_to must grow from tier to tier`);
    if (upTo === null && i !== (p.overage_tiers as unknown[]).length - 1) {
      throw new Error(`${where}.up_to may be null only on the last tier`);
    }
    if (typeof t.unit_price_eur !== 'number' || !(t.unit_price_eur >= 0)) {
      throw new Error(`${where}.unit_price_eur must be a non-negative number`);
    }
    previous = upTo ?? previous;
    return { up_to: upTo, unit_price_eur: t.unit_price_eur };
  });
  // A last tier that stops would price every overage event beyond it at nothing.
  const last = tiers.at(-1);
  if (last !== undefined && last.up_to !== null) {
    throw new Error(
      `${name}.overage_tiers[${tiers.length - 1}].up_to must be null: the last tier prices every overage event beyond the others`,
    );
  }
  return {
    track_rate_per_second: nonNegativeInteger(p.track_rate_per_second, `${name}.track_rate_per_second`),
    other_rate_per_second: nonNegativeInteger(p.other_rate_per_second, `${name}.other_rate_per_second`),
    included_events_per_month: nonNegativeInteger(
      p.included_events_per_month,
      `${name}.included_events_per_month`,
    ),
    hard_cap: p.hard_cap,
    overage_tiers: tiers,
  };
}

export function parsePlanTable(value: unknown): PlanTable {
  if (typeof value !== 'object' || value === null) throw new Error('the plan table must be a JSON object');
  const table = value as Record<string, unknown>;
  for (const key of Object.keys(table)) {
    if (!isPlanName(key)) throw new Error(`unknown plan "${key}" (expected free, pro, enterprise)`);
  }
  return {
    free: parsePlan(table.free, 'free'),
    pro: parsePlan(table.pro, 'pro'),
    enterprise: parsePlan(table.enterprise, 'enterprise'),
  };
}
