import { requireRole, type ActorCtx } from '../accounts/authorize.js';
import { recordAudit } from '../audit/audit-log.js';
import type { OrgCtx } from '../context.js';
import type { AppError } from '../errors.js';
import { notFound, validationError } from '../errors.js';
import { ulid } from '../ids.js';
import { readDb } from '../storage/db.js';
import type { PeriodStatementRow } from '../storage/schema.js';
import { inSnapshot } from '../storage/snapshot.js';
import { assumptionsInForce, type AssumptionsSnapshot } from './assumptions.js';
import { figuresOf, monthFigures, type Figures, type MonthFigures } from './figures.js';
import { MAX_REASON, monthRange } from './months.js';

/** A statement as stored and shown: the month's figures frozen at closing, never changed. */
export interface Statement extends MonthFigures {
  id: string;
  month: string;
  currency: string;
  range: { from: string; to: string };
  closed_at: string;
  closed_by: string | null;
  reason: string;
  reopened_at: string | null;
  reopened_by: string | null;
  reopen_reason: string | null;
  assumptions: AssumptionsSnapshot;
}

/** The frozen part of a statement (what the `statement` column holds). */
type Frozen = Omit<Statement, 'reopened_at' | 'reopened_by' | 'reopen_reason'>;

export function statementOf(row: PeriodStatementRow): Statement {
  const stored = JSON.parse(row.statement) as Frozen;
  // A statement frozen before reviews existed holds no review figures: they were 0.
  const rows = <T extends Figures>(list: T[]) => list.map((r) => ({ ...r, ...figuresOf(r) }));
  const frozen: Frozen = {
    ...stored,
    totals: figuresOf(stored.totals),
    by_agent: rows(stored.by_agent),
    by_task_type: rows(stored.by_task_type),
    by_client: rows(stored.by_client),
  };
  return {
    ...frozen,
    reopened_at: row.reopened_at === null ? null : new Date(Number(row.reopened_at)).toISOString(),
    reopened_by: row.reopened_by,
    reopen_reason: row.reopen_reason,
  };
}

function checkedReason(reason: unknown): string {
  const text = typeof reason === 'string' ? reason.trim() : '';
  if (text.length === 0 || text.length > MAX_REASON) {
    throw validationError('/body/reason', `must be 1 to ${MAX_REASON} characters`);
  }
  return text;
}

/** The month's figures, read in one snapshot. */
export async function readMonthFigures(ctx: OrgCtx, month: string): Promise<MonthFigures> {
  const range = monthRange(month);
  return inSnapshot(readDb(ctx), ctx.engine, (db) => monthFigures({ ...ctx, db }, range), {
    serial: true,
  });
}

/**
 * Closes a month that has ended (UTC) and freezes its statement. A month not yet ended, or one
 * already closed, is `validation_error` (422) on `/params/month`.
 */
export async function closePeriod({
  ctx,
  month,
  reason,
}: {
  ctx: OrgCtx;
  month: string;
  reason: string;
}): Promise<Statement> {
  requireRole(ctx, 'admin');
  const range = monthRange(month);
  const text = checkedReason(reason);
  if (ctx.clock.now().getTime() < range.to) {
    throw validationError(
      '/params/month',
      `has not ended yet: ${month} can be closed from ${new Date(range.to).toISOString()} (UTC)`,
    );
  }
  // Refused early when already closed; the transaction below decides in a race.
  const current = await findPeriod(ctx, month);
  if (current?.status === 'closed') throw alreadyClosed(month);

  const figures = await readMonthFigures(ctx, month);
  const assumptions = await assumptionsInForce(ctx, ctx.org, month);
  // Stamped after the figures were read: every event they hold was received by then, so an
  // event received later is never in them (changes.ts).
  const closedAt = ctx.clock.now();
  const id = `pst_${ulid(closedAt)}`;
  const frozen: Frozen = {
    id,
    month,
    currency: ctx.org.currency,
    range: { from: new Date(range.from).toISOString(), to: new Date(range.to).toISOString() },
    closed_at: closedAt.toISOString(),
    closed_by: ctx.actorKeyId,
    reason: text,
    ...figures,
    assumptions,
  };
  return ctx.db.transaction().execute(async (trx) => {
    const at = closedAt.getTime();
    const inserted = await trx
      .insertInto('periods')
      .values({ org_id: ctx.org.id, month, status: 'closed', statement_id: id, updated_at: at })
      .onConflict((oc) => oc.columns(['org_id', 'month']).doNothing())
      .executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 0) {
      const updated = await trx
        .updateTable('periods')
        .set({ status: 'closed', statement_id: id, updated_at: at })
        .where('org_id', '=', ctx.org.id)
        .where('month', '=', month)
        .where('status', '=', 'open')
        .executeTakeFirst();
      if (Number(updated.numUpdatedRows) === 0) throw alreadyClosed(month);
    }
    await trx
      .insertInto('period_statements')
      .values({
        id,
        org_id: ctx.org.id,
        month,
        closed_at: at,
        closed_by: ctx.actorKeyId,
        reason: text,
        statement: JSON.stringify(frozen),
        reopened_at: null,
        reopened_by: null,
        reopen_reason: null,
      })
      .execute();
    await recordAudit(
      { ...ctx, db: trx },
      {
        action: 'period.closed',
        target: `period:${month}`,
        before: null,
        after: { month, statement_id: id, closed_at: frozen.closed_at, totals: figures.totals },
        reason: text,
      },
    );
    return { ...frozen, reopened_at: null, reopened_by: null, reopen_reason: null };
  });
}

function alreadyClosed(month: string): AppError {
  return validationError('/params/month', `${month} is already closed; reopen it first to close it again`);
}

