import { requireRole } from '../accounts/authorize.js';
import { recordAudit } from '../audit/audit-log.js';
import type { OrgCtx } from '../context.js';
import { notFound, validationError } from '../errors.js';
import { newId } from '../ids.js';
import { fromMicros, toMicros } from '../money.js';
import type { ReportFilters } from '../reports/params.js';
import { pageOf } from '../storage/pagination.js';
import type { BudgetRow } from '../storage/schema.js';

export const BUDGET_SCOPES = ['org', 'agent', 'client', 'task_type'] as const;
export type BudgetScope = (typeof BUDGET_SCOPES)[number];

export const DEFAULT_THRESHOLDS = [50, 80, 100] as const;
/** Budgets an organisation may keep: the alert loop forecasts each of them every pass. */
export const MAX_BUDGETS = 100;
export const MAX_AMOUNT = 1_000_000_000;

export interface BudgetInput {
  name: string;
  scope: BudgetScope;
  /** The agent id, client id or task type key; absent (or null) for the whole organisation. */
  scope_value?: string | null;
  /** Monthly amount of agent spend, in the organisation currency. */
  amount: number;
  /** Whole percentages of the amount, 1 to 1000; default 50, 80, 100. */
  thresholds?: number[];
}

export type BudgetPatch = Partial<BudgetInput>;

/** A budget as stored, with its amount in micro-units. */
export interface Budget {
  id: string;
  name: string;
  scope: BudgetScope;
  scopeValue: string | null;
  amountMicros: number;
  thresholds: number[];
  createdAt: number;
  updatedAt: number;
}

