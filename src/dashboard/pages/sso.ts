import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasRole } from '../../accounts/authorize.js';
import { signInBrowser } from '../../accounts/sessions.js';
import { planAtLeast } from '../../billing/plans.js';
import { AppError } from '../../errors.js';
import { serviceCtx } from '../../http/app-types.js';
import {
  deleteSsoConnection,
  getSsoConnection,
  orgForDomain,
  putSsoConnection,
  redirectUri,
  startUrl,
  type SsoConnectionView,
} from '../../sso/connections.js';
import { completeSsoSignIn, LOGIN_TTL_MS, SSO_COOKIE, SsoRefusal, startSsoSignIn } from '../../sso/flow.js';
import { html, type SafeHtml } from '../html.js';
import { csrfField, planName } from '../layout.js';
import { dashboardCtx, field, redirectWithNotice, sendPage, session, type Form } from '../page-kit.js';
import { readCookie } from '../security.js';
import { select, textField } from './controls.js';

// Single sign-on in the dashboard: the sign-in entry that routes by the e-mail's domain, the
// start and callback of the OpenID Connect flow (all open without a session), and the owner's
// settings page.

const open = { config: { dashboardPublic: true } };

/** Sign-ins started per client address and second: each writes a row. */
const STARTS_PER_SECOND = 5;

/** Whether `request`'s address may start another sign-in now (a limiter outage lets it through). */
async function mayStart(app: FastifyInstance, request: FastifyRequest): Promise<boolean> {
  try {
    const decision = await app.tally.rateLimiter.consume(
      `dashboard-sso:${request.ip}`,
      STARTS_PER_SECOND,
      1,
      app.tally.clock.now().getTime(),
    );
    return decision.granted >= 1;
  } catch (error) {
    request.log.warn({ err: error }, 'rate limiter unavailable; single sign-on let through');
    return true;
  }
}

function ssoCookie(request: FastifyRequest, value: string, maxAgeSeconds: number): string {
  const secure = request.protocol === 'https' ? '; Secure' : '';
  // Lax, not Strict: the cookie must come back on the provider's top-level redirect.
  return `${SSO_COOKIE}=${value}; Path=/dashboard/sso; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${secure}`;
}

/** The signed-out frame of the sign-in pages. */
function entryPage(input: { message: string | null; email?: string }): string {
  return `<!doctype html>\n${
    html`<html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>Single sign-on · Tally</title>
        <link rel="icon" href="/dashboard/assets/favicon.svg" type="image/svg+xml" />
        <link rel="stylesheet" href="/dashboard/assets/dashboard.css" />
      </head>
      <body class="login">
        <main id="main" class="login-box">
          <p class="brand">Tally</p>
          <h1>Sign in with single sign-on</h1>
          <p class="muted">Give your work e-mail: you continue at your organisation's identity provider.</p>
          ${input.message === null ? '' : html`<p class="error" role="alert">${input.message}</p>`}
          <form method="post" action="/dashboard/sso">
            <label for="email">Work e-mail</label>
            <input
              id="email"
              name="email"
              type="email"
              autocomplete="email"
              value="${input.email ?? ''}"
              required
            />
            <button type="submit" class="button">Continue</button>
          </form>
          <p><a href="/dashboard/login">Other ways to sign in</a></p>
        </main>
      </body>
    </html>`.text
  }`;
}

/** After the e-mail: on to the organisation's start, at once (and a link, should refresh be off). */
export function continuePage(start: string): string {
  return `<!doctype html>\n${
    html`<html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta http-equiv="refresh" content="0; url=${start}" />
        <title>Single sign-on · Tally</title>
        <link rel="stylesheet" href="/dashboard/assets/dashboard.css" />
      </head>
      <body class="login">
        <main id="main" class="login-box">
          <p class="brand">Tally</p>
          <h1>Single sign-on</h1>
          <p><a href="${start}">Continue to your organisation’s identity provider</a></p>
        </main>
      </body>
    </html>`.text
  }`;
}

function sendEntry(reply: FastifyReply, status: number, message: string | null, email?: string) {
  return reply.code(status).type('text/html; charset=utf-8').send(entryPage({ message, email }));
}

/** What a non-owner sees: the connection, read only. */
function connectionFacts(c: SsoConnectionView | null): SafeHtml {
  if (c === null) return html`<p>Single sign-on is not set up.</p>`;
  return html`<dl class="facts">
    <dt>Issuer</dt>
    <dd><code>${c.issuer}</code></dd>
    <dt>Client ID</dt>
    <dd><code>${c.client_id}</code></dd>
    <dt>Allowed e-mail domains</dt>
    <dd>${c.allowed_domains.join(', ')}</dd>
    <dt>Role of people new to the organisation</dt>
    <dd>${c.default_role}</dd>
    <dt>Status</dt>
    <dd>
      ${c.enabled ? 'Enabled' : 'Disabled'};
      ${c.passwords_allowed ? 'passwords allowed too' : 'single sign-on only'}
    </dd>
  </dl>`;
}

