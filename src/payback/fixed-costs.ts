import { requireRole } from '../accounts/authorize.js';
import { recordAudit } from '../audit/audit-log.js';
import type { OrgCtx } from '../context.js';
import { notFound, validationError } from '../errors.js';
import { divRound } from '../forecast/figures.js';
import { newId } from '../ids.js';
import { fromMicros, toMicros } from '../money.js';
import { pageOf } from '../storage/pagination.js';
import type { FixedCostRow } from '../storage/schema.js';

export const FIXED_COST_KINDS = ['monthly', 'one_off'] as const;
export type FixedCostKind = (typeof FIXED_COST_KINDS)[number];
export const MAX_FIXED_COSTS = 200;
const MAX_AMOUNT = 1_000_000_000;

export interface FixedCostInput {
  name: string;
  kind: FixedCostKind;
  amount: number;
  /** Monthly: the first month charged, `YYYY-MM`. */
  start_month?: string | null;
  /** Monthly: the last month charged, `YYYY-MM`; absent or null: still running. */
  end_month?: string | null;
  /** One-off: the day it was spent, `YYYY-MM-DD`. */
  date?: string | null;
}

export interface FixedCost {
  id: string;
  name: string;
  kind: FixedCostKind;
  amountMicros: number;
  startMonth: string | null;
  endMonth: string | null;
  date: string | null;
  createdAt: number;
  updatedAt: number;
}

const MONTH = /^(\d{4})-(0[1-9]|1[0-2])$/;
const DATE = /^(\d{4})-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/;

/** The first millisecond of a `YYYY-MM` month (UTC). */
export function monthStartMs(month: string): number {
  return Date.UTC(Number(month.slice(0, 4)), Number(month.slice(5, 7)) - 1, 1);
}

/** The month after a `YYYY-MM` month. */
export function nextMonth(month: string): string {
  return new Date(Date.UTC(Number(month.slice(0, 4)), Number(month.slice(5, 7)), 1))
    .toISOString()
    .slice(0, 7);
}

function checkMonth(value: string, path: string): string {
  const year = Number(value.slice(0, 4));
  if (!MONTH.test(value) || year < 2000 || year > 2100)
    throw validationError(path, 'must be a month YYYY-MM (2000 to 2100)');
  return value;
}

function checkDate(value: string, path: string): string {
  const parsed = new Date(`${value}T00:00:00.000Z`);
  const year = Number(value.slice(0, 4));
  if (
    !DATE.test(value) ||
    Number.isNaN(parsed.getTime()) ||
    parsed.toISOString().slice(0, 10) !== value ||
    year < 2000 ||
    year > 2100
  ) {
    throw validationError(path, 'must be a date YYYY-MM-DD (2000 to 2100)');
  }
  return value;
}

function checked(input: FixedCostInput): Omit<FixedCost, 'id' | 'createdAt' | 'updatedAt'> {
  const name = input.name.trim();
  if (name.length === 0 || name.length > 200)
    throw validationError('/body/name', 'must be 1 to 200 characters');
  if (!(FIXED_COST_KINDS as readonly string[]).includes(input.kind)) {
    throw validationError('/body/kind', 'must be monthly or one_off');
  }
  if (!Number.isFinite(input.amount) || input.amount <= 0 || input.amount > MAX_AMOUNT) {
    throw validationError('/body/amount', `must be a number above 0 and at most ${MAX_AMOUNT}`);
  }
  const amountMicros = toMicros(input.amount);
  if (amountMicros <= 0) throw validationError('/body/amount', 'must be at least 0.000001');
  const start = input.start_month ?? null;
  const end = input.end_month ?? null;
  const date = input.date ?? null;
  if (input.kind === 'monthly') {
    if (start === null) throw validationError('/body/start_month', 'is required for a monthly cost');
    if (date !== null)
      throw validationError('/body/date', 'is for one-off costs; a monthly cost has start_month');
    checkMonth(start, '/body/start_month');
    if (end !== null && checkMonth(end, '/body/end_month') < start) {
      throw validationError('/body/end_month', 'must not be before start_month');
    }
    return { name, kind: input.kind, amountMicros, startMonth: start, endMonth: end, date: null };
  }
  if (date === null) throw validationError('/body/date', 'is required for a one-off cost');
  if (start !== null || end !== null) {
    throw validationError(
      start !== null ? '/body/start_month' : '/body/end_month',
      'is for monthly costs only',
    );
  }
  return {
    name,
    kind: input.kind,
    amountMicros,
    startMonth: null,
    endMonth: null,
    date: checkDate(date, '/body/date'),
  };
}

