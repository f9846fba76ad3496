import { createHash, randomBytes } from 'node:crypto';
import type { OrgCtx, ServiceCtx } from '../context.js';
import { AppError, notFound, validationError } from '../errors.js';
import { ulid } from '../ids.js';
import { recordAudit } from '../audit/audit-log.js';
import { actorAccountId, actorOf, requireRole } from '../accounts/authorize.js';
import { isRole, type Role } from '../accounts/roles.js';
import { normalizeEmail } from '../accounts/store.js';
import { queueEmails } from '../email/outbox.js';
import { inTransaction, type DbOrTrx } from '../storage/db.js';
import { pageOf } from '../storage/pagination.js';
import type { InvitationRow } from '../storage/schema.js';
import { invitationEmail } from './invitation-email.js';

/** An invitation's link works for 7 days from when it was (last) sent. */
export const INVITATION_TTL_MS = 7 * 24 * 60 * 60_000;
export const INVITATION_STATUSES = ['pending', 'accepted', 'revoked', 'expired'] as const;
export type InvitationStatus = (typeof INVITATION_STATUSES)[number];

export const tokenHash = (token: string) => createHash('sha256').update(token).digest('hex');

export function invitationStatus(row: InvitationRow, now: number): InvitationStatus {
  if (row.accepted_at !== null) return 'accepted';
  if (row.revoked_at !== null) return 'revoked';
  return Number(row.expires_at) <= now ? 'expired' : 'pending';
}

const iso = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString());

export function invitationView(row: InvitationRow, now: number) {
  return {
    id: row.id,
    email: row.email,
    role: row.role as Role,
    status: invitationStatus(row, now),
    invited_by_account_id: row.invited_by_account_id,
    invited_by_key_id: row.invited_by_key_id,
    sent_count: Number(row.sent_count),
    last_sent_at: iso(row.last_sent_at),
    created_at: iso(row.created_at) as string,
    expires_at: iso(row.expires_at) as string,
    accepted_at: iso(row.accepted_at),
    accepted_account_id: row.accepted_account_id,
    revoked_at: iso(row.revoked_at),
  };
}
export type InvitationView = ReturnType<typeof invitationView>;

/** The link of an invitation's token, under the dashboard of TALLY_PUBLIC_URL. */
export function invitationUrl(ctx: ServiceCtx, token: string): string {
  return `${ctx.config.publicUrl}/dashboard/invitations/${token}`;
}

/** Who may act on an invitation for `role`: owners and admins, and only owners for owners. */
function requireInviter(ctx: OrgCtx, role: Role): void {
  requireRole(ctx, 'admin');
  if (role === 'owner') requireRole(ctx, 'owner');
}

async function isMember(db: DbOrTrx, orgId: string, email: string): Promise<boolean> {
  const row = await db
    .selectFrom('memberships')
    .innerJoin('accounts', 'accounts.id', 'memberships.account_id')
    .select('memberships.account_id')
    .where('memberships.org_id', '=', orgId)
    .where('accounts.email', '=', email)
    .executeTakeFirst();
  return row !== undefined;
}

