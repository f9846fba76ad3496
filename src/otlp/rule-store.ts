import type { OrgCtx } from '../context.js';
import type { DbOrTrx } from '../storage/db.js';
import { orderRules, type MappingRule, type RuleField, type RuleKind } from './rules.js';
import { otlpDb, type OtlpTables } from './tables.js';

export type RuleRow = OtlpTables['otlp_mapping_rules'];

export function ruleView(row: RuleRow): MappingRule {
  return {
    id: row.id,
    kind: row.kind as RuleKind,
    field: row.field as RuleField,
    attribute: row.attribute === '' ? null : row.attribute,
    value: row.value === '' ? null : row.value,
    task_type: row.task_type === '' ? null : row.task_type,
    created_at: new Date(Number(row.created_at)).toISOString(),
  };
}

/** The organisation's rules, in the order they are tried (rules.ts). */
export async function loadRules(db: DbOrTrx, orgId: string): Promise<MappingRule[]> {
  const rows = await otlpDb(db)
    .selectFrom('otlp_mapping_rules')
    .selectAll()
    .where('org_id', '=', orgId)
    .execute();
  return orderRules(rows.map(ruleView));
}

/**
 * How long an organisation's rules are read from this process's memory. Rules change rarely and
 * every export reads them; a change made through this process is seen at once (forgetRules), one
 * made through another instance within this bound.
 */
export const RULES_CACHE_MS = 2_000;
const MAX_CACHED_ORGS = 10_000;

const cached = new Map<string, { db: object; at: number; rules: Promise<MappingRule[]> }>();

/** The organisation's rules (loadRules), at most RULES_CACHE_MS old. */
export function cachedRules(ctx: OrgCtx): Promise<MappingRule[]> {
  const now = Date.now();
  const entry = cached.get(ctx.org.id);
  if (entry && entry.db === ctx.db && now - entry.at < RULES_CACHE_MS) return entry.rules;
  if (cached.size >= MAX_CACHED_ORGS) cached.clear();
  const rules = loadRules(ctx.db, ctx.org.id);
  cached.set(ctx.org.id, { db: ctx.db, at: now, rules });
  // A failed read is not kept.
  rules.catch(() => {
    if (cached.get(ctx.org.id)?.rules === rules) cached.delete(ctx.org.id);
  });
  return rules;
}

/** After a change of the organisation's rules: the next export reads them again. */
export function forgetRules(orgId: string): void {
  cached.delete(orgId);
}
