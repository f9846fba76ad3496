import { recordAudit } from '../audit/audit-log.js';
import { CATEGORIES } from '../catalogue/categories.js';
import type { OrgCtx } from '../context.js';
import { OUTCOMES, type Organization } from '../orgs/organization-record.js';
import { loadHistory, type AssumptionHistory } from './history.js';
import { apiValue, type AssumptionKind } from './kinds.js';
import { recordVersion } from './record.js';
import { valueAt } from './resolve.js';

export interface PlannedChange {
  kind: AssumptionKind;
  key: string;
  /** Stored units; null = unset. */
  value: number | null;
}

/** Today's column value of an organisation-wide assumption (used while it has no version). */
export function columnValue(org: OrgCtx['org'], kind: AssumptionKind, key: string): number | null {
  switch (kind) {
    case 'default_hourly_rate':
      return org.defaultHourlyRateMicros;
    case 'category_hourly_rate':
      return org.categoryHourlyRatesMicros[key] ?? null;
    case 'outcome_credit':
      return org.outcomeCreditMicros[key as keyof typeof org.outcomeCreditMicros] ?? null;
    case 'fallback_baseline':
      return org.fallbackBaselineMinutes;
    default:
      return null;
  }
}

export const targetOf = (kind: AssumptionKind, key: string) =>
  `assumption:${kind}${key === '' ? '' : `:${key}`}`;

/**
 * Records a version (and its audit row) for each planned value that differs from the value in
 * force at `effectiveFrom`. Call it in the transaction of the change.
 */
export async function recordAssumptionChanges(
  ctx: OrgCtx,
  planned: readonly PlannedChange[],
  effectiveFrom: number,
  reason: string | null = null,
): Promise<AssumptionHistory> {
  let history = await loadHistory(ctx.db, ctx.org.id);
  for (const change of planned) {
    const before = valueAt(
      history,
      change.kind,
      change.key,
      effectiveFrom,
      columnValue(ctx.org, change.kind, change.key),
    );
    if (before.value === change.value) continue;
    const version = await recordVersion(ctx, { ...change, effectiveFrom, reason });
    await recordAudit(ctx, {
      action: 'assumption.changed',
      target: targetOf(change.kind, change.key),
      before: { value: apiValue(change.kind, before.value), version_id: before.id },
      after: {
        value: apiValue(change.kind, change.value),
        effective_from: new Date(effectiveFrom).toISOString(),
        version_id: version.id,
      },
      reason,
    });
    history = history.with(version);
  }
  return history;
}

/** The organisation-wide assumptions' slots, in the order the settings show them. */
export function organizationSlots(): Array<[AssumptionKind, string]> {
  return [
    ['default_hourly_rate', ''],
    ...CATEGORIES.map((c): [AssumptionKind, string] => ['category_hourly_rate', c]),
    ...OUTCOMES.map((o): [AssumptionKind, string] => ['outcome_credit', o]),
    ['fallback_baseline', ''],
  ];
}

/**
 * The organisation with the values in force at `now` (a change scheduled earlier may have come
 * into force since its columns were last written).
 */
export function organizationAt(org: Organization, history: AssumptionHistory, now: number): Organization {
  const at = (kind: AssumptionKind, key: string) =>
    valueAt(history, kind, key, now, columnValue(org, kind, key)).value;
  const categoryRates: Record<string, number> = {};
  for (const category of CATEGORIES) {
    const rate = at('category_hourly_rate', category);
    if (rate !== null) categoryRates[category] = rate;
  }
  return {
    ...org,
    defaultHourlyRateMicros: at('default_hourly_rate', '') ?? org.defaultHourlyRateMicros,
    categoryHourlyRatesMicros: categoryRates,
    outcomeCreditMicros: {
      success: at('outcome_credit', 'success') ?? org.outcomeCreditMicros.success,
      needs_review: at('outcome_credit', 'needs_review') ?? org.outcomeCreditMicros.needs_review,
      failure: at('outcome_credit', 'failure') ?? org.outcomeCreditMicros.failure,
    },
    fallbackBaselineMinutes: at('fallback_baseline', ''),
  };
}