export function budgetFromRow(row: BudgetRow): Budget {
  return {
    id: row.id,
    name: row.name,
    scope: (BUDGET_SCOPES as readonly string[]).includes(row.scope) ? (row.scope as BudgetScope) : 'org',
    scopeValue: row.scope_value,
    amountMicros: Number(row.amount_micros),
    thresholds: JSON.parse(row.thresholds) as number[],
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

/** The events a budget counts: the report filters of its scope. */
export function budgetFilters(budget: Budget): ReportFilters {
  const value = budget.scopeValue ?? '';
  if (budget.scope === 'agent') return { agentId: value, metadata: [] };
  if (budget.scope === 'client') return { clientId: value, metadata: [] };
  if (budget.scope === 'task_type') return { taskType: value, metadata: [] };
  return { metadata: [] };
}

/** The budget's own fields as the API shows them (its status is added by status.ts). */
export function budgetFields(budget: Budget, currency: string) {
  return {
    id: budget.id,
    name: budget.name,
    scope: budget.scope,
    scope_value: budget.scopeValue,
    amount: fromMicros(budget.amountMicros),
    currency,
    thresholds: budget.thresholds,
    created_at: new Date(budget.createdAt).toISOString(),
    updated_at: new Date(budget.updatedAt).toISOString(),
  };
}

/** The whole input checked, whatever door it came through (API, CLI, dashboard). */
function checked(input: BudgetInput): Omit<Budget, 'id' | 'createdAt' | 'updatedAt'> {
  const name = input.name.trim();
  if (name.length === 0 || name.length > 200)
    throw validationError('/body/name', 'must be 1 to 200 characters');
  if (!(BUDGET_SCOPES as readonly string[]).includes(input.scope)) {
    throw validationError('/body/scope', `must be one of ${BUDGET_SCOPES.join(', ')}`);
  }
  const value = input.scope_value ?? null;
  if (input.scope === 'org' && value !== null) {
    throw validationError('/body/scope_value', 'must be absent for a budget of the whole organisation');
  }
  if (input.scope !== 'org' && (value === null || value.length === 0 || value.length > 200)) {
    throw validationError(
      '/body/scope_value',
      `must name the ${input.scope.replace('_', ' ')} (1 to 200 characters)`,
    );
  }
  if (!Number.isFinite(input.amount) || input.amount <= 0 || input.amount > MAX_AMOUNT) {
    throw validationError('/body/amount', `must be a number above 0 and at most ${MAX_AMOUNT}`);
  }
  const amountMicros = toMicros(input.amount);
  if (amountMicros <= 0) throw validationError('/body/amount', 'must be at least 0.000001');
  const thresholds = [...(input.thresholds ?? DEFAULT_THRESHOLDS)];
  if (thresholds.length === 0 || thresholds.length > 10) {
    throw validationError('/body/thresholds', 'must hold 1 to 10 percentages');
  }
  if (thresholds.some((t) => !Number.isInteger(t) || t < 1 || t > 1000)) {
    throw validationError('/body/thresholds', 'must be whole percentages from 1 to 1000');
  }
  if (new Set(thresholds).size !== thresholds.length) {
    throw validationError('/body/thresholds', 'must not repeat a percentage');
  }
  return {
    name,
    scope: input.scope,
    scopeValue: value,
    amountMicros,
    thresholds: thresholds.sort((a, b) => a - b),
  };
}

function rowOf(orgId: string, budget: Budget): BudgetRow {
  return {
    id: budget.id,
    org_id: orgId,
    name: budget.name,
    scope: budget.scope,
    scope_value: budget.scopeValue,
    amount_micros: budget.amountMicros,
    thresholds: JSON.stringify(budget.thresholds),
    created_at: budget.createdAt,
    updated_at: budget.updatedAt,
  };
}

export async function createBudget({ ctx, input }: { ctx: OrgCtx; input: BudgetInput }): Promise<Budget> {
  requireRole(ctx, 'admin');
  const at = ctx.clock.now();
  const budget: Budget = {
    id: newId('bud', at),
    ...checked(input),
    createdAt: at.getTime(),
    updatedAt: at.getTime(),
  };
  return ctx.db.transaction().execute(async (trx) => {
    const count = await trx
      .selectFrom('budgets')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('org_id', '=', ctx.org.id)
      .executeTakeFirstOrThrow();
    if (Number(count.n) >= MAX_BUDGETS) {
      throw validationError('/body', `an organisation keeps at most ${MAX_BUDGETS} budgets`);
    }
    await trx.insertInto('budgets').values(rowOf(ctx.org.id, budget)).execute();
    await recordAudit(
      { ...ctx, db: trx },
      {
        action: 'budget.created',
        target: `budget:${budget.id}`,
        before: null,
        after: budgetFields(budget, ctx.org.currency),
      },
    );
    return budget;
  });
}

export async function getBudget({ ctx, id }: { ctx: OrgCtx; id: string }): Promise<Budget> {
  const row = await ctx.db
    .selectFrom('budgets')
    .selectAll()
    .where('org_id', '=', ctx.org.id)
    .where('id', '=', id)
    .executeTakeFirst();
  // Another organisation's budget is answered exactly like a missing one.
  if (!row) throw notFound(`Budget ${id}`);
  return budgetFromRow(row);
}

/** Newest first; the cursor is the id of the last budget of the previous page. */
export async function listBudgets({ ctx, limit, cursor }: { ctx: OrgCtx; limit: number; cursor?: string }) {
  let query = ctx.db.selectFrom('budgets').selectAll().where('org_id', '=', ctx.org.id);
  if (cursor !== undefined) query = query.where('id', '<', cursor);
  const rows = await query
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  const { page, next_cursor } = pageOf(rows, limit);
  return { data: page.map(budgetFromRow), next_cursor };
}

/** PATCH: the fields given replace the stored ones; the result is checked as a whole. */
export async function updateBudget({
  ctx,
  id,
  patch,
}: {
  ctx: OrgCtx;
  id: string;
  patch: BudgetPatch;
}): Promise<Budget> {
  requireRole(ctx, 'admin');
  return ctx.db.transaction().execute(async (trx) => {
    const before = await getBudget({ ctx: { ...ctx, db: trx }, id });
    const scope = patch.scope ?? before.scope;
    // Changing to the whole organisation drops the value; changing to another scope needs one.
    const scopeValue =
      patch.scope_value !== undefined ? patch.scope_value : scope === 'org' ? null : before.scopeValue;
    const after: Budget = {
      ...before,
      ...checked({
        name: patch.name ?? before.name,
        scope,
        scope_value: scopeValue,
        amount: patch.amount ?? fromMicros(before.amountMicros),
        thresholds: patch.thresholds ?? before.thresholds,
      }),
      updatedAt: ctx.clock.now().getTime(),
    };
    await trx
      .updateTable('budgets')
      .set(rowOf(ctx.org.id, after))
      .where('id', '=', id)
      .where('org_id', '=', ctx.org.id)
      .execute();
    await recordAudit(
      { ...ctx, db: trx },
      {
        action: 'budget.updated',
        target: `budget:${id}`,
        before: budgetFields(before, ctx.org.currency),
        after: budgetFields(after, ctx.org.currency),
      },
    );
    return after;
  });
}

/** Deletes a budget; the alerts it sent stay in the ledger (and in receivers' hands). */
export async function deleteBudget({ ctx, id }: { ctx: OrgCtx; id: string }): Promise<void> {
  requireRole(ctx, 'admin');
  await ctx.db.transaction().execute(async (trx) => {
    const before = await getBudget({ ctx: { ...ctx, db: trx }, id });
    await trx.deleteFrom('budgets').where('id', '=', id).where('org_id', '=', ctx.org.id).execute();
    await recordAudit(
      { ...ctx, db: trx },
      {
        action: 'budget.deleted',
        target: `budget:${id}`,
        before: budgetFields(before, ctx.org.currency),
        after: null,
      },
    );
  });
}
