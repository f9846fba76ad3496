import { requireRole } from '../accounts/authorize.js';
import { historyFor, loadHistory } from '../assumptions/history.js';
import { recordVersion } from '../assumptions/record.js';
import { recordAudit } from '../audit/audit-log.js';
import type { OrgCtx } from '../context.js';
import { AppError, notFound, validationError } from '../errors.js';
import { toMicros } from '../money.js';
import type { CustomTaskTypeRow } from '../storage/schema.js';
import { BUILTIN_TASK_TYPES, findBuiltin } from './builtins.js';
import type { Category } from './categories.js';
import { findCustomTaskType, listCustomTaskTypes, listOverrides } from './store.js';
import { builtinRecord, customRecord, type TaskTypeRecord } from './view.js';

export interface ListTaskTypesInput {
  category?: Category;
  includeArchived?: boolean;
}

export interface CustomTaskTypeInput {
  key: string;
  display_name: string;
  category: Category;
  default_baseline_minutes: number;
  baseline_source?: string;
  hourly_rate?: number | null;
}

// Byte order, not locale order, so both engines and every machine list keys the same way.
const byKey = (a: { key: string }, b: { key: string }) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

/** Built-ins (with the organisation's overrides) first, then its custom types; each group by key. */
export async function listTaskTypes({
  ctx,
  input,
}: {
  ctx: OrgCtx;
  input: ListTaskTypesInput;
}): Promise<TaskTypeRecord[]> {
  const overrides = new Map((await listOverrides(ctx.db, ctx.org.id)).map((o) => [o.task_key, o]));
  const at = {
    history: await historyFor(ctx.db, ctx.org.id, ctx.org.assumptionsRevision),
    now: ctx.clock.now().getTime(),
  };
  const builtins = BUILTIN_TASK_TYPES.filter(
    (b) => input.category === undefined || b.category === input.category,
  )
    .map((b) => builtinRecord(b, overrides.get(b.key), at))
    .sort(byKey);
  const customs = (await listCustomTaskTypes(ctx.db, ctx.org.id))
    .filter((c) => input.category === undefined || c.category === input.category)
    .filter((c) => input.includeArchived === true || c.status === 'active')
    .map((c) => customRecord(c, at))
    .sort(byKey);
  return [...builtins, ...customs];
}

/**
 * Creates a custom task type. Keys are never reused, not even after archiving, so stored
 * events keep pointing at the type they were tracked with.
 */
export async function createCustomTaskType({
  ctx,
  input,
}: {
  ctx: OrgCtx;
  input: CustomTaskTypeInput;
}): Promise<TaskTypeRecord> {
  requireRole(ctx, 'admin');
  if (findBuiltin(input.key)) throw validationError('/body/key', 'is the key of a built-in task type');
  const displayName = input.display_name.trim();
  if (displayName.length === 0) throw validationError('/body/display_name', 'must not be blank');
  const row: CustomTaskTypeRow = {
    org_id: ctx.org.id,
    key: input.key,
    display_name: displayName,
    category: input.category,
    default_baseline_minutes: input.default_baseline_minutes,
    baseline_source: input.baseline_source ?? null,
    hourly_rate_micros:
      input.hourly_rate === undefined || input.hourly_rate === null ? null : toMicros(input.hourly_rate),
    status: 'active',
    created_at: ctx.clock.now().getTime(),
    archived_at: null,
  };
  return ctx.db.transaction().execute(async (trx) => {
    // ON CONFLICT rather than read-then-insert: two concurrent creates of one key get one 201
    // and one 422, never a 500.
    const inserted = await trx
      .insertInto('custom_task_types')
      .values(row)
      .onConflict((oc) => oc.columns(['org_id', 'key']).doNothing())
      .executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 0) {
      throw validationError('/body/key', 'is already used by a custom task type of the organisation');
    }
    // A new type's baseline and rate apply from the beginning: an event dated before its
    // creation, tracked afterwards, is priced with them.
    const trxCtx = { ...ctx, db: trx };
    await recordVersion(trxCtx, {
      kind: 'custom_baseline',
      key: row.key,
      value: row.default_baseline_minutes,
      effectiveFrom: 0,
    });
    if (row.hourly_rate_micros !== null) {
      await recordVersion(trxCtx, {
        kind: 'custom_hourly_rate',
        key: row.key,
        value: row.hourly_rate_micros,
        effectiveFrom: 0,
      });
    }
    const record = customRecord(row, { history: await loadHistory(trx, ctx.org.id), now: row.created_at });
    await recordAudit(
      { ...ctx, db: trx },
      { action: 'task_type.created', target: `task_type:${row.key}`, before: null, after: record },
    );
    return record;
  });
}

/** Soft-deletes a custom type; archiving one already archived answers it again, unchanged. */
export async function archiveTaskType({ ctx, key }: { ctx: OrgCtx; key: string }): Promise<TaskTypeRecord> {
  requireRole(ctx, 'admin');
  if (findBuiltin(key)) {
    throw new AppError(
      'cannot_archive_builtin',
      `"${key}" is a built-in task type and cannot be archived; to go back to its default baseline, remove its override.`,
    );
  }
  return ctx.db.transaction().execute(async (trx) => {
    const row = await findCustomTaskType(trx, ctx.org.id, key);
    if (!row) throw notFound(`Task type "${key}"`);
    const at = { history: await loadHistory(trx, ctx.org.id), now: ctx.clock.now().getTime() };
    if (row.status === 'archived') return customRecord(row, at);
    const archivedAt = ctx.clock.now().getTime();
    // Guarded by status so a concurrent archive writes one audit row, not two.
    const updated = await trx
      .updateTable('custom_task_types')
      .set({ status: 'archived', archived_at: archivedAt })
      .where('org_id', '=', ctx.org.id)
      .where('key', '=', key)
      .where('status', '=', 'active')
      .executeTakeFirst();
    const after = customRecord({ ...row, status: 'archived', archived_at: archivedAt }, at);
    if (Number(updated.numUpdatedRows) > 0) {
      await recordAudit(
        { ...ctx, db: trx },
        { action: 'task_type.archived', target: `task_type:${key}`, before: customRecord(row, at), after },
      );
    }
    return after;
  });
}