/**
 * The one check of who may reopen a month: the owner role. A person must be an owner; the CLI
 * acts as the operator (owner); an admin API key acts as an admin and is refused with 403
 * `insufficient_role` (docs/periods.md).
 */
export function requireReopenRight(ctx: ActorCtx): void {
  requireRole(ctx, 'owner');
}

/** Reopens a closed month: its statement is kept (stamped as reopened) and the month can be closed again. */
export async function reopenPeriod({
  ctx,
  month,
  reason,
}: {
  ctx: OrgCtx;
  month: string;
  reason: string;
}): Promise<Statement> {
  requireReopenRight(ctx);
  monthRange(month);
  const text = checkedReason(reason);
  const at = ctx.clock.now().getTime();
  return ctx.db.transaction().execute(async (trx) => {
    const period = await trx
      .selectFrom('periods')
      .selectAll()
      .where('org_id', '=', ctx.org.id)
      .where('month', '=', month)
      .executeTakeFirst();
    if (!period) throw notFound(`Closed period ${month}`);
    const updated = await trx
      .updateTable('periods')
      .set({ status: 'open', updated_at: at })
      .where('org_id', '=', ctx.org.id)
      .where('month', '=', month)
      .where('status', '=', 'closed')
      .executeTakeFirst();
    if (Number(updated.numUpdatedRows) === 0) {
      throw validationError('/params/month', `${month} is not closed`);
    }
    await trx
      .updateTable('period_statements')
      .set({ reopened_at: at, reopened_by: ctx.actorKeyId, reopen_reason: text })
      .where('id', '=', period.statement_id)
      .where('org_id', '=', ctx.org.id)
      .execute();
    const row = await trx
      .selectFrom('period_statements')
      .selectAll()
      .where('id', '=', period.statement_id)
      .executeTakeFirstOrThrow();
    const statement = statementOf(row);
    await recordAudit(
      { ...ctx, db: trx },
      {
        action: 'period.reopened',
        target: `period:${month}`,
        before: { month, status: 'closed', statement_id: statement.id, closed_at: statement.closed_at },
        after: { month, status: 'open', statement_id: statement.id },
        reason: text,
      },
    );
    return statement;
  });
}

async function findPeriod(ctx: OrgCtx, month: string) {
  return ctx.db
    .selectFrom('periods')
    .selectAll()
    .where('org_id', '=', ctx.org.id)
    .where('month', '=', month)
    .executeTakeFirst();
}

export interface PeriodSummary {
  month: string;
  status: 'open' | 'closed';
  statement_id: string;
  closed_at: string;
  closed_by: string | null;
  reason: string;
  reopened_at: string | null;
  reopen_reason: string | null;
}

/** Every month ever closed, newest month first, with its latest statement's stamp. */
export async function listPeriods({ ctx }: { ctx: OrgCtx }): Promise<PeriodSummary[]> {
  const rows = await ctx.db
    .selectFrom('periods')
    .innerJoin('period_statements', 'period_statements.id', 'periods.statement_id')
    .select([
      'periods.month',
      'periods.status',
      'periods.statement_id',
      'period_statements.closed_at',
      'period_statements.closed_by',
      'period_statements.reason',
      'period_statements.reopened_at',
      'period_statements.reopen_reason',
    ])
    .where('periods.org_id', '=', ctx.org.id)
    .orderBy('periods.month', 'desc')
    .execute();
  return rows.map((r) => ({
    month: r.month,
    status: r.status === 'closed' ? 'closed' : 'open',
    statement_id: r.statement_id,
    closed_at: new Date(Number(r.closed_at)).toISOString(),
    closed_by: r.closed_by,
    reason: r.reason,
    reopened_at: r.reopened_at === null ? null : new Date(Number(r.reopened_at)).toISOString(),
    reopen_reason: r.reopen_reason,
  }));
}

/** The month's status and its latest statement (the one in force while it is closed). */
export async function getPeriod({ ctx, month }: { ctx: OrgCtx; month: string }) {
  monthRange(month);
  const period = await findPeriod(ctx, month);
  if (!period) throw notFound(`Closed period ${month}`);
  const row = await ctx.db
    .selectFrom('period_statements')
    .selectAll()
    .where('id', '=', period.statement_id)
    .where('org_id', '=', ctx.org.id)
    .executeTakeFirstOrThrow();
  return {
    status: period.status === 'closed' ? ('closed' as const) : ('open' as const),
    ...statementOf(row),
  };
}

/** Every statement of the month, newest first: the one in force and those reopened before it. */
export async function listStatements({ ctx, month }: { ctx: OrgCtx; month: string }): Promise<Statement[]> {
  monthRange(month);
  const rows = await ctx.db
    .selectFrom('period_statements')
    .selectAll()
    .where('org_id', '=', ctx.org.id)
    .where('month', '=', month)
    .orderBy('id', 'desc')
    .execute();
  if (rows.length === 0) throw notFound(`Closed period ${month}`);
  return rows.map(statementOf);
}

/** The closed months (status closed) among `months`, each with its statement. */
export async function closedStatements(ctx: OrgCtx, months: readonly string[]): Promise<Statement[]> {
  if (months.length === 0) return [];
  const rows = await ctx.db
    .selectFrom('periods')
    .innerJoin('period_statements', 'period_statements.id', 'periods.statement_id')
    .selectAll('period_statements')
    .where('periods.org_id', '=', ctx.org.id)
    .where('periods.status', '=', 'closed')
    .where('periods.month', 'in', [...months])
    .orderBy('periods.month')
    .execute();
  return rows.map(statementOf);
}
