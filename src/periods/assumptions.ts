import { listCustomTaskTypes, listOverrides } from '../catalogue/store.js';
import { versionsInForceDuring } from '../assumptions/in-force.js';
import { apiValue } from '../assumptions/kinds.js';
import type { OrgCtx } from '../context.js';
import { fromMicros } from '../money.js';
import type { Organization } from '../orgs/organization-record.js';
import { organizationView } from '../orgs/organization-record.js';

/**
 * The assumptions that turn events into figures, as they stand when a month is closed: the
 * organisation's rates, outcome credits and fallback baseline, its baseline overrides, and its
 * custom types' baselines and rates, as they stand now; and `versions`, the assumption versions in
 * force at some time during `month` by their effective dates (src/assumptions/ versionsInForceDuring),
 * which name what priced the month's events.
 */
export async function assumptionsInForce(ctx: OrgCtx, org: Organization, month: string) {
  const view = organizationView(org);
  const [overrides, customs, versions] = await Promise.all([
    listOverrides(ctx.db, org.id),
    listCustomTaskTypes(ctx.db, org.id),
    versionsInForceDuring(ctx, org.id, month),
  ]);
  return {
    month,
    taken_at: ctx.clock.now().toISOString(),
    settings: {
      currency: view.currency,
      default_hourly_rate: view.default_hourly_rate,
      category_hourly_rates: view.category_hourly_rates,
      outcome_credit: view.outcome_credit,
      fallback_baseline_minutes: view.fallback_baseline_minutes,
      usd_exchange_rate: view.usd_exchange_rate,
    },
    baseline_overrides: [...overrides]
      .sort((a, b) => (a.task_key < b.task_key ? -1 : 1))
      .map((o) => ({
        task_type: o.task_key,
        baseline_minutes: o.baseline_minutes_override,
        reason: o.reason,
        updated_at: new Date(Number(o.updated_at)).toISOString(),
      })),
    custom_task_types: [...customs]
      .sort((a, b) => (a.key < b.key ? -1 : 1))
      .map((c) => ({
        task_type: c.key,
        category: c.category,
        baseline_minutes: c.default_baseline_minutes,
        hourly_rate: c.hourly_rate_micros === null ? null : fromMicros(Number(c.hourly_rate_micros)),
        status: c.status === 'archived' ? 'archived' : 'active',
      })),
    versions: versions.map((v) => ({
      id: v.id,
      kind: v.kind,
      key: v.key === '' ? null : v.key,
      value: apiValue(v.kind, v.value),
      effective_from: v.effectiveFrom === 0 ? null : new Date(v.effectiveFrom).toISOString(),
      restatement_id: v.restatementId,
    })),
  };
}

export type AssumptionsSnapshot = Awaited<ReturnType<typeof assumptionsInForce>>;
