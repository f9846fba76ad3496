import { requireRole, type ActorCtx } from '../accounts/authorize.js';
import { organizationAt, recordAssumptionChanges, type PlannedChange } from '../assumptions/changes.js';
import { loadHistory } from '../assumptions/history.js';
import { effectiveFromOf, refusePastDate } from '../assumptions/record.js';
import { CATEGORIES, isCategory } from '../catalogue/categories.js';
import type { ServiceCtx } from '../context.js';
import { validationError } from '../errors.js';
import { toMicros } from '../money.js';
import {
  checkCurrency,
  checkName,
  checkHourlyRate,
  getOrganization,
  organizationView,
  updateOrganizationRow,
  type Organization,
  type Outcome,
} from '../orgs/organizations.js';
import type { OrganizationUpdate } from '../storage/schema.js';
import { inTransaction, type DbOrTrx } from '../storage/db.js';

export interface SettingsPatch {
  name?: string;
  currency?: string;
  default_hourly_rate?: number;
  /** Replaces the whole table of category rates. */
  category_hourly_rates?: Record<string, number | undefined>;
  outcome_credit?: Partial<Record<Outcome, number>>;
  fallback_baseline_minutes?: number | null;
  usd_exchange_rate?: number | null;
  admin_emails?: string[];
  /**
   * From when the patch's hourly rates, outcome credits and fallback baseline apply (default
   * now); never in the past (that is a restatement). Other fields apply at once.
   */
  effective_from?: string;
}

export function settingsView(org: Organization) {
  const { id, plan, created_at: _createdAt, ...settings } = organizationView(org);
  return { organization_id: id, plan, ...settings };
}

/**
 * Applies a settings patch (DESIGN §2). The assumptions (rates, credits, fallback baseline) get
 * a version from `effective_from` (default now) on: events are priced with the values in force
 * at their occurred_at, and stored events keep the values they were computed with. A change
 * scheduled for later leaves today's columns alone. The currency changes only while the
 * organisation has no events, so sums never mix currencies.
 */
export async function updateSettings({
  ctx,
  orgId,
  patch,
  actorKeyId = null,
}: {
  /** Who acts is read from the context (a bare ServiceCtx is the operator: the CLI). */
  ctx: ServiceCtx & ActorCtx;
  orgId: string;
  patch: SettingsPatch;
  actorKeyId?: string | null;
}): Promise<Organization> {
  requireRole(ctx, 'admin');
  const org = await getOrganization({ ctx, id: orgId });
  const now = ctx.clock.now().getTime();
  const effectiveFrom = effectiveFromOf(now, patch.effective_from, '/body/effective_from');
  refusePastDate(now, effectiveFrom, '/body/effective_from');
  const scheduled = effectiveFrom > now;
  const changes: OrganizationUpdate = {};
  const planned: PlannedChange[] = [];
  if (patch.name !== undefined) changes.name = checkName(patch.name, '/body/name');
  if (patch.currency !== undefined && patch.currency !== org.currency) {
    checkCurrency(patch.currency, '/body/currency');
    if (await hasTrackedEvents(ctx.db, orgId)) {
      throw validationError('/body/currency', 'cannot change once the organisation has tracked events');
    }
    changes.currency = patch.currency;
  }
  if (patch.default_hourly_rate !== undefined) {
    const micros = toMicros(checkHourlyRate(patch.default_hourly_rate, '/body/default_hourly_rate'));
    planned.push({ kind: 'default_hourly_rate', key: '', value: micros });
    if (!scheduled) changes.default_hourly_rate_micros = micros;
  }
  if (patch.category_hourly_rates !== undefined) {
    const rates: Record<string, number> = {};
    for (const [category, rate] of Object.entries(patch.category_hourly_rates)) {
      if (rate === undefined) continue;
      if (!isCategory(category))
        throw validationError(`/body/category_hourly_rates/${category}`, 'is not a category');
      rates[category] = checkHourlyRate(rate, `/body/category_hourly_rates/${category}`);
    }
    // The table replaces the whole table: a category left out has no rate of its own from then on.
    for (const category of CATEGORIES) {
      const rate = rates[category];
      planned.push({
        kind: 'category_hourly_rate',
        key: category,
        value: rate === undefined ? null : toMicros(rate),
      });
    }
    if (!scheduled) changes.category_hourly_rates = JSON.stringify(rates);
  }
  if (patch.outcome_credit !== undefined) {
    for (const [outcome, credit] of Object.entries(patch.outcome_credit)) {
      if (credit !== undefined)
        planned.push({ kind: 'outcome_credit', key: outcome, value: toMicros(credit) });
    }
    if (!scheduled) {
      // The credits in force now (a change scheduled earlier may be in force without its columns).
      const current = organizationView(
        organizationAt(org, await loadHistory(ctx.db, orgId), now),
      ).outcome_credit;
      changes.outcome_credit = JSON.stringify({ ...current, ...patch.outcome_credit });
    }
  }
  if (patch.fallback_baseline_minutes !== undefined) {
    planned.push({ kind: 'fallback_baseline', key: '', value: patch.fallback_baseline_minutes });
    if (!scheduled) changes.fallback_baseline_minutes = patch.fallback_baseline_minutes;
  }
  if (patch.usd_exchange_rate !== undefined) changes.usd_exchange_rate = patch.usd_exchange_rate;
  if (patch.admin_emails !== undefined) changes.admin_emails = JSON.stringify(patch.admin_emails);
  if (Object.keys(changes).length === 0 && planned.length === 0) return org;
  return inTransaction(ctx.db, async (trx) => {
    const trxCtx = { ...ctx, db: trx };
    // Versions only for the values that change at that date.
    await recordAssumptionChanges({ ...trxCtx, org, actorKeyId }, planned, effectiveFrom);
    if (Object.keys(changes).length === 0) return getOrganization({ ctx: trxCtx, id: orgId });
    return updateOrganizationRow({ ctx: trxCtx, id: orgId, changes });
  });
}

/** Whether the organisation has tracked any event (its currency is fixed from then on). */
export async function hasTrackedEvents(db: DbOrTrx, orgId: string): Promise<boolean> {
  const row = await db
    .selectFrom('events')
    .select('id')
    .where('org_id', '=', orgId)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}
