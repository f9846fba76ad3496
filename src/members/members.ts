import { sql } from 'kysely';
import type { OrgCtx } from '../context.js';
import { notFound, validationError } from '../errors.js';
import { recordAudit } from '../audit/audit-log.js';
import { requireRole } from '../accounts/authorize.js';
import { isRole, type Role } from '../accounts/roles.js';
import { ensureOwnerRemains } from '../accounts/store.js';
import { inTransaction, type DbOrTrx } from '../storage/db.js';

export interface MemberView {
  account_id: string;
  email: string;
  name: string | null;
  role: Role;
  /** When the person became a member. */
  since: string;
  /** The latest activity of the person's live sessions in this organisation; null without one. */
  last_seen_at: string | null;
}

const iso = (ms: number) => new Date(Number(ms)).toISOString();

function memberQuery(db: DbOrTrx, orgId: string) {
  return db
    .selectFrom('memberships')
    .innerJoin('accounts', 'accounts.id', 'memberships.account_id')
    .select((eb) => [
      'memberships.account_id',
      'accounts.email',
      'accounts.name',
      'memberships.role',
      'memberships.created_at',
      eb
        .selectFrom('account_sessions')
        .select(sql<number | null>`max(account_sessions.last_seen_at)`.as('seen'))
        .whereRef('account_sessions.account_id', '=', 'memberships.account_id')
        .where('account_sessions.org_id', '=', orgId)
        .as('last_seen_at'),
    ])
    .where('memberships.org_id', '=', orgId);
}

type MemberRow = Awaited<ReturnType<ReturnType<typeof memberQuery>['executeTakeFirstOrThrow']>>;

function memberView(row: MemberRow): MemberView {
  return {
    account_id: row.account_id,
    email: row.email,
    name: row.name,
    role: row.role as Role,
    since: iso(row.created_at),
    last_seen_at: row.last_seen_at === null ? null : iso(row.last_seen_at),
  };
}

/** Members by account id, newest account first; the cursor is the last account id shown. */
export async function listMembers({
  ctx,
  limit,
  cursor,
}: {
  ctx: OrgCtx;
  limit: number;
  cursor?: string;
}): Promise<{ data: MemberView[]; next_cursor: string | null }> {
  let query = memberQuery(ctx.db, ctx.org.id);
  if (cursor !== undefined) query = query.where('memberships.account_id', '<', cursor);
  const rows = await query
    .orderBy('memberships.account_id', 'desc')
    .limit(limit + 1)
    .execute();
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return { data: page.map(memberView), next_cursor: rows.length > limit && last ? last.account_id : null };
}

async function memberOf(db: DbOrTrx, orgId: string, accountId: string): Promise<MemberRow> {
  const row = await memberQuery(db, orgId).where('memberships.account_id', '=', accountId).executeTakeFirst();
  if (!row) throw notFound('The member');
  return row;
}

export async function getMember({ ctx, accountId }: { ctx: OrgCtx; accountId: string }): Promise<MemberView> {
  return memberView(await memberOf(ctx.db, ctx.org.id, accountId));
}

/** A member of this organisation found by e-mail (for the CLI), or a 404. */
export async function memberByEmail({ ctx, email }: { ctx: OrgCtx; email: string }): Promise<MemberView> {
  const row = await memberQuery(ctx.db, ctx.org.id)
    .where('accounts.email', '=', email.trim().toLowerCase())
    .executeTakeFirst();
  if (!row) throw notFound('The member');
  return memberView(row);
}

/**
 * Locks the organisation's owner memberships on PostgreSQL (SQLite has one writer), so that two
 * owners demoted or removed at once cannot both see the other still there and leave none.
 */
async function lockOwners(ctx: OrgCtx, db: DbOrTrx): Promise<void> {
  if (ctx.engine !== 'postgres') return;
  await db
    .selectFrom('memberships')
    .select('account_id')
    .where('org_id', '=', ctx.org.id)
    .where('role', '=', 'owner')
    .forUpdate()
    .execute();
}

/** Who may change a member whose role is or becomes `role`: owners and admins; owners only for owners. */
function requireManager(ctx: OrgCtx, ...roles: Role[]): void {
  requireRole(ctx, 'admin');
  if (roles.includes('owner')) requireRole(ctx, 'owner');
}

/** Changes a member's role. Demoting the last owner is a 409 `last_owner`. */
export async function changeMemberRole({
  ctx,
  accountId,
  role,
}: {
  ctx: OrgCtx;
  accountId: string;
  role: string;
}): Promise<MemberView> {
  if (!isRole(role)) throw validationError('/body/role', 'must be owner, admin or analyst');
  return inTransaction(ctx.db, async (trx) => {
    const tx = { ...ctx, db: trx };
    const current = await memberOf(trx, ctx.org.id, accountId);
    const before = current.role as Role;
    requireManager(ctx, before, role);
    if (before === role) return memberView(current);
    if (before === 'owner') await lockOwners(ctx, trx);
    await trx
      .updateTable('memberships')
      .set({ role, updated_at: ctx.clock.now().getTime() })
      .where('org_id', '=', ctx.org.id)
      .where('account_id', '=', accountId)
      .execute();
    if (before === 'owner') await ensureOwnerRemains(tx, ctx.org.id);
    await recordAudit(tx, {
      action: 'member.role_changed',
      target: `account:${accountId}`,
      before: { email: current.email, role: before },
      after: { email: current.email, role },
    });
    return memberView({ ...current, role });
  });
}

/**
 * Removes a member: the membership goes, and with it the person's sessions in this organisation
 * (the next request of such a session finds none). Removing the last owner is a 409 `last_owner`.
 */
export async function removeMember({ ctx, accountId }: { ctx: OrgCtx; accountId: string }): Promise<void> {
  await inTransaction(ctx.db, async (trx) => {
    const tx = { ...ctx, db: trx };
    const current = await memberOf(trx, ctx.org.id, accountId);
    requireManager(ctx, current.role as Role);
    if (current.role === 'owner') await lockOwners(ctx, trx);
    await trx
      .deleteFrom('memberships')
      .where('org_id', '=', ctx.org.id)
      .where('account_id', '=', accountId)
      .execute();
    if (current.role === 'owner') await ensureOwnerRemains(tx, ctx.org.id);
    await trx
      .deleteFrom('account_sessions')
      .where('org_id', '=', ctx.org.id)
      .where('account_id', '=', accountId)
      .execute();
    await recordAudit(tx, {
      action: 'member.removed',
      target: `account:${accountId}`,
      before: { email: current.email, role: current.role },
      after: null,
    });
  });
}
