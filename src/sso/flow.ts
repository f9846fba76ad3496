import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import * as client from 'openid-client';
import { membershipIn } from '../accounts/store.js';
import { recordAudit } from '../audit/audit-log.js';
import { isPlanName, planAtLeast } from '../billing/plans.js';
import type { ServiceCtx } from '../context.js';
import { AppError } from '../errors.js';
import { getOrganization } from '../orgs/organizations.js';
import { loadSsoConnection, redirectUri, type SsoConnection } from './connections.js';
import { providerConfig, ProviderUnavailable } from './oidc.js';
import { provisionPerson } from './provision.js';
import { openVerifier, sealVerifier } from './secret.js';

// The authorization code flow with PKCE (S256), state and nonce. A sign-in in flight is a row
// of sso_logins keyed by the SHA-256 of its state, so any instance can finish it, once, within
// LOGIN_TTL_MS. The browser that started it holds the state in a cookie too (SSO_COOKIE): a
// callback carried to another browser is refused, so nobody can sign someone else in.

export const LOGIN_TTL_MS = 10 * 60_000;
/** The cookie of a sign-in in flight (Path=/dashboard/sso, SameSite=Lax: it comes back on the provider's redirect). */
export const SSO_COOKIE = 'tally_sso';
export const SCOPES = 'openid email profile';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * The nonce of a sign-in follows from its state; only its hash is stored, like the state's.
 * Both travel in the same authorization request, so this costs nothing of either.
 */
const nonceOf = (state: string) => createHmac('sha256', state).update('tally sso nonce').digest('base64url');

export type RefusalReason =
  | 'not_configured'
  | 'missing_state'
  | 'unknown_state'
  | 'replayed_state'
  | 'expired_state'
  | 'state_not_bound'
  | 'provider_error'
  | 'provider_unavailable'
  | 'token_rejected'
  | 'email_missing'
  | 'email_unverified'
  | 'domain_not_allowed'
  | 'account_disabled';

const MESSAGES: Record<RefusalReason, string> = {
  not_configured: 'Single sign-on is not set up for this organisation.',
  missing_state: 'The answer of the identity provider is incomplete. Start the sign-in again.',
  unknown_state: 'This sign-in is unknown. Start the sign-in again.',
  replayed_state: 'This sign-in has already been used. Start the sign-in again.',
  expired_state: 'This sign-in took too long and expired. Start the sign-in again.',
  state_not_bound: 'This sign-in was started in another browser. Start the sign-in again here.',
  provider_error: 'The identity provider did not sign you in.',
  provider_unavailable: 'The identity provider could not be reached. Try again shortly.',
  token_rejected: 'The identity provider’s answer could not be verified, so you were not signed in.',
  email_missing: 'The identity provider did not give your e-mail address.',
  email_unverified: 'The identity provider has not verified your e-mail address.',
  domain_not_allowed: 'Your e-mail address is not in a domain this organisation admits.',
  account_disabled: 'Your account is disabled. Ask an owner of your organisation.',
};

/** A refused single sign-on: `reason` for the audit log, `message` for the person. */
export class SsoRefusal extends Error {
  constructor(
    readonly reason: RefusalReason,
    readonly detail: string | null = null,
  ) {
    super(MESSAGES[reason]);
    this.name = 'SsoRefusal';
  }

  /** 400 for a broken or stale callback, 403 when the person is not admitted, 503 when the provider is down. */
  get status(): number {
    if (this.reason === 'provider_unavailable') return 503;
    if (
      ['domain_not_allowed', 'account_disabled', 'email_unverified', 'not_configured'].includes(this.reason)
    )
      return 403;
    return 400;
  }
}

/** The enabled connection of an Enterprise organisation; the refusal a start or callback gets otherwise. */
async function activeConnection(ctx: ServiceCtx, orgId: string): Promise<SsoConnection> {
  if (!/^org_[0-9A-HJKMNP-TV-Z]{26}$/.test(orgId)) throw new SsoRefusal('not_configured');
  const org = await ctx.db
    .selectFrom('organizations')
    .select('plan')
    .where('id', '=', orgId)
    .executeTakeFirst();
  const connection = org ? await loadSsoConnection(ctx, orgId) : null;
  if (!org || !connection || !connection.enabled) throw new SsoRefusal('not_configured');
  if (!isPlanName(org.plan) || !planAtLeast(org.plan, 'enterprise')) {
    throw new AppError(
      'plan_upgrade_required',
      'Single sign-on needs the Enterprise plan; sign in with your password instead.',
    );
  }
  return connection;
}