export function fixedCostFromRow(row: FixedCostRow): FixedCost {
  return {
    id: row.id,
    name: row.name,
    kind: row.kind === 'one_off' ? 'one_off' : 'monthly',
    amountMicros: Number(row.amount_micros),
    startMonth: row.start_month,
    endMonth: row.end_month,
    date: row.date,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

function rowOf(orgId: string, c: FixedCost): FixedCostRow {
  return {
    id: c.id,
    org_id: orgId,
    name: c.name,
    kind: c.kind,
    amount_micros: c.amountMicros,
    start_month: c.startMonth,
    end_month: c.endMonth,
    date: c.date,
    created_at: c.createdAt,
    updated_at: c.updatedAt,
  };
}

export function fixedCostView(c: FixedCost, currency: string) {
  return {
    id: c.id,
    name: c.name,
    kind: c.kind,
    amount: fromMicros(c.amountMicros),
    currency,
    start_month: c.startMonth,
    end_month: c.endMonth,
    date: c.date,
    created_at: new Date(c.createdAt).toISOString(),
    updated_at: new Date(c.updatedAt).toISOString(),
  };
}

/**
 * The fixed costs that fall in [from, to) (epoch ms), in micro-units: a monthly cost accrues
 * evenly over each month it runs (its share of a month is the share of the month's milliseconds
 * inside the window), a one-off cost counts whole on its day. Each cost's share of each month is
 * rounded once, half away from zero.
 */
export function fixedCostsIn(costs: readonly FixedCost[], from: number, to: number): number {
  let total = 0;
  for (const c of costs) {
    if (c.kind === 'one_off') {
      const day = c.date === null ? NaN : Date.parse(`${c.date}T00:00:00.000Z`);
      if (day >= from && day < to) total += c.amountMicros;
      continue;
    }
    if (c.startMonth === null) continue;
    for (let month = c.startMonth; c.endMonth === null || month <= c.endMonth; month = nextMonth(month)) {
      const start = monthStartMs(month);
      if (start >= to) break;
      const end = monthStartMs(nextMonth(month));
      const overlap = Math.min(end, to) - Math.max(start, from);
      if (overlap <= 0) continue;
      total += Number(divRound(BigInt(c.amountMicros) * BigInt(overlap), BigInt(end - start)));
    }
  }
  return total;
}

/** The earliest month any fixed cost falls in, or null without any. */
export function firstFixedCostMonth(costs: readonly FixedCost[]): string | null {
  const months = costs.map((c) => (c.kind === 'one_off' ? (c.date ?? '').slice(0, 7) : (c.startMonth ?? '')));
  const valid = months.filter((m) => m !== '').sort();
  return valid[0] ?? null;
}

export async function allFixedCosts(ctx: OrgCtx): Promise<FixedCost[]> {
  const rows = await ctx.db
    .selectFrom('fixed_costs')
    .selectAll()
    .where('org_id', '=', ctx.org.id)
    .orderBy('id')
    .execute();
  return rows.map(fixedCostFromRow);
}

export async function createFixedCost({
  ctx,
  input,
}: {
  ctx: OrgCtx;
  input: FixedCostInput;
}): Promise<FixedCost> {
  requireRole(ctx, 'admin');
  const at = ctx.clock.now().getTime();
  const cost: FixedCost = { id: newId('fc', new Date(at)), ...checked(input), createdAt: at, updatedAt: at };
  return ctx.db.transaction().execute(async (trx) => {
    const count = await trx
      .selectFrom('fixed_costs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('org_id', '=', ctx.org.id)
      .executeTakeFirstOrThrow();
    if (Number(count.n) >= MAX_FIXED_COSTS) {
      throw validationError('/body', `an organisation keeps at most ${MAX_FIXED_COSTS} fixed costs`);
    }
    await trx.insertInto('fixed_costs').values(rowOf(ctx.org.id, cost)).execute();
    await recordAudit(
      { ...ctx, db: trx },
      {
        action: 'fixed_cost.created',
        target: `fixed_cost:${cost.id}`,
        before: null,
        after: fixedCostView(cost, ctx.org.currency),
      },
    );
    return cost;
  });
}

export async function getFixedCost({ ctx, id }: { ctx: OrgCtx; id: string }): Promise<FixedCost> {
  const row = await ctx.db
    .selectFrom('fixed_costs')
    .selectAll()
    .where('org_id', '=', ctx.org.id)
    .where('id', '=', id)
    .executeTakeFirst();
  if (!row) throw notFound(`Fixed cost ${id}`);
  return fixedCostFromRow(row);
}

/** Newest first; the cursor is the id of the last fixed cost of the previous page. */
export async function listFixedCosts({
  ctx,
  limit,
  cursor,
}: {
  ctx: OrgCtx;
  limit: number;
  cursor?: string;
}) {
  let query = ctx.db.selectFrom('fixed_costs').selectAll().where('org_id', '=', ctx.org.id);
  if (cursor !== undefined) query = query.where('id', '<', cursor);
  const rows = await query
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  const { page, next_cursor } = pageOf(rows, limit);
  return { data: page.map(fixedCostFromRow), next_cursor };
}

/** PATCH: the fields given replace the stored ones; the result is checked as a whole. */
export async function updateFixedCost({
  ctx,
  id,
  patch,
}: {
  ctx: OrgCtx;
  id: string;
  patch: Partial<FixedCostInput>;
}): Promise<FixedCost> {
  requireRole(ctx, 'admin');
  return ctx.db.transaction().execute(async (trx) => {
    const before = await getFixedCost({ ctx: { ...ctx, db: trx }, id });
    const kind = patch.kind ?? before.kind;
    // A change of kind drops the other kind's fields unless the PATCH gives them.
    const keep = kind === before.kind;
    const after: FixedCost = {
      ...before,
      ...checked({
        name: patch.name ?? before.name,
        kind,
        amount: patch.amount ?? fromMicros(before.amountMicros),
        start_month: patch.start_month !== undefined ? patch.start_month : keep ? before.startMonth : null,
        end_month: patch.end_month !== undefined ? patch.end_month : keep ? before.endMonth : null,
        date: patch.date !== undefined ? patch.date : keep ? before.date : null,
      }),
      updatedAt: ctx.clock.now().getTime(),
    };
    await trx
      .updateTable('fixed_costs')
      .set(rowOf(ctx.org.id, after))
      .where('id', '=', id)
      .where('org_id', '=', ctx.org.id)
      .execute();
    await recordAudit(
      { ...ctx, db: trx },
      {
        action: 'fixed_cost.updated',
        target: `fixed_cost:${id}`,
        before: fixedCostView(before, ctx.org.currency),
        after: fixedCostView(after, ctx.org.currency),
      },
    );
    return after;
  });
}

export async function deleteFixedCost({ ctx, id }: { ctx: OrgCtx; id: string }): Promise<void> {
  requireRole(ctx, 'admin');
  await ctx.db.transaction().execute(async (trx) => {
    const before = await getFixedCost({ ctx: { ...ctx, db: trx }, id });
    await trx.deleteFrom('fixed_costs').where('id', '=', id).where('org_id', '=', ctx.org.id).execute();
    await recordAudit(
      { ...ctx, db: trx },
      {
        action: 'fixed_cost.deleted',
        target: `fixed_cost:${id}`,
        before: fixedCostView(before, ctx.org.currency),
        after: null,
      },
    );
  });
}
