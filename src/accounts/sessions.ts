import { createHash, randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceCtx } from '../context.js';
import { readCookie, SESSION_COOKIE, setSessionCookie } from '../dashboard/security.js';
import { getOrganization } from '../orgs/organizations.js';
import type { Organization } from '../orgs/organization-record.js';
import { readDb } from '../storage/db.js';
import type { Role } from './roles.js';
import { membershipsOf, type Membership } from './store.js';

// A person's dashboard sessions (account_sessions). The browser holds a random token, the
// database only its SHA-256. A person's token starts with `p.` so that the dashboard tells it
// from an API key's session (dashboard/sessions.ts) without a second lookup.

export const IDLE_TIMEOUT_MS = 60 * 60_000;
export const ABSOLUTE_TIMEOUT_MS = 12 * 60 * 60_000;
/** last_seen_at is written at most this often, so reading a page is not always a write. */
export const TOUCH_EVERY_MS = 60_000;

export const PERSON_TOKEN_PREFIX = 'p.';

export type SessionMethod = 'password' | 'sso' | 'invitation' | 'first_owner' | 'reset';

const MAX_USER_AGENT = 300;
const MAX_TOKEN_LENGTH = 200;

export const tokenHash = (token: string) => createHash('sha256').update(token).digest('hex');

/** Opens a session for a person looking at `orgId`; nothing checks the membership here. */
export async function openAccountSession({
  ctx,
  accountId,
  orgId,
  method,
  userAgent,
  ip,
}: {
  ctx: ServiceCtx;
  accountId: string;
  orgId: string;
  method: SessionMethod;
  userAgent?: string | null;
  ip?: string | null;
}): Promise<{ id: string; token: string; csrfToken: string }> {
  const token = PERSON_TOKEN_PREFIX + randomBytes(32).toString('base64url');
  const csrfToken = randomBytes(32).toString('base64url');
  const now = ctx.clock.now().getTime();
  const id = tokenHash(token);
  await ctx.db
    .insertInto('account_sessions')
    .values({
      id,
      account_id: accountId,
      org_id: orgId,
      csrf_token: csrfToken,
      flash: null,
      method,
      user_agent: userAgent ? userAgent.slice(0, MAX_USER_AGENT) : null,
      ip: ip ?? null,
      created_at: now,
      last_seen_at: now,
    })
    .execute();
  return { id, token, csrfToken };
}

/**
 * Signs a person in, in one call: drops the session the browser came with (any kind: the token
 * is rotated at sign-in), opens a new one and sets its cookie. The caller then redirects, e.g.
 * `reply.redirect('/dashboard', 303)`.
 */
export async function signInBrowser({
  ctx,
  request,
  reply,
  accountId,
  orgId,
  method,
}: {
  ctx: ServiceCtx;
  request: FastifyRequest;
  reply: FastifyReply;
  accountId: string;
  orgId: string;
  method: SessionMethod;
}): Promise<{ token: string; csrfToken: string }> {
  const previous = readCookie(request, SESSION_COOKIE);
  if (previous !== undefined && previous !== '' && previous.length <= MAX_TOKEN_LENGTH) {
    await dropAnySession(ctx, previous);
  }
  const userAgent = request.headers['user-agent'];
  const opened = await openAccountSession({
    ctx,
    accountId,
    orgId,
    method,
    userAgent: typeof userAgent === 'string' ? userAgent : null,
    ip: request.ip,
  });
  setSessionCookie(request, reply, opened.token);
  return { token: opened.token, csrfToken: opened.csrfToken };
}

/** Deletes the session of a cookie token, a person's or an API key's. */
export async function dropAnySession(ctx: ServiceCtx, token: string): Promise<void> {
  const id = tokenHash(token);
  if (token.startsWith(PERSON_TOKEN_PREFIX)) {
    await ctx.db.deleteFrom('account_sessions').where('id', '=', id).execute();
  } else {
    await ctx.db.deleteFrom('dashboard_sessions').where('id', '=', id).execute();
  }
}

export interface PersonSession {
  id: string;
  accountId: string;
  email: string;
  role: Role;
  org: Organization;
  csrfToken: string;
  flash: string | null;
  /** Every organisation the person belongs to (the layout's selector). */
  memberships: Membership[];
}

export type PersonSessionEnd = 'expired' | 'removed' | 'none';

/**
 * The live session of a person's token, or why there is none. It reads the session with its
 * account, then the person's memberships: a removed member, a disabled account or a lapsed
 * timeout ends the session here, at its next request (its row is deleted).
 */
