import type { ServiceCtx } from '../context.js';
import { notFound, validationError } from '../errors.js';
import { newId } from '../ids.js';
import { toMicros } from '../money.js';
import { isPlanName, type PlanName } from '../billing/plans.js';
import type { OrganizationUpdate } from '../storage/schema.js';
import { inTransaction } from '../storage/db.js';
import { seedOrganizationVersions } from '../assumptions/record.js';
import { createApiKey } from './api-keys.js';
import {
  DEFAULT_OUTCOME_CREDIT,
  getOrganization,
  organizationFromRow,
  type Organization,
} from './organization-record.js';

export {
  DEFAULT_OUTCOME_CREDIT,
  getOrganization,
  organizationFromRow,
  organizationView,
  OUTCOMES,
  type Organization,
  type Outcome,
} from './organization-record.js';

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
    await seedOrganizationVersions(
      trx,
      {
        id,
        defaultHourlyRateMicros: toMicros(rate),
        creditMicros: Object.fromEntries(
          Object.entries(DEFAULT_OUTCOME_CREDIT).map(([o, c]) => [o, toMicros(c)]),
        ),
      },
      now,
    );
    const org = await getOrganization({ ctx: { ...ctx, db: trx }, id });
    const key = await createApiKey({ ctx: { ...ctx, db: trx }, orgId: id, name: 'default' });
    return { org, ...key };
  });
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
