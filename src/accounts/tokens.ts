import { createHash, randomBytes } from 'node:crypto';
import type { ServiceCtx } from '../context.js';
import { queueEmails } from '../email/outbox.js';
import { AppError } from '../errors.js';
import { getOrganization } from '../orgs/organizations.js';
import { recordAudit } from '../audit/audit-log.js';
import { endOtherSessions } from './sessions.js';
import { checkPassword } from './password-policy.js';
import {
  addMembership,
  createAccount,
  findAccountRowByEmail,
  getAccount,
  membershipsOf,
  normalizeEmail,
  setPassword,
  type Account,
} from './store.js';

// Single-use links (account_tokens): a password reset (1 hour) and the first owner's account
// (7 days). The link carries a random token; the table keeps only its SHA-256.

export const RESET_TTL_MS = 60 * 60_000;
export const FIRST_OWNER_TTL_MS = 7 * 24 * 60 * 60_000;

type Kind = 'password_reset' | 'first_owner';

const hashOf = (token: string) => createHash('sha256').update(token).digest('hex');

async function issue(
  ctx: ServiceCtx,
  kind: Kind,
  fields: { accountId?: string | null; orgId?: string | null; email?: string | null },
  ttlMs: number,
): Promise<string> {
  const token = randomBytes(32).toString('base64url');
  const now = ctx.clock.now().getTime();
  await ctx.db
    .insertInto('account_tokens')
    .values({
      id: hashOf(token),
      kind,
      account_id: fields.accountId ?? null,
      org_id: fields.orgId ?? null,
      email: fields.email ?? null,
      created_at: now,
      expires_at: now + ttlMs,
      used_at: null,
    })
    .execute();
  return token;
}

export interface LiveToken {
  id: string;
  accountId: string | null;
  orgId: string | null;
  email: string | null;
}

/** The unused, unexpired token of `kind`, or null (any other token, malformed text included). */
export async function liveToken(ctx: ServiceCtx, kind: Kind, token: string): Promise<LiveToken | null> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return null;
  const row = await ctx.db
    .selectFrom('account_tokens')
    .selectAll()
    .where('id', '=', hashOf(token))
    .where('kind', '=', kind)
    .executeTakeFirst();
  if (!row || row.used_at !== null || Number(row.expires_at) <= ctx.clock.now().getTime()) return null;
  return { id: row.id, accountId: row.account_id, orgId: row.org_id, email: row.email };
}

