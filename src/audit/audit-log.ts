import { actorAccountId, actorOf } from '../accounts/authorize.js';
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
  | 'period.closed'
  | 'period.reopened'
  | 'invitation.created'
  | 'invitation.resent'
  | 'invitation.revoked'
  | 'invitation.accepted'
  | 'member.role_changed'
  | 'member.removed'
  | 'sso.configured'
  | 'sso.removed'
  | 'sso.signed_in'
  | 'sso.sign_in_failed'
  | 'account.signed_in'
  | 'account.sign_in_failed'
  | 'account.signed_out'
  | 'account.password_changed'
  | 'account.password_reset'
  | 'account.session_ended'
  | 'account.first_owner_created'
  | 'account.org_switched'
  | 'assumption.changed'
  | 'assumption.restated'
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

/**
 * Writes one audit row with `ctx.db`: call it inside the transaction of the change it records.
 * It names the person behind the change: the one signed in, or the creator of the API key used.
 */
export async function recordAudit(ctx: OrgCtx, entry: AuditEntry): Promise<void> {
  const at = ctx.clock.now();
  const actor = actorOf(ctx);
  let accountId = actorAccountId(actor);
  if (accountId === null && actor.kind === 'api_key') {
    // The request path does not read a key's creator (it is only needed here, for a change).
    const key = await ctx.db
      .selectFrom('api_keys')
      .select('created_by_account_id')
      .where('id', '=', actor.keyId)
      .executeTakeFirst();
    accountId = key?.created_by_account_id ?? null;
  }
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
      actor_account_id: accountId,
    })
    .execute();
}

export function auditView(row: AuditLogRow & { actor_email?: string | null }) {
  return {
    id: row.id,
    at: new Date(Number(row.at)).toISOString(),
    actor_key_id: row.actor_key_id,
    actor_account_id: row.actor_account_id,
    actor_email: row.actor_email ?? null,
    action: row.action,
    target: row.target,
    before: row.before === null ? null : (JSON.parse(row.before) as unknown),
    after: row.after === null ? null : (JSON.parse(row.after) as unknown),
    reason: row.reason,
  };
}

/** Newest first; the cursor is the id of the last entry of the previous page. */
export async function listAuditLog({ ctx, limit, cursor }: { ctx: OrgCtx; limit: number; cursor?: string }) {
  let query = ctx.db
    .selectFrom('audit_log')
    .leftJoin('accounts', 'accounts.id', 'audit_log.actor_account_id')
    .selectAll('audit_log')
    .select('accounts.email as actor_email')
    .where('audit_log.org_id', '=', ctx.org.id);
  if (cursor !== undefined) query = query.where('audit_log.id', '<', cursor);
  const rows = await query
    .orderBy('audit_log.id', 'desc')
    .limit(limit + 1)
    .execute();
  const { page, next_cursor } = pageOf(rows, limit);
  return { data: page.map(auditView), next_cursor };
}
