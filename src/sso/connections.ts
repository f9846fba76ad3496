import { actorOf, requireRole } from '../accounts/authorize.js';
import { recordAudit } from '../audit/audit-log.js';
import { isPlanName, planAtLeast } from '../billing/plans.js';
import type { OrgCtx, ServiceCtx } from '../context.js';
import { notFound, validationError } from '../errors.js';
import type { SsoConnectionRow } from '../storage/schema.js';
import { openClientSecret, sealClientSecret } from './secret.js';

/** The role a person provisioned at first sign-in may get; an owner is only ever made by another. */
export const PROVISIONED_ROLES = ['admin', 'analyst'] as const;
export type ProvisionedRole = (typeof PROVISIONED_ROLES)[number];

export interface SsoConnectionInput {
  issuer: string;
  client_id: string;
  /** Required when there is no connection yet; omitted, the stored secret stays. */
  client_secret?: string;
  allowed_domains: string[];
  default_role?: ProvisionedRole;
  passwords_allowed?: boolean;
  enabled?: boolean;
}

/** The connection as verbs use it, with its secret opened. */
export interface SsoConnection {
  orgId: string;
  issuer: string;
  clientId: string;
  clientSecret: string;
  allowedDomains: string[];
  defaultRole: ProvisionedRole;
  passwordsAllowed: boolean;
  enabled: boolean;
  updatedAt: number;
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * An issuer is an https URL without query or fragment; plain http only on this machine's
 * loopback (a provider in development or in the tests).
 */
export function checkIssuer(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw validationError('/body/issuer', 'must be an absolute https:// URL');
  }
  const loopback = LOOPBACK_HOSTS.has(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
    throw validationError('/body/issuer', 'must be an https:// URL (http:// only on 127.0.0.1 or localhost)');
  }
  if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
    throw validationError('/body/issuer', 'must not carry a query, a fragment or credentials');
  }
  // The issuer is compared as the provider writes it: keep the text given (no trailing slash added).
  return text;
}

/** Whether the issuer may be reached over plain http (loopback only, see checkIssuer). */
export function issuerIsLoopbackHttp(issuer: string): boolean {
  const url = new URL(issuer);
  return url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
}

function normalisedDomains(domains: readonly string[]): string[] {
  const out = new Set<string>();
  domains.forEach((d, i) => {
    const domain = d.trim().toLowerCase().replace(/^@/, '');
    if (!/^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,62}$/.test(domain)) {
      throw validationError(`/body/allowed_domains/${i}`, 'must be a domain name such as example.com');
    }
    out.add(domain);
  });
  if (out.size === 0) throw validationError('/body/allowed_domains', 'must name at least one domain');
  return [...out].sort();
}

function fromRow(ctx: ServiceCtx, row: SsoConnectionRow): SsoConnection {
  return {
    orgId: row.org_id,
    issuer: row.issuer,
    clientId: row.client_id,
    clientSecret: openClientSecret(ctx, row),
    allowedDomains: JSON.parse(row.allowed_domains) as string[],
    defaultRole: row.default_role === 'admin' ? 'admin' : 'analyst',
    passwordsAllowed: row.passwords_allowed === 1,
    enabled: row.enabled === 1,
    updatedAt: Number(row.updated_at),
  };
}

/** Where the provider sends people back: register it at the provider. */
export function redirectUri(ctx: ServiceCtx): string {
  return `${ctx.config.publicUrl}/dashboard/sso/callback`;
}

/** The address that starts a sign-in into `orgId`, to hand to its people or bookmark. */
export function startUrl(ctx: ServiceCtx, orgId: string): string {
  return `${ctx.config.publicUrl}/dashboard/sso/${encodeURIComponent(orgId)}/start`;
}