function connectionForm(c: SsoConnectionView | null, token: string): SafeHtml {
  return html`<form method="post" action="/dashboard/settings/sso" class="form-grid">
    ${csrfField(token)}
    ${textField({
      id: 'issuer',
      name: 'issuer',
      label: 'Issuer URL',
      value: c?.issuer ?? '',
      required: true,
      wide: true,
      hint: 'As the provider’s discovery document writes it, e.g. https://login.microsoftonline.com/<tenant>/v2.0',
    })}
    ${textField({ id: 'client_id', name: 'client_id', label: 'Client ID', value: c?.client_id ?? '', required: true })}
    ${textField({
      id: 'client_secret',
      name: 'client_secret',
      label: 'Client secret',
      type: 'password',
      required: c === null,
      hint: c === null ? 'Stored encrypted; never shown again' : 'Stored encrypted; empty keeps it',
      attrs: html`autocomplete="off"`,
    })}
    ${select({
      id: 'default_role',
      name: 'default_role',
      label: 'Role of new people',
      options: [
        ['analyst', 'analyst'],
        ['admin', 'admin'],
      ],
      value: c?.default_role ?? 'analyst',
    })}
    <div class="field wide">
      <label for="allowed_domains">Allowed e-mail domains</label>
      <textarea id="allowed_domains" name="allowed_domains" rows="2" aria-describedby="allowed_domains-hint">
${(c?.allowed_domains ?? []).join('\n')}</textarea>
      <small id="allowed_domains-hint" class="muted"
        >One per line, e.g. example.com; only e-mails of these domains may sign in (exact domain). People new
        to the organisation get the role above at their first sign-in.</small
      >
    </div>
    <fieldset class="field wide">
      <legend>Options</legend>
      <label class="check"
        ><input type="checkbox" name="enabled" value="1" ${c === null || c.enabled ? html` checked` : ''} />
        Single sign-on enabled</label
      >
      <label class="check"
        ><input
          type="checkbox"
          name="passwords_allowed"
          value="1"
          ${c === null || c.passwords_allowed ? html` checked` : ''}
        />
        Members may still sign in with a password</label
      >
    </fieldset>
    <div class="field actions"><button type="submit" class="button">Save single sign-on</button></div>
  </form>`;
}

async function settingsPage(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  error: string | null,
) {
  const ctx = dashboardCtx(app, request);
  const title = 'Single sign-on';
  if (!planAtLeast(ctx.org.plan, 'enterprise')) {
    // Not the page kit's planGate: that one names Pro and above.
    const body = html`<section class="gate" aria-label="Plan required">
      <h2>Single sign-on needs the Enterprise plan</h2>
      <p>
        Your organisation is on the ${planName(ctx.org.plan)} plan. Signing in through your identity provider
        (OpenID Connect) is part of the Enterprise plan. An administrator can change the plan with
        <code>tally orgs set-plan --org ${ctx.org.id} --plan enterprise</code>.
      </p>
    </section>`;
    return sendPage(request, reply, { title, section: 'Settings', body });
  }
  if (!hasRole(ctx, 'admin')) {
    return sendPage(request, reply, {
      title,
      section: 'Settings',
      body: html`<p>Single sign-on is set up by the organisation’s owners.</p>`,
    });
  }
  let connection: SsoConnectionView | null = null;
  try {
    connection = await getSsoConnection({ ctx });
  } catch (e) {
    if (!(e instanceof AppError && e.code === 'not_found')) throw e;
  }
  const canEdit = hasRole(ctx, 'owner');
  const token = session(request).csrfToken;
  const body = html`${error === null ? '' : html`<p class="error" role="alert">Not saved: ${error}</p>`}
    <section class="panel">
      <h2>At your identity provider</h2>
      <p>
        Register a web application (OpenID Connect, authorization code flow) with the redirect URI below and
        the scopes <code>openid email profile</code>, then enter its issuer, client ID and secret here.
      </p>
      <h3>Redirect URI</h3>
      <div class="copyline">
        <code id="redirect-uri">${redirectUri(ctx)}</code>
        <button type="button" class="button quiet" data-copy="redirect-uri">Copy</button>
      </div>
      <h3>Sign-in link of this organisation</h3>
      <div class="copyline">
        <code id="start-url">${startUrl(ctx, ctx.org.id)}</code>
        <button type="button" class="button quiet" data-copy="start-url">Copy</button>
      </div>
      <p class="muted">
        People can also choose “Sign in with single sign-on” on the sign-in page and give their e-mail.
      </p>
    </section>
    <section class="panel">
      <h2>${connection === null ? 'Set up single sign-on' : 'Connection'}</h2>
      ${
        canEdit
          ? connectionForm(connection, token)
          : html`<p class="muted">Only an owner can change single sign-on.</p>
              ${connectionFacts(connection)}`
      }
    </section>
    ${
      connection !== null && canEdit
        ? html`<section class="panel">
            <h2>Remove single sign-on</h2>
            <p>Members then sign in with a password (or an invitation) again.</p>
            <form method="post" action="/dashboard/settings/sso/remove">
              ${csrfField(token)}
              <button type="submit" class="button danger">Remove single sign-on</button>
            </form>
          </section>`
        : ''
    }`;
  return sendPage(request, reply, { title, section: 'Settings', body, status: error === null ? 200 : 422 });
}

