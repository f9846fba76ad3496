import type { ServiceCtx } from '../context.js';
import { getOrganization } from '../orgs/organizations.js';
import { recordAudit } from '../audit/audit-log.js';
import { passwordsAllowed } from '../sso/connections.js';
import { hashPassword, verifyPassword } from './passwords.js';
import { findAccountRowByEmail, membershipsOf, type Membership } from './store.js';
import { clearFailures, noteFailure, subjectsOf, waitBeforeAttempt } from './throttle.js';
import type { Actor } from './actor.js';

// Signing in with e-mail and password. Every refusal reads the same and costs the same (a
// password is hashed even when the e-mail has no account), so answers tell nothing about which
// e-mails have accounts.

let dummyHash: Promise<string> | null = null;
/** A hash to verify against when there is no account: the same scrypt work as a real one. */
function dummy(): Promise<string> {
  dummyHash ??= hashPassword('tally: no account has this password');
  return dummyHash;
}

export type SignInResult =
  | { ok: true; accountId: string; email: string; membership: Membership }
  | { ok: false; reason: 'invalid' }
  | { ok: false; reason: 'throttled'; retryAfterMs: number }
  | { ok: false; reason: 'no_membership' }
  | { ok: false; reason: 'single_sign_on_only' };

export async function signInWithPassword({
  ctx,
  email,
  password,
  ip,
}: {
  ctx: ServiceCtx;
  email: string;
  password: string;
  ip: string;
}): Promise<SignInResult> {
  const subjects = subjectsOf(email, ip);
  const wait = await waitBeforeAttempt(ctx, subjects);
  if (wait > 0) return { ok: false, reason: 'throttled', retryAfterMs: wait };

  const row =
    email.length <= 254 && password.length <= 1024 ? await findAccountRowByEmail(ctx, email) : undefined;
  const usable = row !== undefined && row.password_hash !== null && row.disabled_at === null;
  const matches = await verifyPassword(
    password.slice(0, 1024),
    usable ? (row.password_hash ?? '') : await dummy(),
  );
  if (!usable || !matches) {
    await noteFailure(ctx, subjects);
    // A known person's failed attempt goes to the log of each organisation they belong to; an
    // unknown e-mail's only to the service log (the caller's), never to an organisation's.
    if (row !== undefined) {
      const actor: Actor = { kind: 'person', accountId: row.id, email: row.email, role: 'analyst' };
      for (const m of await membershipsOf(ctx, row.id)) {
        const org = await getOrganization({ ctx, id: m.orgId });
        await recordAudit(
          { ...ctx, org, actorKeyId: null, actor: { ...actor, role: m.role } },
          { action: 'account.sign_in_failed', target: `account:${row.id}`, before: null, after: { ip } },
        );
      }
    }
    return { ok: false, reason: 'invalid' };
  }
  await clearFailures(
    ctx,
    subjects.filter((s) => s.startsWith('email:')),
  );
  const memberships = await membershipsOf(ctx, row.id);
  // The organisation the person looked at last (a session still open), else the first by name.
  const last = await ctx.db
    .selectFrom('account_sessions')
    .select('org_id')
    .where('account_id', '=', row.id)
    .orderBy('last_seen_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (memberships.length === 0) return { ok: false, reason: 'no_membership' };
  // Only organisations that let passwords in: one with single sign-on only is entered through
  // its identity provider. Told only after the right password, like no_membership.
  const open: Membership[] = [];
  for (const m of memberships) if (await passwordsAllowed(ctx, m.orgId)) open.push(m);
  const membership = open.find((m) => m.orgId === last?.org_id) ?? open[0];
  if (membership === undefined) return { ok: false, reason: 'single_sign_on_only' };
  return { ok: true, accountId: row.id, email: row.email, membership };
}
