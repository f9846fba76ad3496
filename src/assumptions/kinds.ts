import { BUILTIN_TASK_TYPES, findBuiltin } from '../catalogue/builtins.js';
import { isCategory } from '../catalogue/categories.js';
import { MICROS, toMicros } from '../money.js';
import { OUTCOMES, type Outcome } from '../orgs/organization-record.js';

/**
 * Every assumption that turns an event into figures. `key` names what it applies to: a built-in
 * task type (override), a custom type, a category, an outcome, or '' for the organisation.
 */
export const ASSUMPTION_KINDS = [
  'baseline_override',
  'custom_baseline',
  'fallback_baseline',
  'default_hourly_rate',
  'category_hourly_rate',
  'custom_hourly_rate',
  'outcome_credit',
] as const;
export type AssumptionKind = (typeof ASSUMPTION_KINDS)[number];

export function isAssumptionKind(value: string): value is AssumptionKind {
  return (ASSUMPTION_KINDS as readonly string[]).includes(value);
}

/** Kinds whose value may be null (unset: no override, no fallback, no rate of its own). */
export const NULLABLE_KINDS: ReadonlySet<AssumptionKind> = new Set([
  'baseline_override',
  'fallback_baseline',
  'category_hourly_rate',
  'custom_hourly_rate',
]);

/** What a kind's key names, for messages and validation. */
export type KeyOf = 'builtin' | 'custom' | 'category' | 'outcome' | 'none';
export const KEY_OF: Record<AssumptionKind, KeyOf> = {
  baseline_override: 'builtin',
  custom_baseline: 'custom',
  fallback_baseline: 'none',
  default_hourly_rate: 'none',
  category_hourly_rate: 'category',
  custom_hourly_rate: 'custom',
  outcome_credit: 'outcome',
};

export const isRateKind = (kind: AssumptionKind) =>
  kind === 'default_hourly_rate' || kind === 'category_hourly_rate' || kind === 'custom_hourly_rate';

/** The stored value (minutes; micro-units for rates and credits) of an API value. */
export function storedValue(kind: AssumptionKind, value: number | null): number | null {
  if (value === null) return null;
  return isRateKind(kind) || kind === 'outcome_credit' ? toMicros(value) : value;
}

/** The API value (minutes, currency units, a credit from 0 to 1) of a stored value. */
export function apiValue(kind: AssumptionKind, value: number | null): number | null {
  if (value === null) return null;
  return isRateKind(kind) || kind === 'outcome_credit' ? Number(value) / MICROS : Number(value);
}

/** Whether `key` can name something `kind` applies to (custom keys are checked against the store). */
export function keyFits(kind: AssumptionKind, key: string): boolean {
  switch (KEY_OF[kind]) {
    case 'builtin':
      return findBuiltin(key) !== undefined;
    case 'category':
      return isCategory(key);
    case 'outcome':
      return (OUTCOMES as readonly string[]).includes(key);
    case 'none':
      return key === '';
    case 'custom':
      return /^[a-z][a-z0-9_]{0,63}$/.test(key) && findBuiltin(key) === undefined;
  }
}

/** The built-in task types of a category. */
export function builtinKeysOf(category: string): string[] {
  return BUILTIN_TASK_TYPES.filter((b) => b.category === category).map((b) => b.key);
}

export type { Outcome };
