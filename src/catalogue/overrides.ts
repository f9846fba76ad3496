import { requireRole } from '../accounts/authorize.js';
import { loadHistory } from '../assumptions/history.js';
import { effectiveFromOf, recordVersion, refusePastDate } from '../assumptions/record.js';
import { recordAudit } from '../audit/audit-log.js';
import type { OrgCtx } from '../context.js';
import { AppError, notFound, validationError } from '../errors.js';
import type { OverrideRow } from '../storage/schema.js';
import { findBuiltin, type BuiltinTaskType } from './builtins.js';
import { findCustomTaskType, findOverride } from './store.js';
import { builtinRecord, overrideView, type TaskTypeRecord } from './view.js';

export interface OverrideInput {
  baseline_minutes_override: number;
  reason?: string;
  /** From when it applies (default: now); never in the past (that is a restatement). */
  effective_from?: string;
}

/** Overrides exist for built-ins only: a custom key is a caller mistake, any other key unknown. */
async function builtinFor(ctx: OrgCtx, key: string): Promise<BuiltinTaskType> {
  const builtin = findBuiltin(key);
  if (builtin) return builtin;
  if (await findCustomTaskType(ctx.db, ctx.org.id, key)) {
    throw validationError(
      '/params/key',
      'is a custom task type; overrides apply to built-in task types only (a custom type has its own baseline)',
    );
  }
  throw notFound(`Task type "${key}"`);
}

/**
 * Sets the organisation's baseline for a built-in from `effective_from` (default now) on,
 * replacing an earlier override then. Events tracked afterwards use it when their occurred_at is
 * at or after that instant; stored events keep the baseline they were computed with.
 */
export async function setOverride({
  ctx,
  key,
  input,
}: {
  ctx: OrgCtx;
  key: string;
  input: OverrideInput;
}): Promise<TaskTypeRecord> {
  requireRole(ctx, 'admin');
  const builtin = await builtinFor(ctx, key);
  const now = ctx.clock.now().getTime();
  const effectiveFrom = effectiveFromOf(now, input.effective_from, '/body/effective_from');
  refusePastDate(now, effectiveFrom, '/body/effective_from');
  const row: OverrideRow = {
    org_id: ctx.org.id,
    task_key: key,
    baseline_minutes_override: input.baseline_minutes_override,
    reason: input.reason ?? null,
    updated_at: now,
  };
  return ctx.db.transaction().execute(async (trx) => {
    const trxCtx = { ...ctx, db: trx };
    const before = await findOverride(trx, ctx.org.id, key);
    const version = await recordVersion(trxCtx, {
      kind: 'baseline_override',
      key,
      value: row.baseline_minutes_override,
      effectiveFrom,
      reason: row.reason,
    });
    // A change scheduled for later leaves today's row alone; the history holds it until then.
    const inForce = effectiveFrom <= now;
    if (inForce) {
      await trx
        .insertInto('task_type_overrides')
        .values(row)
        .onConflict((oc) =>
          oc.columns(['org_id', 'task_key']).doUpdateSet({
            baseline_minutes_override: row.baseline_minutes_override,
            reason: row.reason,
            updated_at: row.updated_at,
          }),
        )
        .execute();
    }
    await recordAudit(trxCtx, {
      action: 'task_type.override_set',
      target: `task_type:${key}`,
      before: before ? overrideView(before, builtin) : null,
      after: {
        ...overrideView(row, builtin),
        effective_from: new Date(effectiveFrom).toISOString(),
        version_id: version.id,
      },
      reason: row.reason,
    });
    const history = await loadHistory(trx, ctx.org.id);
    return builtinRecord(builtin, inForce ? row : before, { history, now });
  });
}

/**
 * Goes back to the built-in default baseline from `effectiveFrom` (epoch ms, default now) on;
 * an override scheduled for later is removed at its date.
 */
export async function removeOverride({
  ctx,
  key,
  effectiveFrom: effectiveText,
}: {
  ctx: OrgCtx;
  key: string;
  effectiveFrom?: string;
}): Promise<TaskTypeRecord> {
  requireRole(ctx, 'admin');
  const builtin = findBuiltin(key);
  const noOverride = () => new AppError('not_found', `No baseline override is set for task type "${key}".`);
  if (!builtin) {
    if (await findCustomTaskType(ctx.db, ctx.org.id, key)) throw noOverride();
    throw notFound(`Task type "${key}"`);
  }
  const now = ctx.clock.now().getTime();
  const effectiveFrom = effectiveFromOf(now, effectiveText, '/querystring/effective_from');
  refusePastDate(now, effectiveFrom, '/querystring/effective_from');
  return ctx.db.transaction().execute(async (trx) => {
    const trxCtx = { ...ctx, db: trx };
    const before = await findOverride(trx, ctx.org.id, key);
    const history = await loadHistory(trx, ctx.org.id);
    // Something to remove: an override in force now, or one scheduled before the removal's date.
    const last = history.at('baseline_override', key, effectiveFrom);
    if (!before && (last === undefined || last.value === null)) throw noOverride();
    const inForce = effectiveFrom <= now;
    if (inForce && before) {
      const deleted = await trx
        .deleteFrom('task_type_overrides')
        .where('org_id', '=', ctx.org.id)
        .where('task_key', '=', key)
        .executeTakeFirst();
      // A concurrent removal got there first: answer as if none was set, with one audit row overall.
      if (Number(deleted.numDeletedRows) === 0) throw noOverride();
    }
    const version = await recordVersion(trxCtx, {
      kind: 'baseline_override',
      key,
      value: null,
      effectiveFrom,
    });
    await recordAudit(trxCtx, {
      action: 'task_type.override_removed',
      target: `task_type:${key}`,
      before: before ? overrideView(before, builtin) : null,
      after: inForce
        ? null
        : { effective_from: new Date(effectiveFrom).toISOString(), version_id: version.id },
    });
    return builtinRecord(builtin, inForce ? undefined : before, {
      history: await loadHistory(trx, ctx.org.id),
      now,
    });
  });
}