/**
 * Starts a sign-in into `orgId`: the provider's authorization URL to send the browser to, and
 * the state the browser keeps in SSO_COOKIE.
 */
export async function startSsoSignIn({
  ctx,
  orgId,
}: {
  ctx: ServiceCtx;
  orgId: string;
}): Promise<{ url: string; state: string }> {
  const connection = await activeConnection(ctx, orgId);
  let config: client.Configuration;
  try {
    config = await providerConfig(ctx, connection);
  } catch (error) {
    if (error instanceof ProviderUnavailable) throw new SsoRefusal('provider_unavailable', error.message);
    throw error;
  }
  const state = client.randomState();
  const stateHash = sha256(state);
  const verifier = client.randomPKCECodeVerifier();
  const now = ctx.clock.now().getTime();
  await ctx.db
    .insertInto('sso_logins')
    .values({
      state_hash: stateHash,
      org_id: orgId,
      code_verifier: sealVerifier(ctx, stateHash, verifier),
      nonce: sha256(nonceOf(state)),
      return_to: null,
      created_at: now,
      expires_at: now + LOGIN_TTL_MS,
      used_at: null,
    })
    .execute();
  // Sign-ins never finished are swept as others start.
  await ctx.db
    .deleteFrom('sso_logins')
    .where('expires_at', '<', now - LOGIN_TTL_MS)
    .execute();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri(ctx),
    scope: SCOPES,
    state,
    nonce: nonceOf(state),
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  });
  return { url: url.href, state };
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Takes the sign-in of `state` for this callback: it is used once, by one instance. */
async function takeLogin(ctx: ServiceCtx, state: string) {
  const stateHash = sha256(state);
  const now = ctx.clock.now().getTime();
  const taken = await ctx.db
    .updateTable('sso_logins')
    .set({ used_at: now })
    .where('state_hash', '=', stateHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  const row = await ctx.db
    .selectFrom('sso_logins')
    .selectAll()
    .where('state_hash', '=', stateHash)
    .executeTakeFirst();
  if (!row) throw new SsoRefusal('unknown_state');
  if (Number(taken.numUpdatedRows) === 0) {
    const reason = row.used_at !== null ? 'replayed_state' : 'expired_state';
    throw Object.assign(new SsoRefusal(reason), { orgId: row.org_id });
  }
  return { ...row, verifier: openVerifier(ctx, stateHash, row.code_verifier) };
}

export interface SsoSignedIn {
  accountId: string;
  orgId: string;
  email: string;
  provisioned: boolean;
}

/** The claims the sign-in needs: e-mail (from the ID token, else from userinfo) and name. */
async function identityOf(
  config: client.Configuration,
  tokens: client.TokenEndpointResponse & client.TokenEndpointResponseHelpers,
) {
  const claims = tokens.claims();
  if (!claims) throw new SsoRefusal('token_rejected', 'no ID token');
  let email = typeof claims.email === 'string' ? claims.email : null;
  let verified = claims.email_verified;
  let name = typeof claims.name === 'string' ? claims.name : null;
  if (email === null && tokens.access_token) {
    let info: client.UserInfoResponse;
    try {
      info = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
    } catch (error) {
      if (error instanceof client.ClientError || error instanceof client.ResponseBodyError) {
        throw new SsoRefusal('email_missing', `userinfo: ${error.message}`);
      }
      throw new SsoRefusal('provider_unavailable', (error as Error).message);
    }
    email = typeof info.email === 'string' ? info.email : null;
    verified = info.email_verified;
    name ??= typeof info.name === 'string' ? info.name : null;
  }
  if (email === null || !/^[^\s@]+@[^\s@]+$/.test(email)) throw new SsoRefusal('email_missing');
  // A provider that says the address is not verified is believed; one that says nothing
  // (Entra ID, for one) vouches for the addresses of its own directory.
  if (verified === false || verified === 'false') throw new SsoRefusal('email_unverified', email);
  return { email: email.toLowerCase(), name };
}

/**
 * Finishes a sign-in from the provider's redirect: `callbackUrl` is the URL the browser was sent
 * to (its query carries code, state and iss), `boundState` the state in the browser's cookie.
 * Verifies state (known, unused, unexpired, this browser's), exchanges the code with PKCE,
 * lets openid-client verify the ID token (signature algorithm, issuer, audience and azp,
 * expiry, issued-at, nonce), then admits the e-mail by domain, provisions the person at first
 * sign-in and refuses a disabled account. Every refusal whose organisation is known is audited.
 */
export async function completeSsoSignIn({
  ctx,
  query,
  boundState,
}: {
  ctx: ServiceCtx;
  query: URLSearchParams;
  boundState: string | undefined;
}): Promise<SsoSignedIn> {
  let orgId: string | null = null;
  let email: string | null = null;
  try {
    const state = query.get('state');
    if (state === null || state === '') throw new SsoRefusal('missing_state');
    if (boundState === undefined || !sameText(boundState, state)) {
      // Audited under the organisation when the state is one of ours (and not spent by this).
      const row = await ctx.db
        .selectFrom('sso_logins')
        .select('org_id')
        .where('state_hash', '=', sha256(state))
        .executeTakeFirst();
      orgId = row?.org_id ?? null;
      throw new SsoRefusal(row ? 'state_not_bound' : 'unknown_state');
    }
    let login;
    try {
      login = await takeLogin(ctx, state);
    } catch (error) {
      orgId = (error as { orgId?: string }).orgId ?? null;
      throw error;
    }
    orgId = login.org_id;
    const connection = await activeConnection(ctx, orgId);
    let config: client.Configuration;
    try {
      config = await providerConfig(ctx, connection);
    } catch (error) {
      if (error instanceof ProviderUnavailable) throw new SsoRefusal('provider_unavailable', error.message);
      throw error;
    }
    const current = new URL(redirectUri(ctx));
    current.search = query.toString();
    let tokens;
    try {
      tokens = await client.authorizationCodeGrant(config, current, {
        pkceCodeVerifier: login.verifier,
        expectedState: state,
        expectedNonce: nonceOf(state),
        idTokenExpected: true,
      });
    } catch (error) {
      if (error instanceof client.AuthorizationResponseError) {
        throw new SsoRefusal('provider_error', `${error.error}: ${error.error_description ?? ''}`.trim());
      }
      if (error instanceof client.ResponseBodyError) {
        throw new SsoRefusal('token_rejected', `${error.error}: ${error.error_description ?? ''}`.trim());
      }
      if (error instanceof client.ClientError) {
        // openid-client names the check in the error it wraps, e.g. the "aud" (audience) claim.
        const cause = (error as { cause?: unknown }).cause;
        const named = cause instanceof Error ? cause.message : null;
        throw new SsoRefusal('token_rejected', named ?? error.message);
      }
      throw new SsoRefusal('provider_unavailable', (error as Error).message);
    }
    const identity = await identityOf(config, tokens);
    email = identity.email;
    const domain = email.slice(email.lastIndexOf('@') + 1);
    if (!connection.allowedDomains.includes(domain)) throw new SsoRefusal('domain_not_allowed');
    let person: Awaited<ReturnType<typeof provisionPerson>>;
    try {
      person = await provisionPerson({
        ctx,
        orgId,
        email,
        name: identity.name,
        role: connection.defaultRole,
      });
    } catch (error) {
      // An address Tally cannot keep as an account's (too long, say).
      if (error instanceof AppError && error.code === 'validation_error') {
        throw new SsoRefusal('email_missing', error.message);
      }
      throw error;
    }
    if (person === 'disabled') throw new SsoRefusal('account_disabled');
    const org = await getOrganization({ ctx, id: orgId });
    const role = (await membershipIn(ctx, orgId, person.accountId))?.role ?? connection.defaultRole;
    await recordAudit(
      { ...ctx, org, actorKeyId: null, actor: { kind: 'person', accountId: person.accountId, email, role } },
      {
        action: 'sso.signed_in',
        target: `account:${person.accountId}`,
        before: null,
        after: { email, provisioned: person.provisioned, membership_added: person.membershipAdded },
      },
    );
    return { accountId: person.accountId, orgId, email, provisioned: person.provisioned };
  } catch (error) {
    if (error instanceof SsoRefusal && orgId !== null) {
      const org = await getOrganization({ ctx, id: orgId });
      await recordAudit(
        { ...ctx, org, actorKeyId: null },
        {
          action: 'sso.sign_in_failed',
          target: email === null ? 'sso' : `email:${email}`,
          before: null,
          after: { reason: error.reason, detail: error.detail, email },
        },
      );
    }
    throw error;
  }
}

export const messageOf = (reason: RefusalReason) => MESSAGES[reason];