/** Gives `row` a new token and expiry, queues its e-mail; the old link stops working. */
async function send(ctx: OrgCtx, db: DbOrTrx, row: InvitationRow, role: Role) {
  const at = ctx.clock.now();
  const token = randomBytes(32).toString('base64url');
  const updated = await db
    .updateTable('invitations')
    .set({
      role,
      token_hash: tokenHash(token),
      sent_count: Number(row.sent_count) + 1,
      last_sent_at: at.getTime(),
      expires_at: at.getTime() + INVITATION_TTL_MS,
    })
    .where('id', '=', row.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  await queueInvitationEmail(ctx, db, updated, token);
  return { row: updated, token };
}

async function queueInvitationEmail(ctx: OrgCtx, db: DbOrTrx, row: InvitationRow, token: string) {
  const mail = invitationEmail({
    orgName: ctx.org.name,
    role: row.role as Role,
    url: invitationUrl(ctx, token),
    expiresAt: new Date(Number(row.expires_at)),
  });
  await queueEmails({
    db,
    at: ctx.clock.now(),
    emails: [{ orgId: ctx.org.id, to: row.email, subject: mail.subject, body: mail.text, html: mail.html }],
  });
}

/**
 * Invites `email` with `role`. An e-mail that is already a member is a 409 `already_member`; an
 * e-mail with a pending invitation gets that invitation again (resent with the role now asked,
 * a new link, the old one dead) rather than a second one. The e-mail is queued in the same
 * transaction; the link's token is returned only to the caller that prints it (the CLI).
 */
export async function createInvitation({
  ctx,
  input,
}: {
  ctx: OrgCtx;
  input: { email: string; role: string };
}): Promise<{ invitation: InvitationView; token: string; resent: boolean }> {
  const email = normalizeEmail(input.email, '/body/email');
  if (!isRole(input.role)) throw validationError('/body/role', 'must be owner, admin or analyst');
  const role = input.role;
  requireInviter(ctx, role);
  return inTransaction(ctx.db, async (trx) => {
    const tx = { ...ctx, db: trx };
    if (await isMember(trx, ctx.org.id, email)) {
      throw new AppError('already_member', `${email} is already a member of this organisation.`);
    }
    const now = ctx.clock.now().getTime();
    const pending = await trx
      .selectFrom('invitations')
      .selectAll()
      .where('org_id', '=', ctx.org.id)
      .where('email', '=', email)
      .where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', now)
      .orderBy('id', 'desc')
      .executeTakeFirst();
    if (pending) {
      if (pending.role === 'owner') requireInviter(ctx, 'owner');
      const { row, token } = await send(tx, trx, pending, role);
      await recordAudit(tx, {
        action: 'invitation.resent',
        target: `invitation:${row.id}`,
        before: { email, role: pending.role },
        after: { email, role },
      });
      return { invitation: invitationView(row, now), token, resent: true };
    }
    const actor = actorOf(ctx);
    const token = randomBytes(32).toString('base64url');
    const row = await trx
      .insertInto('invitations')
      .values({
        id: `inv_${ulid(ctx.clock.now())}`,
        org_id: ctx.org.id,
        email,
        role,
        token_hash: tokenHash(token),
        invited_by_account_id: actorAccountId(actor),
        invited_by_key_id: actor.kind === 'api_key' ? actor.keyId : null,
        sent_count: 1,
        last_sent_at: now,
        created_at: now,
        expires_at: now + INVITATION_TTL_MS,
        accepted_at: null,
        accepted_account_id: null,
        revoked_at: null,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await queueInvitationEmail(tx, trx, row, token);
    await recordAudit(tx, {
      action: 'invitation.created',
      target: `invitation:${row.id}`,
      before: null,
      after: { email, role },
    });
    return { invitation: invitationView(row, now), token, resent: false };
  });
}

async function invitationOf(db: DbOrTrx, orgId: string, id: string): Promise<InvitationRow> {
  const row = await db
    .selectFrom('invitations')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .executeTakeFirst();
  if (!row) throw notFound('The invitation');
  return row;
}

export async function getInvitation({ ctx, id }: { ctx: OrgCtx; id: string }): Promise<InvitationView> {
  return invitationView(await invitationOf(ctx.db, ctx.org.id, id), ctx.clock.now().getTime());
}

/**
 * Sends an invitation again with a new link (the old one dies) valid 7 days from now. An expired
 * invitation may be resent; an accepted or revoked one is a 409 `invitation_closed`.
 */
export async function resendInvitation({
  ctx,
  id,
}: {
  ctx: OrgCtx;
  id: string;
}): Promise<{ invitation: InvitationView; token: string }> {
  return inTransaction(ctx.db, async (trx) => {
    const tx = { ...ctx, db: trx };
    const current = await invitationOf(trx, ctx.org.id, id);
    requireInviter(ctx, current.role as Role);
    const status = invitationStatus(current, ctx.clock.now().getTime());
    if (status === 'accepted' || status === 'revoked') {
      throw new AppError('invitation_closed', `The invitation was ${status}; invite the person again.`);
    }
    if (await isMember(trx, ctx.org.id, current.email)) {
      throw new AppError('already_member', `${current.email} is already a member of this organisation.`);
    }
    const { row, token } = await send(tx, trx, current, current.role as Role);
    await recordAudit(tx, {
      action: 'invitation.resent',
      target: `invitation:${row.id}`,
      before: { email: row.email, role: row.role },
      after: { email: row.email, role: row.role },
    });
    return { invitation: invitationView(row, ctx.clock.now().getTime()), token };
  });
}

/** Revokes a pending (or expired) invitation: its link stops working. Again is a no-op. */
export async function revokeInvitation({ ctx, id }: { ctx: OrgCtx; id: string }): Promise<InvitationView> {
  return inTransaction(ctx.db, async (trx) => {
    const tx = { ...ctx, db: trx };
    const current = await invitationOf(trx, ctx.org.id, id);
    requireInviter(ctx, current.role as Role);
    const now = ctx.clock.now().getTime();
    if (current.accepted_at !== null) {
      throw new AppError('invitation_closed', 'The invitation was accepted; remove the member instead.');
    }
    if (current.revoked_at !== null) return invitationView(current, now);
    const row = await trx
      .updateTable('invitations')
      .set({ revoked_at: now })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .where('accepted_at', 'is', null)
      .returningAll()
      .executeTakeFirst();
    if (!row) throw new AppError('invitation_closed', 'The invitation was accepted meanwhile.');
    await recordAudit(tx, {
      action: 'invitation.revoked',
      target: `invitation:${row.id}`,
      before: { email: row.email, role: row.role },
      after: null,
    });
    return invitationView(row, now);
  });
}

/** Newest first; `status` filters. Every role may read the list. */
export async function listInvitations({
  ctx,
  limit,
  cursor,
  status,
}: {
  ctx: OrgCtx;
  limit: number;
  cursor?: string;
  status?: InvitationStatus;
}): Promise<{ data: InvitationView[]; next_cursor: string | null }> {
  const now = ctx.clock.now().getTime();
  let query = ctx.db.selectFrom('invitations').selectAll().where('org_id', '=', ctx.org.id);
  if (cursor !== undefined) query = query.where('id', '<', cursor);
  if (status === 'accepted') query = query.where('accepted_at', 'is not', null);
  else if (status === 'revoked')
    query = query.where('accepted_at', 'is', null).where('revoked_at', 'is not', null);
  else if (status !== undefined) {
    query = query
      .where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null)
      .where('expires_at', status === 'pending' ? '>' : '<=', now);
  }
  const rows = await query
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  const { page, next_cursor } = pageOf(rows, limit);
  return { data: page.map((r) => invitationView(r, now)), next_cursor };
}
