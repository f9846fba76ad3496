import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Actor } from '../../accounts/actor.js';
import { signInWithPassword } from '../../accounts/sign-in.js';
import { passwordsAllowed } from '../../sso/connections.js';
import { continuePage } from './sso.js';
import {
  endAccountSessionByHandle,
  endOtherSessions,
  listAccountSessions,
  signInBrowser,
  switchSessionOrg,
  dropAnySession,
} from '../../accounts/sessions.js';
import { getAccount, membershipsOf, setPassword } from '../../accounts/store.js';
import { liveToken, redeemFirstOwner, requestPasswordReset, resetPassword } from '../../accounts/tokens.js';
import { verifyPassword } from '../../accounts/passwords.js';
import { recordAudit } from '../../audit/audit-log.js';
import type { ServiceCtx } from '../../context.js';
import { AppError } from '../../errors.js';
import { serviceCtx } from '../../http/app-types.js';
import { getOrganization } from '../../orgs/organizations.js';
import { dateTime } from '../format.js';
import { html, type SafeHtml } from '../html.js';
import { csrfField, loginPage, messageLine, publicPage } from '../layout.js';
import {
  dashboardCtx,
  field,
  queryOf,
  redirectWithNotice,
  sendPage,
  session,
  type Form,
} from '../page-kit.js';
import { clearSessionCookie, readCookie, SESSION_COOKIE, setSessionCookie } from '../security.js';
import { endSession, startSession, type DashboardSession } from '../sessions.js';

/** Sign-in attempts per client address and second (the rate limiter's window). */
const SIGN_IN_ATTEMPTS_PER_SECOND = 5;

const ENDED_MESSAGES: Record<string, string> = {
  expired: 'Your session ended after a period without activity (or after 12 hours). Sign in again.',
  revoked: 'The API key of your session was revoked, so the session ended. Sign in with another admin key.',
  removed: 'You are no longer a member of that organisation, so the session ended.',
  signed_out: 'You are signed out.',
  password_reset: 'Your password is set. Sign in with it.',
};

const INVALID = 'The e-mail address or the password is not right.';

const KEY_REFUSALS = {
  invalid: 'That API key is not valid. Check it and try again.',
  revoked: 'That API key has been revoked. Sign in with an active admin key.',
  ingest: 'That is an ingest key: it can only track events. Sign in with an admin key.',
  turned_off: 'Signing in with an API key is turned off here. Sign in with your e-mail and password.',
} as const;