/** Marks a token used; false when another request used it first (single use under races). */
async function consume(ctx: ServiceCtx, id: string): Promise<boolean> {
  const result = await ctx.db
    .updateTable('account_tokens')
    .set({ used_at: ctx.clock.now().getTime() })
    .where('id', '=', id)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

const GONE = 'This link has expired or has been used already. Ask for a new one.';

/** The first owner's link of an organisation (start-up on an empty database, `tally members create-owner`). */
export async function issueFirstOwnerLink(
  ctx: ServiceCtx,
  orgId: string,
  email: string | null = null,
): Promise<string> {
  await getOrganization({ ctx, id: orgId });
  const address = email === null ? null : normalizeEmail(email, '--email');
  const token = await issue(ctx, 'first_owner', { orgId, email: address }, FIRST_OWNER_TTL_MS);
  return `${ctx.config.publicUrl}/dashboard/first-owner/${token}`;
}

/**
 * Creates the account of a first-owner link and makes it owner of the link's organisation, once.
 * An e-mail that already has an account is refused (`tally members create-owner` makes an
 * existing person owner directly).
 */
export async function redeemFirstOwner(
  ctx: ServiceCtx,
  token: string,
  input: { email: string; password: string; name?: string | null },
): Promise<{ account: Account; orgId: string }> {
  const live = await liveToken(ctx, 'first_owner', token);
  if (!live || live.orgId === null) throw new AppError('not_found', GONE);
  const orgId = live.orgId;
  const email = normalizeEmail(live.email ?? input.email);
  checkPassword(input.password, email);
  return ctx.db.transaction().execute(async (trx) => {
    const inTrx = { ...ctx, db: trx };
    if (!(await consume(inTrx, live.id))) throw new AppError('not_found', GONE);
    if (await findAccountRowByEmail(inTrx, email)) {
      throw new AppError(
        'validation_error',
        'That e-mail address already has an account: sign in with it, or have the operator run tally members create-owner for it.',
        [{ path: '/email', message: 'already has an account' }],
      );
    }
    const account = await createAccount({ ctx: inTrx, email, name: input.name, password: input.password });
    await addMembership({ ctx: inTrx, orgId, accountId: account.id, role: 'owner' });
    const org = await getOrganization({ ctx: inTrx, id: orgId });
    await recordAudit(
      {
        ...inTrx,
        org,
        actorKeyId: null,
        actor: { kind: 'person', accountId: account.id, email, role: 'owner' },
      },
      {
        action: 'account.first_owner_created',
        target: `account:${account.id}`,
        before: null,
        after: { email },
      },
    );
    return { account, orgId };
  });
}

/**
 * Sends a reset link when the e-mail has a usable account with a membership; does nothing
 * otherwise. The caller answers the same either way.
 */
export async function requestPasswordReset(ctx: ServiceCtx, email: string): Promise<void> {
  const row = email.length <= 254 ? await findAccountRowByEmail(ctx, email) : undefined;
  if (!row || row.disabled_at !== null) return;
  const memberships = await membershipsOf(ctx, row.id);
  if (memberships.length === 0) return;
  const token = await issue(ctx, 'password_reset', { accountId: row.id, email: row.email }, RESET_TTL_MS);
  const link = `${ctx.config.publicUrl}/dashboard/password-reset/${token}`;
  await queueEmails({
    db: ctx.db,
    at: ctx.clock.now(),
    emails: [
      {
        orgId: null,
        to: row.email,
        subject: '[Tally] Set a new password',
        body: [
          'Someone (we hope you) asked to set a new password for your Tally account.',
          '',
          `Open this link within an hour to choose it; it works once:`,
          link,
          '',
          'If you did not ask, ignore this e-mail: your password stays as it is.',
        ].join('\n'),
      },
    ],
  });
}

/**
 * Sets a new password with a reset link, once, and ends every session of the person. Returns
 * the account and the organisation to sign in to.
 */
export async function resetPassword(
  ctx: ServiceCtx,
  token: string,
  password: string,
): Promise<{ account: Account; orgId: string }> {
  const live = await liveToken(ctx, 'password_reset', token);
  const account = live?.accountId ? await getAccount(ctx, live.accountId) : null;
  if (!live || !account || account.disabled) throw new AppError('not_found', GONE);
  checkPassword(password, account.email);
  const memberships = await membershipsOf(ctx, account.id);
  const first = memberships[0];
  if (!first) throw new AppError('not_found', GONE);
  return ctx.db.transaction().execute(async (trx) => {
    const inTrx = { ...ctx, db: trx };
    if (!(await consume(inTrx, live.id))) throw new AppError('not_found', GONE);
    await setPassword(inTrx, account, password);
    await endOtherSessions(inTrx, account.id, null);
    for (const m of memberships) {
      await recordAudit(
        {
          ...inTrx,
          org: await getOrganization({ ctx: inTrx, id: m.orgId }),
          actorKeyId: null,
          actor: { kind: 'person', accountId: account.id, email: account.email, role: m.role },
        },
        { action: 'account.password_reset', target: `account:${account.id}`, before: null, after: null },
      );
    }
    return { account, orgId: first.orgId };
  });
}

/**
 * `tally members create-owner`: an e-mail with an account becomes owner at once; otherwise a
 * first-owner link for that e-mail is returned.
 */
export async function createOwner(
  ctx: ServiceCtx,
  orgId: string,
  email: string,
): Promise<{ made: 'owner'; accountId: string } | { made: 'link'; link: string }> {
  const org = await getOrganization({ ctx, id: orgId });
  const address = normalizeEmail(email, '--email');
  const existing = await findAccountRowByEmail(ctx, address);
  if (existing) {
    await ctx.db.transaction().execute(async (trx) => {
      const inTrx = { ...ctx, db: trx };
      const before = (await membershipsOf(inTrx, existing.id)).find((m) => m.orgId === orgId)?.role ?? null;
      await addMembership({ ctx: inTrx, orgId, accountId: existing.id, role: 'owner' });
      await recordAudit(
        { ...inTrx, org, actorKeyId: null },
        {
          action: 'account.first_owner_created',
          target: `account:${existing.id}`,
          before: before === null ? null : { role: before },
          after: { role: 'owner', email: address },
        },
      );
    });
    return { made: 'owner', accountId: existing.id };
  }
  return { made: 'link', link: await issueFirstOwnerLink(ctx, orgId, address) };
}