export async function resumeAccountSession({
  ctx,
  token,
}: {
  ctx: ServiceCtx;
  token: string;
}): Promise<{ session: PersonSession } | { ended: PersonSessionEnd }> {
  if (!token.startsWith(PERSON_TOKEN_PREFIX) || token.length > MAX_TOKEN_LENGTH) return { ended: 'none' };
  const id = tokenHash(token);
  const reads = { ...ctx, db: readDb(ctx) };
  const row = await reads.db
    .selectFrom('account_sessions')
    .innerJoin('accounts', 'accounts.id', 'account_sessions.account_id')
    .select([
      'account_sessions.account_id',
      'account_sessions.org_id',
      'account_sessions.csrf_token',
      'account_sessions.flash',
      'account_sessions.created_at',
      'account_sessions.last_seen_at',
      'accounts.email',
      'accounts.disabled_at',
    ])
    .where('account_sessions.id', '=', id)
    .executeTakeFirst();
  if (!row) return { ended: 'none' };
  const memberships = await membershipsOf(reads, row.account_id);
  const current = memberships.find((m) => m.orgId === row.org_id);
  const now = ctx.clock.now().getTime();
  const role = current?.role ?? null;
  const removed = role === null || row.disabled_at !== null;
  const expired =
    now - Number(row.last_seen_at) >= IDLE_TIMEOUT_MS || now - Number(row.created_at) >= ABSOLUTE_TIMEOUT_MS;
  if (removed || expired || role === null) {
    await ctx.db.deleteFrom('account_sessions').where('id', '=', id).execute();
    return { ended: removed ? 'removed' : 'expired' };
  }
  if (now - Number(row.last_seen_at) >= TOUCH_EVERY_MS || row.flash !== null) {
    await ctx.db
      .updateTable('account_sessions')
      .set({ last_seen_at: now, flash: null })
      .where('id', '=', id)
      .execute();
  }
  const org = await getOrganization({ ctx: reads, id: row.org_id });
  return {
    session: {
      id,
      accountId: row.account_id,
      email: row.email,
      role,
      org,
      csrfToken: row.csrf_token,
      flash: row.flash,
      memberships,
    },
  };
}

export async function setAccountSessionFlash(ctx: ServiceCtx, sessionId: string, message: string) {
  await ctx.db.updateTable('account_sessions').set({ flash: message }).where('id', '=', sessionId).execute();
}

/** Ends every session of a person but `keepSessionId` (after a password change or reset). */
export async function endOtherSessions(ctx: ServiceCtx, accountId: string, keepSessionId: string | null) {
  let query = ctx.db.deleteFrom('account_sessions').where('account_id', '=', accountId);
  if (keepSessionId !== null) query = query.where('id', '!=', keepSessionId);
  await query.execute();
}

export interface SessionView {
  id: string;
  /** A short public handle of the session (the stored id is a token's hash: not shown whole). */
  handle: string;
  orgId: string;
  method: string;
  userAgent: string | null;
  ip: string | null;
  createdAt: number;
  lastSeenAt: number;
}

/** A person's sessions, most recently seen first. */
export async function listAccountSessions(ctx: ServiceCtx, accountId: string): Promise<SessionView[]> {
  const rows = await ctx.db
    .selectFrom('account_sessions')
    .selectAll()
    .where('account_id', '=', accountId)
    .orderBy('last_seen_at', 'desc')
    .orderBy('id')
    .execute();
  return rows.map((row) => ({
    id: row.id,
    handle: row.id.slice(0, 16),
    orgId: row.org_id,
    method: row.method,
    userAgent: row.user_agent,
    ip: row.ip,
    createdAt: Number(row.created_at),
    lastSeenAt: Number(row.last_seen_at),
  }));
}

/** Ends one of a person's own sessions by its handle; false when there is none such. */
export async function endAccountSessionByHandle(
  ctx: ServiceCtx,
  accountId: string,
  handle: string,
): Promise<boolean> {
  if (!/^[0-9a-f]{16}$/.test(handle)) return false;
  const sessions = await listAccountSessions(ctx, accountId);
  const match = sessions.find((s) => s.handle === handle);
  if (!match) return false;
  await ctx.db
    .deleteFrom('account_sessions')
    .where('id', '=', match.id)
    .where('account_id', '=', accountId)
    .execute();
  return true;
}

/** Points a person's session at another organisation they belong to (checked by the caller). */
export async function switchSessionOrg(ctx: ServiceCtx, sessionId: string, orgId: string): Promise<void> {
  await ctx.db.updateTable('account_sessions').set({ org_id: orgId }).where('id', '=', sessionId).execute();
}
