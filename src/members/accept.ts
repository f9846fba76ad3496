import type { OrgCtx, ServiceCtx } from '../context.js';
import { AppError } from '../errors.js';
import { recordAudit } from '../audit/audit-log.js';
import { checkPassword } from '../accounts/password-policy.js';
import type { Role } from '../accounts/roles.js';
import { addMembership, createAccount, findAccountRowByEmail, membershipIn } from '../accounts/store.js';
import { getOrganization, type Organization } from '../orgs/organizations.js';
import { inTransaction } from '../storage/db.js';
import type { InvitationRow } from '../storage/schema.js';
import { invitationStatus, tokenHash, type InvitationStatus } from './invitations.js';

/** Longest token a link may carry (ours are 43 characters); longer ones are not looked up. */
const MAX_TOKEN = 100;

export type InvitationLookup =
  | {
      status: 'pending';
      invitation: InvitationRow;
      org: Organization;
      /** The account of the invited e-mail, when it has one. */
      account: { id: string; email: string; hasPassword: boolean } | null;
    }
  | { status: Exclude<InvitationStatus, 'pending'> | 'unknown'; org: Organization | null };

/** What a link's token opens: the pending invitation with its organisation, or why not. */
export async function lookupInvitation(ctx: ServiceCtx, token: string): Promise<InvitationLookup> {
  if (token === '' || token.length > MAX_TOKEN) return { status: 'unknown', org: null };
  const row = await ctx.db
    .selectFrom('invitations')
    .selectAll()
    .where('token_hash', '=', tokenHash(token))
    .executeTakeFirst();
  if (!row) return { status: 'unknown', org: null };
  const org = await getOrganization({ ctx, id: row.org_id });
  const status = invitationStatus(row, ctx.clock.now().getTime());
  if (status !== 'pending') return { status, org };
  const account = await findAccountRowByEmail(ctx, row.email);
  return {
    status,
    invitation: row,
    org,
    account: account
      ? { id: account.id, email: account.email, hasPassword: account.password_hash !== null }
      : null,
  };
}

export type Acceptance =
  /** A new person: their account is created with this name and password. */
  | { kind: 'new'; name: string; password: string }
  /** The person whose session made the request (an existing account). */
  | { kind: 'signed_in'; accountId: string };

/**
 * Accepts the invitation of `token`, once: in one transaction the invitation is marked accepted
 * (only if still pending), the account created when the e-mail has none (password policy
 * checked), and the membership added with the invitation's role. An e-mail that already has an
 * account must accept from that account's session. A person who is already a member keeps
 * their role. Returns the account and organisation to sign in to.
 */
export async function acceptInvitation({
  ctx,
  token,
  acceptance,
}: {
  ctx: ServiceCtx;
  token: string;
  acceptance: Acceptance;
}): Promise<{ accountId: string; org: Organization; role: Role }> {
  const closed = (why: string) => new AppError('invitation_closed', why);
  if (token === '' || token.length > MAX_TOKEN) throw closed('This invitation link is not valid.');
  const hash = tokenHash(token);
  const peek = await ctx.db
    .selectFrom('invitations')
    .select('email')
    .where('token_hash', '=', hash)
    .executeTakeFirst();
  // Fails fast, outside the transaction, on a password the policy refuses.
  if (peek && acceptance.kind === 'new') checkPassword(acceptance.password, peek.email);

  return inTransaction(ctx.db, async (trx) => {
    const tx = { ...ctx, db: trx };
    const now = ctx.clock.now().getTime();
    const row = await trx
      .selectFrom('invitations')
      .selectAll()
      .where('token_hash', '=', hash)
      .executeTakeFirst();
    if (!row) throw closed('This invitation link is not valid.');
    const status = invitationStatus(row, now);
    if (status !== 'pending') throw closed(`This invitation has been ${status}.`);

    // Single use: only the transaction that still finds it pending marks it (on PostgreSQL a
    // concurrent one waits for this row, then finds it accepted).
    const marked = await trx
      .updateTable('invitations')
      .set({ accepted_at: now })
      .where('id', '=', row.id)
      .where('token_hash', '=', hash)
      .where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    if (Number(marked.numUpdatedRows) !== 1) throw closed('This invitation has already been used.');

    const existing = await findAccountRowByEmail(tx, row.email);
    let accountId: string;
    if (existing) {
      if (acceptance.kind !== 'signed_in' || acceptance.accountId !== existing.id) {
        throw new AppError('insufficient_role', `Sign in as ${row.email} to accept this invitation.`);
      }
      accountId = existing.id;
    } else {
      if (acceptance.kind !== 'new') {
        throw new AppError('validation_error', 'Choose a name and a password to create your account.');
      }
      const name = acceptance.name.trim().slice(0, 200);
      accountId = (await createAccount({ ctx: tx, email: row.email, name, password: acceptance.password }))
        .id;
    }

    await trx
      .updateTable('invitations')
      .set({ accepted_account_id: accountId })
      .where('id', '=', row.id)
      .execute();

    const org = await getOrganization({ ctx: tx, id: row.org_id });
    const current = await membershipIn(tx, org.id, accountId);
    const role = current?.role ?? (row.role as Role);
    if (!current) await addMembership({ ctx: tx, orgId: org.id, accountId, role });
    const orgCtx: OrgCtx = {
      ...tx,
      org,
      actorKeyId: null,
      actor: { kind: 'person', accountId, email: row.email, role },
    };
    await recordAudit(orgCtx, {
      action: 'invitation.accepted',
      target: `invitation:${row.id}`,
      before: null,
      after: { email: row.email, role, account_id: accountId, new_account: !existing },
    });
    return { accountId, org, role };
  });
}