/** A browser and system to recognise a session by, from its user agent (the whole text in a tooltip). */
export function deviceOf(userAgent: string | null): string {
  if (userAgent === null || userAgent === '') return 'Unknown device';
  const browser =
    [
      [/Edg\/(\d+)/, 'Edge'],
      [/OPR\/(\d+)/, 'Opera'],
      [/Firefox\/(\d+)/, 'Firefox'],
      [/HeadlessChrome\/(\d+)/, 'Headless Chrome'],
      [/Chrome\/(\d+)/, 'Chrome'],
      [/Version\/(\d+)[^ ]* (?:Mobile\/\S+ )?Safari\//, 'Safari'],
      [/curl\/([\d.]+)/, 'curl'],
    ]
      .map(([pattern, name]) => {
        const match = (pattern as RegExp).exec(userAgent);
        return match ? `${name as string} ${match[1]}` : null;
      })
      .find((found) => found !== null) ?? null;
  const system =
    [
      [/Android/, 'Android'],
      [/iPhone|iPad/, 'iOS'],
      [/Windows/, 'Windows'],
      [/Mac OS X|Macintosh/, 'macOS'],
      [/CrOS/, 'ChromeOS'],
      [/Linux/, 'Linux'],
    ].find(([pattern]) => (pattern as RegExp).test(userAgent))?.[1] ?? null;
  if (browser === null) return userAgent.slice(0, 60);
  return system === null ? browser : `${browser} on ${system as string}`;
}

function formOf(request: FastifyRequest): Form {
  return request.body instanceof Map ? (request.body as Form) : new Map<string, string[]>();
}

/** The verb context of a person acting in an organisation, for the audit rows of this page. */
async function personCtx(ctx: ServiceCtx, orgId: string, actor: Actor) {
  return { ...ctx, org: await getOrganization({ ctx, id: orgId }), actorKeyId: null, actor };
}

function personOf(request: FastifyRequest): DashboardSession & { accountId: string; email: string } {
  const s = session(request);
  if (s.kind !== 'person' || s.accountId === null || s.email === null) {
    throw new AppError('not_found', 'This page belongs to a person signed in with an e-mail address.');
  }
  return s as DashboardSession & { accountId: string; email: string };
}

const RESET_SENT =
  'If that address has an account, a link to set a new password is on its way to it. The link works once, for an hour.';

function problemOf(error: unknown): { status: number; message: string } {
  if (error instanceof AppError && error.status < 500)
    return { status: error.status, message: error.message };
  throw error;
}

function passwordField(label = 'New password'): SafeHtml {
  return html`<label for="password">${label}</label>
    <input
      id="password"
      name="password"
      type="password"
      autocomplete="new-password"
      minlength="12"
      required
      aria-describedby="password-hint"
    />
    <small id="password-hint" class="muted"
      >At least 12 characters; not your e-mail, not a common password.</small
    >`;
}

export function registerAccountPages(dash: FastifyInstance, app: FastifyInstance): void {
  const open = { config: { dashboardPublic: true } };
  const keyForm = () => app.tally.config.dashboardKeySignIn !== 'off';
  const sendPublic = (reply: FastifyReply, status: number, title: string, body: SafeHtml) =>
    reply.code(status).type('text/html; charset=utf-8').send(publicPage(title, body));

  /** Sign-in attempts and reset requests share the per-address limit. */
  async function addressAllowed(request: FastifyRequest): Promise<boolean> {
    try {
      const decision = await app.tally.rateLimiter.consume(
        `dashboard-sign-in:${request.ip}`,
        SIGN_IN_ATTEMPTS_PER_SECOND,
        1,
        app.tally.clock.now().getTime(),
      );
      return decision.granted >= 1;
    } catch (error) {
      request.log.warn({ err: error }, 'rate limiter unavailable; request let through');
      return true;
    }
  }

  const resetRequestForm = (message: string | null, status: 'error' | 'info' = 'error') =>
    html`${messageLine(message, status)}
      <p class="muted">Give the e-mail address you sign in with; we send a link to set a new password.</p>
      <form method="post" action="/dashboard/password-reset">
        <label for="email">E-mail</label>
        <input id="email" name="email" type="email" autocomplete="username" required autofocus />
        <button type="submit" class="button">Send the link</button>
      </form>
      <p><a href="/dashboard/login">Back to sign-in</a></p>`;

  dash.get('/password-reset', open, async (_request, reply) =>
    sendPublic(reply, 200, 'Forgot your password?', resetRequestForm(null)),
  );

  dash.post('/password-reset', open, async (request, reply) => {
    if (!(await addressAllowed(request))) {
      reply.header('Retry-After', '1');
      return sendPublic(
        reply,
        429,
        'Forgot your password?',
        resetRequestForm('Too many requests from your address. Wait a moment and try again.'),
      );
    }
    await requestPasswordReset(serviceCtx(app.tally), field(formOf(request), 'email'));
    return sendPublic(
      reply,
      200,
      'Check your e-mail',
      html`${messageLine(RESET_SENT, 'info')}
        <p><a href="/dashboard/login">Back to sign-in</a></p>`,
    );
  });

  const resetForm = (token: string, message: string | null) =>
    html`${messageLine(message)}
      <form method="post" action="/dashboard/password-reset/${token}">
        ${passwordField()}
        <button type="submit" class="button">Set the password and sign in</button>
      </form>`;
  const gone = html`${messageLine('This link has expired or has been used already. Ask for a new one.')}
    <p><a href="/dashboard/password-reset">Ask for a new link</a></p>`;

  dash.get<{ Params: { token: string } }>('/password-reset/:token', open, async (request, reply) => {
    const live = await liveToken(serviceCtx(app.tally), 'password_reset', request.params.token);
    if (!live) return sendPublic(reply, 404, 'Set a new password', gone);
    return sendPublic(reply, 200, 'Set a new password', resetForm(request.params.token, null));
  });

  dash.post<{ Params: { token: string } }>('/password-reset/:token', open, async (request, reply) => {
    const ctx = serviceCtx(app.tally);
    const { token } = request.params;
    let done;
    try {
      done = await resetPassword(ctx, token, field(formOf(request), 'password'));
    } catch (error) {
      const problem = problemOf(error);
      if (problem.status === 404) return sendPublic(reply, 404, 'Set a new password', gone);
      return sendPublic(reply, problem.status, 'Set a new password', resetForm(token, problem.message));
    }
    // The new password opens only an organisation that allows passwords, as a sign-in would.
    let orgId: string | null = null;
    for (const m of await membershipsOf(ctx, done.account.id)) {
      if (await passwordsAllowed(ctx, m.orgId)) {
        orgId = m.orgId;
        break;
      }
    }
    if (orgId === null) {
      return sendPublic(
        reply,
        200,
        'Set a new password',
        html`<p>Your password is set. Your organisation signs in with single sign-on only.</p>
          <p><a href="/dashboard/sso">Sign in with single sign-on</a></p>`,
      );
    }
    await signInBrowser({
      ctx,
      request,
      reply,
      accountId: done.account.id,
      orgId,
      method: 'reset',
    });
    return reply.redirect('/dashboard', 303);
  });

  const ownerForm = (token: string, email: string | null, message: string | null) =>
    html`${messageLine(message)}
      <p class="muted">
        This link makes you the first owner of the organisation: owners can do everything, members included.
      </p>
      <form method="post" action="/dashboard/first-owner/${token}">
        <label for="email">E-mail</label>
        ${
          email === null
            ? html`<input id="email" name="email" type="email" autocomplete="username" required autofocus />`
            : html`<input id="email" name="email" type="email" value="${email}" readonly />`
        }
        <label for="name">Name <span class="muted">(optional)</span></label>
        <input id="name" name="name" type="text" autocomplete="name" maxlength="200" />
        ${passwordField('Password')}
        <button type="submit" class="button">Create the account</button>
      </form>`;

  dash.get<{ Params: { token: string } }>('/first-owner/:token', open, async (request, reply) => {
    const live = await liveToken(serviceCtx(app.tally), 'first_owner', request.params.token);
    if (!live) return sendPublic(reply, 404, 'Create the owner’s account', gone);
    return sendPublic(
      reply,
      200,
      'Create the owner’s account',
      ownerForm(request.params.token, live.email, null),
    );
  });

  dash.post<{ Params: { token: string } }>('/first-owner/:token', open, async (request, reply) => {
    const ctx = serviceCtx(app.tally);
    const { token } = request.params;
    const form = formOf(request);
    const live = await liveToken(ctx, 'first_owner', token);
    if (!live) return sendPublic(reply, 404, 'Create the owner’s account', gone);
    let done;
    try {
      done = await redeemFirstOwner(ctx, token, {
        email: field(form, 'email'),
        password: field(form, 'password'),
        name: field(form, 'name').slice(0, 200),
      });
    } catch (error) {
      const problem = problemOf(error);
      if (problem.status === 404) return sendPublic(reply, 404, 'Create the owner’s account', gone);
      return sendPublic(
        reply,
        problem.status,
        'Create the owner’s account',
        ownerForm(token, live.email, problem.message),
      );
    }
    await signInBrowser({
      ctx,
      request,
      reply,
      accountId: done.account.id,
      orgId: done.orgId,
      method: 'first_owner',
    });
    return reply.redirect('/dashboard', 303);
  });

  dash.get('/login', open, async (request, reply) => {
    const ended = queryOf(request).get('ended') ?? '';
    const message = ENDED_MESSAGES[ended] ?? null;
    return reply
      .type('text/html; charset=utf-8')
      .send(loginPage({ message, status: 'info', keyForm: keyForm() }));
  });

  dash.post('/login', open, async (request, reply) => {
    const ctx = serviceCtx(app.tally);
    const allowed = await addressAllowed(request);
    const form = formOf(request);
    const email = field(form, 'email');
    const send = (status: number, message: string) =>
      reply
        .code(status)
        .type('text/html; charset=utf-8')
        .send(loginPage({ message, email, keyForm: keyForm() }));
    if (!allowed) {
      reply.header('Retry-After', '1');
      return send(429, 'Too many sign-in attempts from your address. Wait a moment and try again.');
    }

    if (form.has('api_key')) {
      const started = await startSession({ ctx, apiKey: field(form, 'api_key') });
      if ('refused' in started) return send(401, KEY_REFUSALS[started.refused]);
      const previous = readCookie(request, SESSION_COOKIE);
      if (previous) await dropAnySession(ctx, previous);
      setSessionCookie(request, reply, started.token);
      return reply.redirect('/dashboard', 303);
    }

    const result = await signInWithPassword({
      ctx,
      email,
      password: field(form, 'password'),
      ip: request.ip,
    });
    if (!result.ok) {
      if (result.reason === 'throttled') {
        const seconds = Math.ceil(result.retryAfterMs / 1000);
        reply.header('Retry-After', String(seconds));
        return send(
          429,
          `Too many failed sign-ins for this e-mail address or from your address. Try again in ${seconds} s.`,
        );
      }
      if (result.reason === 'single_sign_on_only') {
        return send(
          403,
          'Your organisation signs in with single sign-on only. Use “Sign in with single sign-on” below.',
        );
      }
      if (result.reason === 'no_membership') {
        return send(403, 'Your account belongs to no organisation. Ask an owner to invite you again.');
      }
      request.log.info({ event: 'sign_in_failed' }, 'dashboard sign-in refused');
      return send(401, INVALID);
    }
    const { membership } = result;
    await signInBrowser({
      ctx,
      request,
      reply,
      accountId: result.accountId,
      orgId: membership.orgId,
      method: 'password',
    });
    const actor: Actor = {
      kind: 'person',
      accountId: result.accountId,
      email: result.email,
      role: membership.role,
    };
    await recordAudit(await personCtx(ctx, membership.orgId, actor), {
      action: 'account.signed_in',
      target: `account:${result.accountId}`,
      before: null,
      after: { method: 'password', ip: request.ip },
    });
    return reply.redirect('/dashboard', 303);
  });

  dash.post('/logout', async (request, reply) => {
    const ctx = serviceCtx(app.tally);
    const s = session(request);
    const token = readCookie(request, SESSION_COOKIE);
    if (token) await endSession({ ctx, token });
    if (s.kind === 'person' && s.accountId !== null) {
      await recordAudit(await personCtx(ctx, s.org.id, s.actor), {
        action: 'account.signed_out',
        target: `account:${s.accountId}`,
        before: null,
        after: null,
      });
    }
    clearSessionCookie(request, reply);
    return reply.redirect('/dashboard/login?ended=signed_out', 303);
  });

  dash.get('/account', async (request, reply) => {
    const s = personOf(request);
    const ctx = dashboardCtx(app, request);
    const sessions = await listAccountSessions(ctx, s.accountId);
    const orgNames = new Map(s.memberships.map((m) => [m.orgId, m.orgName]));
    const rows = sessions.map(
      (row) =>
        html`<tr>
          <td title="${row.userAgent ?? ''}">
            ${deviceOf(row.userAgent)} ${row.id === s.id ? html` <span class="pill">this session</span>` : ''}
          </td>
          <td>${row.ip ?? '—'}</td>
          <td>${orgNames.get(row.orgId) ?? row.orgId}</td>
          <td>${row.method}</td>
          <td>${dateTime(new Date(row.createdAt).toISOString())}</td>
          <td>${dateTime(new Date(row.lastSeenAt).toISOString())}</td>
          <td>
            <form method="post" action="/dashboard/account/sessions/end">
              ${csrfField(s.csrfToken)}
              <input type="hidden" name="session" value="${row.handle}" />
              <button type="submit" class="button quiet">${row.id === s.id ? 'Sign out' : 'End'}</button>
            </form>
          </td>
        </tr>`,
    );
    const memberships = s.memberships.map(
      (m) =>
        html`<tr>
          <td>${m.orgName}</td>
          <td>${m.role}</td>
          <td>
            ${
              m.orgId === s.org.id
                ? html`<span class="pill">current</span>`
                : html`<form method="post" action="/dashboard/account/switch">
                    ${csrfField(s.csrfToken)}
                    <input type="hidden" name="org_id" value="${m.orgId}" />
                    <button type="submit" class="button quiet">Switch to it</button>
                  </form>`
            }
          </td>
        </tr>`,
    );
    return sendPage(request, reply, {
      title: 'Your account',
      section: 'Account',
      body: html`<section class="panel">
          <h2>Your sessions</h2>
          <p class="muted">
            Every browser signed in as ${s.email}. End the ones you do not recognise; a password change ends
            all but this one.
          </p>
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Device</th>
                  <th scope="col">Address</th>
                  <th scope="col">Organisation</th>
                  <th scope="col">How</th>
                  <th scope="col">Started</th>
                  <th scope="col">Last seen</th>
                  <th scope="col"><span class="sr-only">Actions</span></th>
                </tr>
              </thead>
              <tbody>
                ${rows}
              </tbody>
            </table>
          </div>
        </section>
        <section class="panel">
          <h2>Your organisations</h2>
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Organisation</th>
                  <th scope="col">Your role</th>
                  <th scope="col"><span class="sr-only">Actions</span></th>
                </tr>
              </thead>
              <tbody>
                ${memberships}
              </tbody>
            </table>
          </div>
        </section>
        <section class="panel">
          <h2>Change your password</h2>
          <form method="post" action="/dashboard/account/password" class="form-grid">
            ${csrfField(s.csrfToken)}
            <div class="field">
              <label for="current_password">Current password</label>
              <input
                id="current_password"
                name="current_password"
                type="password"
                autocomplete="current-password"
                required
              />
            </div>
            <div class="field">
              <label for="new_password">New password</label>
              <input
                id="new_password"
                name="new_password"
                type="password"
                autocomplete="new-password"
                minlength="12"
                required
                aria-describedby="new_password-hint"
              />
              <small id="new_password-hint" class="muted"
                >At least 12 characters; not your e-mail, not a common password.</small
              >
            </div>
            <div class="field actions"><button type="submit" class="button">Change password</button></div>
          </form>
        </section>`,
    });
  });

  dash.post('/account/sessions/end', async (request, reply) => {
    const s = personOf(request);
    const ctx = serviceCtx(app.tally);
    const handle = field(formOf(request), 'session');
    const own = s.id.slice(0, 16) === handle;
    const ended = await endAccountSessionByHandle(ctx, s.accountId, handle);
    if (!ended)
      return redirectWithNotice(app, request, reply, '/dashboard/account', 'That session had already ended.');
    await recordAudit(await personCtx(ctx, s.org.id, s.actor), {
      action: 'account.session_ended',
      target: `account:${s.accountId}`,
      before: null,
      after: { own },
    });
    if (own) {
      clearSessionCookie(request, reply);
      return reply.redirect('/dashboard/login?ended=signed_out', 303);
    }
    return redirectWithNotice(app, request, reply, '/dashboard/account', 'The session is ended.');
  });

  dash.post('/account/password', async (request, reply) => {
    const s = personOf(request);
    const ctx = serviceCtx(app.tally);
    const form = formOf(request);
    const account = await getAccount(ctx, s.accountId);
    const row = await ctx.db
      .selectFrom('accounts')
      .select('password_hash')
      .where('id', '=', s.accountId)
      .executeTakeFirst();
    if (
      !account ||
      !row?.password_hash ||
      !(await verifyPassword(field(form, 'current_password'), row.password_hash))
    ) {
      throw new AppError('validation_error', 'The current password is not right.', [
        { path: '/current_password', message: 'The current password is not right.' },
      ]);
    }
    await setPassword(ctx, account, field(form, 'new_password'));
    await endOtherSessions(ctx, s.accountId, s.id);
    await recordAudit(await personCtx(ctx, s.org.id, s.actor), {
      action: 'account.password_changed',
      target: `account:${s.accountId}`,
      before: null,
      after: null,
    });
    return redirectWithNotice(
      app,
      request,
      reply,
      '/dashboard/account',
      'Your password is changed; your other sessions are ended.',
    );
  });

  dash.post('/account/switch', async (request, reply) => {
    const s = personOf(request);
    const orgId = field(formOf(request), 'org_id');
    const target = s.memberships.find((m) => m.orgId === orgId);
    if (!target) {
      throw new AppError('not_found', 'You are not a member of that organisation.');
    }
    const ctx = serviceCtx(app.tally);
    // An organisation with single sign-on only is entered through its identity provider, from
    // any session: the switch goes there, and its sign-in opens a session in that organisation.
    if (!(await passwordsAllowed(ctx, target.orgId))) {
      const start = `/dashboard/sso/${encodeURIComponent(target.orgId)}/start`;
      return reply.type('text/html; charset=utf-8').send(continuePage(start));
    }
    await switchSessionOrg(ctx, s.id, target.orgId);
    const actor: Actor = { kind: 'person', accountId: s.accountId, email: s.email, role: target.role };
    await recordAudit(await personCtx(ctx, target.orgId, actor), {
      action: 'account.org_switched',
      target: `account:${s.accountId}`,
      before: { org_id: s.org.id },
      after: { org_id: target.orgId },
    });
    return redirectWithNotice(app, request, reply, '/dashboard', `You are now looking at ${target.orgName}.`);
  });
}
