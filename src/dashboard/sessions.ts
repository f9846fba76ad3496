import { createHash, randomBytes } from 'node:crypto';
import type { Actor } from '../accounts/authorize.js';
import {
  ABSOLUTE_TIMEOUT_MS,
  IDLE_TIMEOUT_MS,
  PERSON_TOKEN_PREFIX,
  resumeAccountSession,
  setAccountSessionFlash,
  TOUCH_EVERY_MS,
} from '../accounts/sessions.js';
import { ownerCount, type Membership } from '../accounts/store.js';
import type { ServiceCtx } from '../context.js';
import { AppError } from '../errors.js';
import { authenticate } from '../orgs/authenticator.js';
import { getOrganization, type Organization } from '../orgs/organizations.js';
import { readDb } from '../storage/db.js';

export { ABSOLUTE_TIMEOUT_MS, IDLE_TIMEOUT_MS };

/**
 * A signed-in browser: a person (account_sessions, accounts/sessions.ts) or, where the operator
 * allows it, an admin API key (dashboard_sessions). `actor` is what the verbs check.
 */
export interface DashboardSession {
  id: string;
  kind: 'person' | 'key';
  org: Organization;
  /** The API key of a key session; null for a person. */
  keyId: string | null;
  /** The person of a person's session; null for a key session. */
  accountId: string | null;
  email: string | null;
  /** A person's memberships (the organisation selector); empty for a key session. */
  memberships: Membership[];
  actor: Actor;
  csrfToken: string;
  flash: string | null;
}

const tokenHash = (token: string) => createHash('sha256').update(token).digest('hex');

export type SignInRefusal = 'invalid' | 'revoked' | 'ingest' | 'turned_off';

/**
 * Whether an admin key may open a dashboard session for the organisation: the operator's
 * TALLY_DASHBOARD_KEY_SIGN_IN, `auto` allowing it only while the organisation has no owner.
 */
export async function keySignInAllowed(ctx: ServiceCtx, orgId: string): Promise<boolean> {
  const policy = ctx.config.dashboardKeySignIn;
  if (policy === 'on') return true;
  if (policy === 'off') return false;
  return (await ownerCount(ctx, orgId)) === 0;
}

/**
 * Opens a session for an admin key (DESIGN §10), where keySignInAllowed. The key itself is neither stored nor sent back:
 * the browser holds only a random session token, the database only that token's hash.
 */
export async function startSession({
  ctx,
  apiKey,
}: {
  ctx: ServiceCtx;
  apiKey: string;
}): Promise<{ token: string; session: DashboardSession } | { refused: SignInRefusal }> {
  let auth;
  try {
    auth = await authenticate({ ctx, token: apiKey.trim() });
  } catch (error) {
    if (error instanceof AppError && error.code === 'key_revoked') return { refused: 'revoked' };
    if (error instanceof AppError && error.code === 'invalid_api_key') return { refused: 'invalid' };
    throw error;
  }
  if (auth.scope !== 'admin') return { refused: 'ingest' };
  if (!(await keySignInAllowed(ctx, auth.org.id))) return { refused: 'turned_off' };
  const token = randomBytes(32).toString('base64url');
  const csrfToken = randomBytes(32).toString('base64url');
  const now = ctx.clock.now().getTime();
  const id = tokenHash(token);
  await ctx.db
    .insertInto('dashboard_sessions')
    .values({
      id,
      org_id: auth.org.id,
      key_id: auth.keyId,
      csrf_token: csrfToken,
      flash: null,
      created_at: now,
      last_seen_at: now,
    })
    .execute();
  return { token, session: keySession(id, auth.org, auth.keyId, csrfToken, null) };
}

function keySession(
  id: string,
  org: Organization,
  keyId: string,
  csrfToken: string,
  flash: string | null,
): DashboardSession {
  return {
    id,
    kind: 'key',
    org,
    keyId,
    accountId: null,
    email: null,
    memberships: [],
    actor: { kind: 'api_key', keyId, scope: 'admin', createdByAccountId: null },
    csrfToken,
    flash,
  };
}

export type SessionEnd = 'expired' | 'revoked' | 'removed' | 'none';

/**
 * The live session of a cookie token, or why there is none. Idle (60 min) and absolute (12 h)
 * timeouts are read from `ctx.clock`; a revoked or re-scoped key ends its sessions here, at their
 * next request. An ended session's row is deleted.
 */
export async function resumeSession({
  ctx,
  token,
}: {
  ctx: ServiceCtx;
  token: string | undefined;
}): Promise<{ session: DashboardSession } | { ended: SessionEnd }> {
  if (token === undefined || token === '' || token.length > 200) return { ended: 'none' };
  if (token.startsWith(PERSON_TOKEN_PREFIX)) {
    const resumed = await resumeAccountSession({ ctx, token });
    if ('ended' in resumed) return resumed;
    const p = resumed.session;
    return {
      session: {
        id: p.id,
        kind: 'person',
        org: p.org,
        keyId: null,
        accountId: p.accountId,
        email: p.email,
        memberships: p.memberships,
        actor: { kind: 'person', accountId: p.accountId, email: p.email, role: p.role },
        csrfToken: p.csrfToken,
        flash: p.flash,
      },
    };
  }
  const id = tokenHash(token);
  // Read on the read connection (a SQLite file's): a page does not wait for a folding pass
  // holding the write connection; the occasional touch below does.
  const reads = { ...ctx, db: readDb(ctx) };
  const row = await reads.db
    .selectFrom('dashboard_sessions')
    .innerJoin('api_keys', 'api_keys.id', 'dashboard_sessions.key_id')
    .select([
      'dashboard_sessions.org_id',
      'dashboard_sessions.key_id',
      'dashboard_sessions.csrf_token',
      'dashboard_sessions.flash',
      'dashboard_sessions.created_at',
      'dashboard_sessions.last_seen_at',
      'api_keys.revoked_at',
      'api_keys.scope',
    ])
    .where('dashboard_sessions.id', '=', id)
    .executeTakeFirst();
  if (!row) return { ended: 'none' };
  const now = ctx.clock.now().getTime();
  const revoked = row.revoked_at !== null || row.scope !== 'admin';
  const expired =
    now - Number(row.last_seen_at) >= IDLE_TIMEOUT_MS || now - Number(row.created_at) >= ABSOLUTE_TIMEOUT_MS;
  if (revoked || expired) {
    await endSession({ ctx, token });
    return { ended: revoked ? 'revoked' : 'expired' };
  }
  if (now - Number(row.last_seen_at) >= TOUCH_EVERY_MS || row.flash !== null) {
    await ctx.db
      .updateTable('dashboard_sessions')
      .set({ last_seen_at: now, flash: null })
      .where('id', '=', id)
      .execute();
  }
  const org = await getOrganization({ ctx: reads, id: row.org_id });
  return { session: keySession(id, org, row.key_id, row.csrf_token, row.flash) };
}

export async function endSession({ ctx, token }: { ctx: ServiceCtx; token: string }): Promise<void> {
  const table = token.startsWith(PERSON_TOKEN_PREFIX) ? 'account_sessions' : 'dashboard_sessions';
  await ctx.db.deleteFrom(table).where('id', '=', tokenHash(token)).execute();
}

/** A one-time notice the next page shows (after a form's redirect). */
export async function setFlash(ctx: ServiceCtx, session: DashboardSession, message: string): Promise<void> {
  if (session.kind === 'person') return setAccountSessionFlash(ctx, session.id, message);
  const sessionId = session.id;
  await ctx.db
    .updateTable('dashboard_sessions')
    .set({ flash: message })
    .where('id', '=', sessionId)
    .execute();
}
