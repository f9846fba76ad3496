import { requireRole, type ActorCtx } from '../accounts/authorize.js';
import { isCategory } from '../catalogue/categories.js';
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
import type { DbOrTrx } from '../storage/db.js';

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
}

export function settingsView(org: Organization) {
  const { id, plan, created_at: _createdAt, ...settings } = organizationView(org);
  return { organization_id: id, plan, ...settings };
}

/**
 * Applies a settings patch (DESIGN §2). Changes apply to events tracked afterwards; stored
 * events keep the values they were computed with. The currency changes only while the
 * organisation has no events, so sums never mix currencies.
 */
export async function updateSettings({
  ctx,
  orgId,
  patch,
}: {
  /** Who acts is read from the context (a bare ServiceCtx is the operator: the CLI). */
  ctx: ServiceCtx & ActorCtx;
  orgId: string;
  patch: SettingsPatch;
}): Promise<Organization> {
  requireRole(ctx, 'admin');
  const org = await getOrganization({ ctx, id: orgId });
  const changes: OrganizationUpdate = {};
  if (patch.name !== undefined) changes.name = checkName(patch.name, '/body/name');
  if (patch.currency !== undefined && patch.currency !== org.currency) {
    checkCurrency(patch.currency, '/body/currency');
    if (await hasTrackedEvents(ctx.db, orgId)) {
      throw validationError('/body/currency', 'cannot change once the organisation has tracked events');
    }
    changes.currency = patch.currency;
  }
  if (patch.default_hourly_rate !== undefined) {
    changes.default_hourly_rate_micros = toMicros(
      checkHourlyRate(patch.default_hourly_rate, '/body/default_hourly_rate'),
    );
  }
  if (patch.category_hourly_rates !== undefined) {
    const rates: Record<string, number> = {};
    for (const [category, rate] of Object.entries(patch.category_hourly_rates)) {
      if (rate === undefined) continue;
      if (!isCategory(category))
        throw validationError(`/body/category_hourly_rates/${category}`, 'is not a category');
      rates[category] = checkHourlyRate(rate, `/body/category_hourly_rates/${category}`);
    }
    changes.category_hourly_rates = JSON.stringify(rates);
  }
  if (patch.outcome_credit !== undefined) {
    const current = organizationView(org).outcome_credit;
    changes.outcome_credit = JSON.stringify({ ...current, ...patch.outcome_credit });
  }
  if (patch.fallback_baseline_minutes !== undefined)
    changes.fallback_baseline_minutes = patch.fallback_baseline_minutes;
  if (patch.usd_exchange_rate !== undefined) changes.usd_exchange_rate = patch.usd_exchange_rate;
  if (patch.admin_emails !== undefined) changes.admin_emails = JSON.stringify(patch.admin_emails);
  if (Object.keys(changes).length === 0) return org;
  return updateOrganizationRow({ ctx, id: orgId, changes });
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