function inputOf(form: Form) {
  const secret = field(form, 'client_secret');
  const role = field(form, 'default_role');
  return {
    issuer: field(form, 'issuer').trim(),
    client_id: field(form, 'client_id').trim(),
    ...(secret === '' ? {} : { client_secret: secret }),
    allowed_domains: field(form, 'allowed_domains')
      .split(/[\s,]+/)
      .filter((d) => d !== ''),
    default_role: role === 'admin' ? ('admin' as const) : ('analyst' as const),
    passwords_allowed: field(form, 'passwords_allowed') === '1',
    enabled: field(form, 'enabled') === '1',
  };
}

export function registerSsoPages(dash: FastifyInstance, app: FastifyInstance): void {
  dash.get('/sso', open, async (_request, reply) => sendEntry(reply, 200, null));

  // Routes by the e-mail's domain to the one organisation whose single sign-on admits it.
  dash.post<{ Body: Form }>('/sso', open, async (request, reply) => {
    const email = field(request.body, 'email').trim().slice(0, 254);
    const at = email.lastIndexOf('@');
    const orgId = at > 0 ? await orgForDomain(serviceCtx(app.tally), email.slice(at + 1)) : null;
    if (orgId === null) {
      return sendEntry(
        reply,
        404,
        'No single sign-on is set up for that e-mail’s domain. Sign in with your password, or ask your organisation for its sign-in link.',
        email,
      );
    }
    // Not a redirect: the page's CSP (form-action 'self') stops a form's redirects at another
    // origin, and the start sends the browser to the provider. The refresh is a new navigation.
    const start = `/dashboard/sso/${encodeURIComponent(orgId)}/start`;
    return reply.type('text/html; charset=utf-8').send(continuePage(start));
  });

  dash.get<{ Params: { org: string } }>('/sso/:org/start', open, async (request, reply) => {
    if (!(await mayStart(app, request))) {
      reply.header('Retry-After', '1');
      return sendEntry(reply, 429, 'Too many sign-ins from your address. Wait a moment and try again.');
    }
    try {
      const started = await startSsoSignIn({
        ctx: serviceCtx(app.tally),
        orgId: request.params.org.slice(0, 64),
      });
      reply.header('Set-Cookie', ssoCookie(request, started.state, LOGIN_TTL_MS / 1000));
      return reply.redirect(started.url, 303);
    } catch (error) {
      if (error instanceof SsoRefusal) return sendEntry(reply, error.status, error.message);
      if (error instanceof AppError && error.status < 500)
        return sendEntry(reply, error.status, error.message);
      throw error;
    }
  });

  dash.get('/sso/callback', open, async (request, reply) => {
    const q = request.url.indexOf('?');
    const query = new URLSearchParams(q < 0 ? '' : request.url.slice(q + 1));
    const ctx = serviceCtx(app.tally);
    // Whatever happens, the sign-in in flight is over for this browser.
    reply.header('Set-Cookie', ssoCookie(request, '', 0));
    try {
      const signedIn = await completeSsoSignIn({ ctx, query, boundState: readCookie(request, SSO_COOKIE) });
      await signInBrowser({
        ctx,
        request,
        reply,
        accountId: signedIn.accountId,
        orgId: signedIn.orgId,
        method: 'sso',
      });
      return reply.redirect('/dashboard', 303);
    } catch (error) {
      if (error instanceof SsoRefusal) {
        request.log.warn({ reason: error.reason, detail: error.detail }, 'single sign-on refused');
        return sendEntry(reply, error.status, error.message);
      }
      if (error instanceof AppError && error.status < 500)
        return sendEntry(reply, error.status, error.message);
      throw error;
    }
  });

  dash.get('/settings/sso', async (request, reply) => settingsPage(app, request, reply, null));

  dash.post<{ Body: Form }>('/settings/sso', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    try {
      await putSsoConnection({ ctx, input: inputOf(request.body) });
    } catch (error) {
      if (!(error instanceof AppError) || error.status >= 500 || error.status === 403) throw error;
      const d = error.details?.[0];
      return settingsPage(
        app,
        request,
        reply,
        d ? `${d.path.replace('/body/', '')} ${d.message}` : error.message,
      );
    }
    return redirectWithNotice(app, request, reply, '/dashboard/settings/sso', 'Single sign-on saved.');
  });

  dash.post('/settings/sso/remove', async (request, reply) => {
    await deleteSsoConnection({ ctx: dashboardCtx(app, request) });
    return redirectWithNotice(app, request, reply, '/dashboard/settings/sso', 'Single sign-on removed.');
  });
}
