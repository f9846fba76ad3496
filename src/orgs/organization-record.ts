import { fromMicros, MICROS, toMicros } from '../money.js';
import { isPlanName, type PlanName } from '../billing/plans.js';
import { notFound } from '../errors.js';
import type { DbOrTrx } from '../storage/db.js';
import type { OrganizationRow } from '../storage/schema.js';

// The organisation as verbs see it, apart from the verbs that change it: every verb's context
// (context.ts) carries one, and the key lookup decodes one per request.

export type Outcome = 'success' | 'needs_review' | 'failure';
export const OUTCOMES: readonly Outcome[] = ['success', 'needs_review', 'failure'];

export interface Organization {
  id: string;
  name: string;
  plan: PlanName;
  currency: string;
  defaultHourlyRateMicros: number;
  /** Category → hourly rate in micro-units. */
  categoryHourlyRatesMicros: Record<string, number>;
  /** Outcome → credit in millionths (1 = 1,000,000). */
  outcomeCreditMicros: Record<Outcome, number>;
  fallbackBaselineMinutes: number | null;
  usdExchangeRate: number | null;
  adminEmails: string[];
  createdAt: Date;
  /** The revision of its last assumption version (src/assumptions/history.ts). */
  assumptionsRevision: number;
}

export const DEFAULT_OUTCOME_CREDIT: Record<Outcome, number> = { success: 1, needs_review: 0.5, failure: 0 };

export function organizationFromRow(row: OrganizationRow): Organization {
  const credit = JSON.parse(row.outcome_credit) as Record<Outcome, number>;
  const rates = JSON.parse(row.category_hourly_rates) as Record<string, number>;
  return {
    id: row.id,
    name: row.name,
    plan: isPlanName(row.plan) ? row.plan : 'free',
    currency: row.currency,
    defaultHourlyRateMicros: Number(row.default_hourly_rate_micros),
    categoryHourlyRatesMicros: Object.fromEntries(Object.entries(rates).map(([k, v]) => [k, toMicros(v)])),
    outcomeCreditMicros: {
      success: toMicros(credit.success),
      needs_review: toMicros(credit.needs_review),
      failure: toMicros(credit.failure),
    },
    fallbackBaselineMinutes: row.fallback_baseline_minutes,
    usdExchangeRate: row.usd_exchange_rate,
    adminEmails: JSON.parse(row.admin_emails) as string[],
    createdAt: new Date(Number(row.created_at)),
    assumptionsRevision: Number(row.assumptions_revision),
  };
}

/** The organisation as the CLI and the API show it. */
export function organizationView(org: Organization) {
  return {
    id: org.id,
    name: org.name,
    plan: org.plan,
    currency: org.currency,
    default_hourly_rate: fromMicros(org.defaultHourlyRateMicros),
    category_hourly_rates: Object.fromEntries(
      Object.entries(org.categoryHourlyRatesMicros).map(([k, v]) => [k, fromMicros(v)]),
    ),
    outcome_credit: {
      success: org.outcomeCreditMicros.success / MICROS,
      needs_review: org.outcomeCreditMicros.needs_review / MICROS,
      failure: org.outcomeCreditMicros.failure / MICROS,
    },
    fallback_baseline_minutes: org.fallbackBaselineMinutes,
    usd_exchange_rate: org.usdExchangeRate,
    admin_emails: org.adminEmails,
    created_at: org.createdAt.toISOString(),
  };
}

export async function getOrganization({
  ctx,
  id,
}: {
  ctx: { db: DbOrTrx };
  id: string;
}): Promise<Organization> {
  const row = await ctx.db.selectFrom('organizations').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) throw notFound(`Organisation ${id}`);
  return organizationFromRow(row);
}
