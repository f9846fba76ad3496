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