/** The connection as the API and the dashboard show it: the client secret never leaves. */
export function ssoConnectionView(ctx: ServiceCtx, row: SsoConnectionRow) {
  return {
    organization_id: row.org_id,
    issuer: row.issuer,
    client_id: row.client_id,
    client_secret_set: true,
    allowed_domains: JSON.parse(row.allowed_domains) as string[],
    default_role: row.default_role === 'admin' ? ('admin' as const) : ('analyst' as const),
    passwords_allowed: row.passwords_allowed === 1,
    enabled: row.enabled === 1,
    redirect_uri: redirectUri(ctx),
    start_url: startUrl(ctx, row.org_id),
    created_at: new Date(Number(row.created_at)).toISOString(),
    updated_at: new Date(Number(row.updated_at)).toISOString(),
  };
}

export type SsoConnectionView = ReturnType<typeof ssoConnectionView>;

async function rowOf(ctx: ServiceCtx, orgId: string): Promise<SsoConnectionRow | undefined> {
  return ctx.db.selectFrom('sso_connections').selectAll().where('org_id', '=', orgId).executeTakeFirst();
}

/**
 * Who may change single sign-on: an owner in the dashboard (it decides who gets in at all), and
 * an admin API key, so that it can be automated. Reading it needs an admin.
 */
function requireSsoManager(ctx: OrgCtx): void {
  requireRole(ctx, actorOf(ctx).kind === 'api_key' ? 'admin' : 'owner');
}

/** The organisation's connection as shown; not_found when none is configured. */
export async function getSsoConnection({ ctx }: { ctx: OrgCtx }): Promise<SsoConnectionView> {
  requireRole(ctx, 'admin');
  const row = await rowOf(ctx, ctx.org.id);
  if (!row) throw notFound('The single sign-on configuration');
  return ssoConnectionView(ctx, row);
}

/** The connection with its secret, for a sign-in; null when none is configured. */
export async function loadSsoConnection(ctx: ServiceCtx, orgId: string): Promise<SsoConnection | null> {
  const row = await rowOf(ctx, orgId);
  return row ? fromRow(ctx, row) : null;
}

/** What the audit log keeps of a connection: never the secret, sealed or not. */
function audited(view: SsoConnectionView) {
  const { redirect_uri: _r, start_url: _s, created_at: _c, ...rest } = view;
  return rest;
}

/** Creates or replaces the organisation's connection. */
export async function putSsoConnection({
  ctx,
  input,
}: {
  ctx: OrgCtx;
  input: SsoConnectionInput;
}): Promise<SsoConnectionView> {
  requireSsoManager(ctx);
  // The API's schema bounds these too; the dashboard's form comes here directly.
  if (input.issuer.length > 500) throw validationError('/body/issuer', 'must be at most 500 characters');
  if (input.client_id.length > 500)
    throw validationError('/body/client_id', 'must be at most 500 characters');
  if ((input.client_secret?.length ?? 0) > 2000)
    throw validationError('/body/client_secret', 'must be at most 2000 characters');
  if (input.allowed_domains.length > 50)
    throw validationError('/body/allowed_domains', 'must name at most 50 domains');
  const issuer = checkIssuer(input.issuer);
  const clientId = input.client_id.trim();
  if (clientId === '') throw validationError('/body/client_id', 'must not be empty');
  const domains = normalisedDomains(input.allowed_domains);
  const now = ctx.clock.now().getTime();
  return ctx.db.transaction().execute(async (trx) => {
    const before = await rowOf({ ...ctx, db: trx }, ctx.org.id);
    let sealed: { client_secret: string; secret_key_id: string };
    if (input.client_secret !== undefined && input.client_secret !== '') {
      sealed = sealClientSecret(ctx, ctx.org.id, input.client_secret);
    } else if (before) {
      sealed = { client_secret: before.client_secret, secret_key_id: before.secret_key_id ?? '' };
      if (before.secret_key_id === null) {
        // A row without a key id holds plaintext (never written by this code); seal it now.
        sealed = sealClientSecret(ctx, ctx.org.id, before.client_secret);
      }
    } else {
      throw validationError('/body/client_secret', 'is required when single sign-on is first configured');
    }
    const row: SsoConnectionRow = {
      org_id: ctx.org.id,
      issuer,
      client_id: clientId,
      ...sealed,
      allowed_domains: JSON.stringify(domains),
      default_role: input.default_role ?? (before?.default_role === 'admin' ? 'admin' : 'analyst'),
      passwords_allowed:
        input.passwords_allowed === undefined
          ? (before?.passwords_allowed ?? 1)
          : input.passwords_allowed
            ? 1
            : 0,
      enabled: input.enabled === undefined ? (before?.enabled ?? 1) : input.enabled ? 1 : 0,
      created_at: before ? Number(before.created_at) : now,
      updated_at: now,
    };
    if (before) {
      const { org_id: _o, ...changes } = row;
      await trx.updateTable('sso_connections').set(changes).where('org_id', '=', ctx.org.id).execute();
    } else {
      await trx.insertInto('sso_connections').values(row).execute();
    }
    const view = ssoConnectionView(ctx, row);
    const secretChanged = input.client_secret !== undefined && input.client_secret !== '';
    await recordAudit(
      { ...ctx, db: trx },
      {
        action: 'sso.configured',
        target: 'sso',
        before: before ? audited(ssoConnectionView(ctx, before)) : null,
        after: { ...audited(view), client_secret_changed: secretChanged },
      },
    );
    return view;
  });
}

