import type { ServiceCtx } from '../context.js';
import { notFound, validationError } from '../errors.js';
import { newId } from '../ids.js';
import { fromMicros, MICROS, toMicros } from '../money.js';
import { isPlanName, type PlanName } from '../billing/plans.js';
import type { OrganizationRow, OrganizationUpdate } from '../storage/schema.js';
import { inTransaction } from '../storage/db.js';
import { createApiKey } from './api-keys.js';

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

export interface CreateOrganizationInput {
  name: string;
  plan?: PlanName;
  currency?: string;
  hourlyRate?: number;
  adminEmails?: string[];
}

export function checkCurrency(currency: string, path: string): string {
  if (!/^[A-Z]{3}$/.test(currency)) throw validationError(path, 'must be a three-letter ISO 4217 code');
  return currency;
}

/** Organisation names are trimmed and 1 to 200 characters. */
export function checkName(name: string, path: string): string {
  const trimmed = name.trim();
  if (trimmed.length === 0 || trimmed.length > 200)
    throw validationError(path, 'must be 1 to 200 characters');
  return trimmed;
}

export function checkHourlyRate(rate: number, path: string): number {
  if (!Number.isFinite(rate) || rate < 0 || rate > 1_000_000) {
    throw validationError(path, 'must be a number from 0 to 1000000');
  }
  return rate;
}

export async function createOrganization({
  ctx,
  input,
}: {
  ctx: ServiceCtx;
  input: CreateOrganizationInput;
}) {
  const name = checkName(input.name, '/name');
  const now = ctx.clock.now();
  const id = newId('org', now);
  const currency = checkCurrency(input.currency ?? 'EUR', '/currency');
  const rate = checkHourlyRate(input.hourlyRate ?? 50, '/hourly_rate');
  return inTransaction(ctx.db, async (trx) => {
    await trx
      .insertInto('organizations')
      .values({
        id,
        name,
        plan: input.plan ?? 'free',
        currency,
        default_hourly_rate_micros: toMicros(rate),
        category_hourly_rates: '{}',
        outcome_credit: JSON.stringify(DEFAULT_OUTCOME_CREDIT),
        fallback_baseline_minutes: null,
        usd_exchange_rate: null,
        admin_emails: JSON.stringify(input.adminEmails ?? []),
        created_at: now.getTime(),
      })
      .execute();
    const org = await getOrganization({ ctx: { ...ctx, db: trx }, id });
    const key = await createApiKey({ ctx: { ...ctx, db: trx }, orgId: id, name: 'default' });
    return { org, ...key };
  });
}

export async function getOrganization({ ctx, id }: { ctx: ServiceCtx; id: string }): Promise<Organization> {
  const row = await ctx.db.selectFrom('organizations').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) throw notFound(`Organisation ${id}`);
  return organizationFromRow(row);
}

export async function listOrganizations({ ctx }: { ctx: ServiceCtx }): Promise<Organization[]> {
  const rows = await ctx.db.selectFrom('organizations').selectAll().orderBy('id').execute();
  return rows.map(organizationFromRow);
}

export async function countOrganizations({ ctx }: { ctx: ServiceCtx }): Promise<number> {
  const row = await ctx.db
    .selectFrom('organizations')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function setPlan({ ctx, id, plan }: { ctx: ServiceCtx; id: string; plan: string }) {
  if (!isPlanName(plan)) throw validationError('/plan', 'must be free, pro or enterprise');
  return updateOrganizationRow({ ctx, id, changes: { plan } });
}

/** Writes organisation columns; callers have validated the values. */
export async function updateOrganizationRow({
  ctx,
  id,
  changes,
}: {
  ctx: ServiceCtx;
  id: string;
  changes: OrganizationUpdate;
}): Promise<Organization> {
  const result = await ctx.db
    .updateTable('organizations')
    .set(changes)
    .where('id', '=', id)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) === 0) throw notFound(`Organisation ${id}`);
  return getOrganization({ ctx, id });
}
