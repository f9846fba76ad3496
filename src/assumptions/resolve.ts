import { findBuiltin } from '../catalogue/builtins.js';
import type { Organization, Outcome } from '../orgs/organization-record.js';
import type { AssumptionHistory } from './history.js';
import type { AssumptionKind } from './kinds.js';

export type BaselineSource = 'request' | 'override' | 'custom' | 'builtin' | 'fallback';

/** What pricing needs of a custom type besides its versioned baseline and rate. */
export interface CustomTypeFacts {
  default_baseline_minutes: number;
  category: string;
  hourly_rate_micros: number | null;
  status: string;
}

/** The versions that priced an event, stored with it (null: a value no version holds). */
export interface VersionIds {
  baseline: string | null;
  hourly_rate: string | null;
  outcome_credit: string | null;
}

export interface Valued {
  value: number | null;
  id: string | null;
}

/**
 * The value of (`kind`, `key`) in force at `at`: its version's, or, for an assumption never
 * changed since the history began, the value of today's columns (`current`).
 */
export function valueAt(
  history: AssumptionHistory,
  kind: AssumptionKind,
  key: string,
  at: number,
  current: number | null,
): Valued {
  const version = history.at(kind, key, at);
  if (version) return { value: version.value, id: version.id };
  // Versions exist but none applies yet: the assumption was unset before its first version.
  if (history.has(kind, key)) return { value: null, id: null };
  return { value: current, id: null };
}

/**
 * The hourly rate of a task type at `at` (DESIGN §4): the custom type's own rate, then the
 * organisation's rate for the category, then its default rate.
 */
export function rateAt(
  org: Organization,
  history: AssumptionHistory,
  taskType: string,
  custom: CustomTypeFacts | undefined,
  at: number,
): Valued & { value: number } {
  if (custom) {
    const own = valueAt(history, 'custom_hourly_rate', taskType, at, custom.hourly_rate_micros);
    if (own.value !== null) return { value: own.value, id: own.id };
  }
  const category = findBuiltin(taskType)?.category ?? custom?.category;
  if (category !== undefined) {
    const rate = valueAt(
      history,
      'category_hourly_rate',
      category,
      at,
      org.categoryHourlyRatesMicros[category] ?? null,
    );
    if (rate.value !== null) return { value: rate.value, id: rate.id };
  }
  return defaultRateAt(org, history, at);
}

export function defaultRateAt(org: Organization, history: AssumptionHistory, at: number) {
  const rate = valueAt(history, 'default_hourly_rate', '', at, org.defaultHourlyRateMicros);
  return { value: rate.value ?? org.defaultHourlyRateMicros, id: rate.id };
}

export function creditAt(org: Organization, history: AssumptionHistory, outcome: Outcome, at: number) {
  const credit = valueAt(history, 'outcome_credit', outcome, at, org.outcomeCreditMicros[outcome]);
  return { value: credit.value ?? org.outcomeCreditMicros[outcome], id: credit.id };
}

/** A built-in type's baseline at `at`: its override in force, else the built-in default. */
export function builtinBaselineAt(
  history: AssumptionHistory,
  key: string,
  defaultMinutes: number,
  at: number,
) {
  const override = valueAt(history, 'baseline_override', key, at, null);
  return override.value !== null
    ? { minutes: override.value, source: 'override' as const, id: override.id }
    : { minutes: defaultMinutes, source: 'builtin' as const, id: null };
}

export function customBaselineAt(
  history: AssumptionHistory,
  key: string,
  custom: CustomTypeFacts,
  at: number,
) {
  const baseline = valueAt(history, 'custom_baseline', key, at, custom.default_baseline_minutes);
  return { minutes: baseline.value ?? custom.default_baseline_minutes, id: baseline.id };
}

export function fallbackAt(org: Organization, history: AssumptionHistory, at: number): Valued {
  return valueAt(history, 'fallback_baseline', '', at, org.fallbackBaselineMinutes);
}