/** Removes the organisation's connection: its people sign in with a password again. */
export async function deleteSsoConnection({ ctx }: { ctx: OrgCtx }): Promise<void> {
  requireSsoManager(ctx);
  await ctx.db.transaction().execute(async (trx) => {
    const before = await rowOf({ ...ctx, db: trx }, ctx.org.id);
    if (!before) throw notFound('The single sign-on configuration');
    await trx.deleteFrom('sso_connections').where('org_id', '=', ctx.org.id).execute();
    await trx.deleteFrom('sso_logins').where('org_id', '=', ctx.org.id).execute();
    await recordAudit(
      { ...ctx, db: trx },
      { action: 'sso.removed', target: 'sso', before: audited(ssoConnectionView(ctx, before)), after: null },
    );
  });
}

/**
 * Whether people may sign in to `orgId` with a password. False only while the organisation is on
 * the Enterprise plan with single sign-on enabled and passwords turned off: a connection that
 * is disabled, or an organisation moved off Enterprise (where single sign-on stops), lets
 * passwords in again, so that nobody is locked out. The password sign-in calls this.
 */
export async function passwordsAllowed(ctx: ServiceCtx, orgId: string): Promise<boolean> {
  const row = await ctx.db
    .selectFrom('sso_connections')
    .innerJoin('organizations', 'organizations.id', 'sso_connections.org_id')
    .select(['sso_connections.enabled', 'sso_connections.passwords_allowed', 'organizations.plan'])
    .where('sso_connections.org_id', '=', orgId)
    .executeTakeFirst();
  if (!row || row.enabled !== 1 || row.passwords_allowed === 1) return true;
  return !(isPlanName(row.plan) && planAtLeast(row.plan, 'enterprise'));
}

/**
 * The organisation whose enabled single sign-on admits e-mails of `domain`, when exactly one
 * does (the sign-in page routes by the e-mail's domain); null when none or several do.
 */
export async function orgForDomain(ctx: ServiceCtx, domain: string): Promise<string | null> {
  const wanted = domain.trim().toLowerCase();
  // Only the characters of a domain name: nothing that LIKE would read as a wildcard.
  if (!/^[a-z0-9.-]+$/.test(wanted)) return null;
  const rows = await ctx.db
    .selectFrom('sso_connections')
    .innerJoin('organizations', 'organizations.id', 'sso_connections.org_id')
    .select(['sso_connections.org_id', 'sso_connections.allowed_domains'])
    .where('sso_connections.enabled', '=', 1)
    .where('organizations.plan', '=', 'enterprise')
    .where('sso_connections.allowed_domains', 'like', `%"${wanted}"%`)
    .execute();
  const matches = rows.filter((r) => (JSON.parse(r.allowed_domains) as string[]).includes(wanted));
  return matches.length === 1 ? (matches[0]?.org_id ?? null) : null;
}
