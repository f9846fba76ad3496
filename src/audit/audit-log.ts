import type { OrgCtx } from '../context.js';
import { newId } from '../ids.js';
import type { AuditLogRow } from '../storage/schema.js';
import { pageOf } from '../storage/pagination.js';

export type AuditAction =
  | 'task_type.override_set'
  | 'task_type.override_removed'
  | 'task_type.created'
  | 'task_type.archived'
  | 'webhook.created'
  | 'webhook.updated'
  | 'webhook.deleted'
  | 'webhook.deactivated'
  | 'api_key.created'
  | 'api_key.revoked'
  | 'otlp_mapping.created'
  | 'otlp_mapping.deleted'
  | 'budget.created'
  | 'budget.updated'
  | 'budget.deleted'
  | 'fixed_cost.created'
  | 'fixed_cost.updated'
  | 'fixed_cost.deleted'
  | 'event.reviewed'
  | 'figures.restated';

export interface AuditEntry {
  action: AuditAction;
  /** What was acted on, e.g. `task_type:dev_code_review` or `webhook:wh_…`. */
  target: string;
  before: unknown;
  after: unknown;
  reason?: string | null;
}

/** Writes one audit row with `ctx.db`: call it inside the transaction of the change it records. */
export async function recordAudit(ctx: OrgCtx, entry: AuditEntry): Promise<void> {
  const at = ctx.clock.now();
  await ctx.db
    .insertInto('audit_log')
    .values({
      id: newId('aud', at),
      org_id: ctx.org.id,
      at: at.getTime(),
      actor_key_id: ctx.actorKeyId,
      action: entry.action,
      target: entry.target,
      before: entry.before === undefined || entry.before === null ? null : JSON.stringify(entry.before),
      after: entry.after === undefined || entry.after === null ? null : JSON.stringify(entry.after),
      reason: entry.reason ?? null,
    })
    .execute();
}

export function auditView(row: AuditLogRow) {
  return {
    id: row.id,
    at: new Date(Number(row.at)).toISOString(),
    actor_key_id: row.actor_key_id,
    action: row.action,
    target: row.target,
    before: row.before === null ? null : (JSON.parse(row.before) as unknown),
    after: row.after === null ? null : (JSON.parse(row.after) as unknown),
    reason: row.reason,
  };
}

/** Newest first; the cursor is the id of the last entry of the previous page. */
export async function listAuditLog({ ctx, limit, cursor }: { ctx: OrgCtx; limit: number; cursor?: string }) {
  let query = ctx.db.selectFrom('audit_log').selectAll().where('org_id', '=', ctx.org.id);
  if (cursor !== undefined) query = query.where('id', '<', cursor);
  const rows = await query
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  const { page, next_cursor } = pageOf(rows, limit);
  return { data: page.map(auditView), next_cursor };
}
