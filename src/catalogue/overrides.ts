import { requireRole } from '../accounts/authorize.js';
import { sql } from 'kysely';
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
 * Sets the organisation's baseline for a built-in, replacing an earlier override. Only events
 * tracked afterwards use it; stored events keep the baseline they were computed with.
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
  const row: OverrideRow = {
    org_id: ctx.org.id,
    task_key: key,
    baseline_minutes_override: input.baseline_minutes_override,
    reason: input.reason ?? null,
    updated_at: ctx.clock.now().getTime(),
  };
  return ctx.db.transaction().execute(async (trx) => {
    const before = await findOverride(trx, ctx.org.id, key);
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
    await recordAudit(
      { ...ctx, db: trx },
      {
        action: 'task_type.override_set',
        target: `task_type:${key}`,
        before: before ? overrideView(before, builtin) : null,
        after: overrideView(row, builtin),
        reason: row.reason,
      },
    );
    return builtinRecord(builtin, row);
  });
}

/** Goes back to the built-in default baseline. */
export async function removeOverride({ ctx, key }: { ctx: OrgCtx; key: string }): Promise<TaskTypeRecord> {
  requireRole(ctx, 'admin');
  const builtin = findBuiltin(key);
  const noOverride = () => new AppError('not_found', `No baseline override is set for task type "${key}".`);
  if (!builtin) {
    if (await findCustomTaskType(ctx.db, ctx.org.id, key)) throw noOverride();
    throw notFound(`Task type "${key}"`);
  }
  return ctx.db.transaction().execute(async (trx) => {
    const before = await findOverride(trx, ctx.org.id, key);
    if (!before) throw noOverride();
    const deleted = await trx
      .deleteFrom('task_type_overrides')
      .where('org_id', '=', ctx.org.id)
      .where('task_key', '=', key)
      .executeTakeFirst();
    // A concurrent removal got there first: answer as if none was set, with one audit row overall.
    if (Number(deleted.numDeletedRows) === 0) throw noOverride();
    await recordAudit(
      { ...ctx, db: trx },
      {
        action: 'task_type.override_removed',
        target: `task_type:${key}`,
        before: overrideView(before, builtin),
        after: null,
      },
    );
    return builtinRecord(builtin, undefined);
  });
}

/**
 * PostgreSQL: the task-type overrides of the `organizations` row of the enclosing query, as JSON
 * text `[[task_key, minutes], …]`. The API key lookup reads them with the key, so that tracking
 * need not read them in a round trip of its own (tracking/pipeline.ts); SQLite reads them in the
 * track transaction, where they cost no round trip.
 */
export const OVERRIDES_JSON = sql<OverridesJson>`(
  SELECT COALESCE(json_agg(json_build_array(o.task_key, o.baseline_minutes_override)), '[]')::text
  FROM task_type_overrides o WHERE o.org_id = organizations.id)`;
export type OverridesJson = string | null;

const decodedOverrides = new Map<string, { json: string; overrides: ReadonlyMap<string, number> }>();

/**
 * The overrides OVERRIDES_JSON read for organisation `orgId`, decoded once per organisation and
 * text (every request reads them); undefined when none were read (SQLite).
 */
export function decodeOverrides(orgId: string, json: OverridesJson): ReadonlyMap<string, number> | undefined {
  if (json === null) return undefined;
  const last = decodedOverrides.get(orgId);
  if (last?.json === json) return last.overrides;
  const overrides = new Map(JSON.parse(json) as Array<[string, number]>);
  if (decodedOverrides.size >= 10_000) decodedOverrides.clear();
  decodedOverrides.set(orgId, { json, overrides });
  return overrides;
}
