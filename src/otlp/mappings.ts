import { requireRole } from '../accounts/authorize.js';
import { recordAudit } from '../audit/audit-log.js';
import { findBuiltin } from '../catalogue/builtins.js';
import { findCustomTaskType } from '../catalogue/store.js';
import type { OrgCtx } from '../context.js';
import { AppError, notFound, validationError } from '../errors.js';
import { ulid } from '../ids.js';
import { inTransaction } from '../storage/db.js';
import { forgetRules, loadRules, ruleView, type RuleRow } from './rule-store.js';
import { RULE_FIELDS, type MappingRule, type RuleField, type RuleKind } from './rules.js';
import { otlpDb } from './tables.js';
import { retryUnresolvedRuns } from './unresolved.js';

/** Rules an organisation may have (each export is matched against all of them). */
export const MAX_RULES = 500;

export interface MappingRuleInput {
  kind: RuleKind;
  field?: RuleField;
  attribute?: string;
  value?: string;
  task_type?: string;
}

export async function listMappingRules({ ctx }: { ctx: OrgCtx }): Promise<MappingRule[]> {
  return loadRules(ctx.db, ctx.org.id);
}

/** A task type the organisation can track with now: a built-in, or an active custom type. */
async function checkTaskType(ctx: OrgCtx, key: string): Promise<void> {
  if (findBuiltin(key)) return;
  const custom = await findCustomTaskType(ctx.db, ctx.org.id, key);
  if (custom?.status === 'active') return;
  throw new AppError('unknown_task_type', `There is no active task type ${JSON.stringify(key)}.`, [
    { path: '/body/task_type', message: 'is not a built-in or active custom task type' },
  ]);
}

function normalise(input: MappingRuleInput): Omit<RuleRow, 'id' | 'org_id' | 'created_at'> {
  if (input.kind === 'client_id') {
    if (input.field !== undefined && input.field !== 'resource_attribute')
      throw validationError('/body/field', 'must be resource_attribute for a client_id rule');
    if (input.attribute === undefined) throw validationError('/body/attribute', 'is required');
    if (input.value !== undefined) throw validationError('/body/value', 'is not taken by a client_id rule');
    if (input.task_type !== undefined)
      throw validationError('/body/task_type', 'is not taken by a client_id rule');
    return {
      kind: 'client_id',
      field: 'resource_attribute',
      attribute: input.attribute,
      value: '',
      task_type: '',
    };
  }
  if (input.field === undefined) throw validationError('/body/field', 'is required');
  if (input.value === undefined) throw validationError('/body/value', 'is required');
  if (input.task_type === undefined) throw validationError('/body/task_type', 'is required');
  if (input.field === 'resource_attribute') {
    if (input.attribute === undefined)
      throw validationError('/body/attribute', 'is required with resource_attribute');
  } else if (input.attribute !== undefined) {
    throw validationError('/body/attribute', 'is taken only with field resource_attribute');
  }
  return {
    kind: 'task_type',
    field: input.field,
    attribute: input.attribute ?? '',
    value: input.value,
    task_type: input.task_type,
  };
}

/**
 * Adds a rule, then tracks the unresolved runs it (with the other rules) now resolves: a rule
 * added for a run listed as unresolved brings that run in. Returns the rule and how many runs
 * were tracked.
 */
export async function createMappingRule({
  ctx,
  input,
}: {
  ctx: OrgCtx;
  input: MappingRuleInput;
}): Promise<{ rule: MappingRule; resolvedRuns: number }> {
  requireRole(ctx, 'admin');
  const fields = normalise(input);
  if (fields.kind === 'task_type') await checkTaskType(ctx, fields.task_type);
  const at = ctx.clock.now();
  const row: RuleRow = { id: `map_${ulid(at)}`, org_id: ctx.org.id, created_at: at.getTime(), ...fields };
  const rule = await inTransaction(ctx.db, async (trx) => {
    const { count } = await otlpDb(trx)
      .selectFrom('otlp_mapping_rules')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .where('org_id', '=', ctx.org.id)
      .executeTakeFirstOrThrow();
    if (Number(count) >= MAX_RULES)
      throw new AppError('validation_error', `An organisation has at most ${MAX_RULES} mapping rules.`);
    const inserted = await otlpDb(trx)
      .insertInto('otlp_mapping_rules')
      .values(row)
      .onConflict((oc) => oc.columns(['org_id', 'kind', 'field', 'attribute', 'value']).doNothing())
      .executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 0) {
      throw validationError(
        fields.kind === 'client_id' ? '/body/attribute' : '/body/value',
        'already has a rule; delete that one first',
      );
    }
    const view = ruleView(row);
    await recordAudit(
      { ...ctx, db: trx },
      { action: 'otlp_mapping.created', target: `otlp_mapping:${row.id}`, before: null, after: view },
    );
    return view;
  });
  forgetRules(ctx.org.id);
  const resolvedRuns = await retryUnresolvedRuns({ ctx });
  return { rule, resolvedRuns };
}

export async function deleteMappingRule({ ctx, id }: { ctx: OrgCtx; id: string }): Promise<MappingRule> {
  requireRole(ctx, 'admin');
  const deleted = await inTransaction(ctx.db, async (trx) => {
    const row = await otlpDb(trx)
      .selectFrom('otlp_mapping_rules')
      .selectAll()
      .where('org_id', '=', ctx.org.id)
      .where('id', '=', id)
      .executeTakeFirst();
    if (!row) throw notFound(`Mapping rule ${id}`);
    await otlpDb(trx)
      .deleteFrom('otlp_mapping_rules')
      .where('org_id', '=', ctx.org.id)
      .where('id', '=', id)
      .execute();
    const view = ruleView(row);
    await recordAudit(
      { ...ctx, db: trx },
      { action: 'otlp_mapping.deleted', target: `otlp_mapping:${id}`, before: view, after: null },
    );
    return view;
  });
  forgetRules(ctx.org.id);
  return deleted;
}

export { RULE_FIELDS };
