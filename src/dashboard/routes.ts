import type { FastifyInstance } from 'fastify';
import { serviceCtx } from '../http/app-types.js';
import { AppError } from '../errors.js';
import { unstorableIssues } from '../http/storable.js';
import { loadAssets } from './assets.js';
import { html } from './html.js';
import { registerAssumptionPages } from './pages/assumptions.js';
import { registerBudgetPages } from './pages/budgets.js';
import { registerBudgetEmailPages } from './pages/budgets-emails.js';
import { registerPaybackPages } from './pages/budgets-payback.js';
import { registerEventPages } from './pages/events.js';
import { registerOverviewPage } from './pages/overview.js';
import { registerReportPages } from './pages/reports.js';
import { registerSettingsPages } from './pages/settings.js';
import { registerTaskTypePages } from './pages/task-types.js';
import { registerUsagePage } from './pages/usage.js';
import { registerWebhookPages } from './pages/webhooks.js';
import { registerOpenTelemetryPage } from './pages/opentelemetry.js';
import { registerPeriodPages } from './pages/periods.js';
import { registerMemberPages } from './pages/members.js';
import { registerSsoPages } from './pages/sso.js';
import { registerAccountPages } from './pages/account.js';
import {
  clearSessionCookie,
  readCookie,
  sameOrigin,
  SESSION_COOKIE,
  setSecurityHeaders,
  tokensMatch,
} from './security.js';
import { resumeSession } from './sessions.js';
import { field, sendPage, type Form } from './page-kit.js';

/**
 * A posted form, by field. Its strings meet the API's storable-string rule (no NUL, no unpaired
 * surrogate), so a form can never hand the store what a JSON body may not.
 */
function parseForm(body: string): Form {
  const form: Form = new Map();
  for (const [name, value] of new URLSearchParams(body)) {
    const list = form.get(name);
    if (list) list.push(value);
    else form.set(name, [value]);
  }
  const issues = unstorableIssues(Object.fromEntries(form), '/body');
  if (issues.length > 0) {
    throw new AppError(
      'validation_error',
      'A field holds characters Tally cannot store (NUL or an unpaired surrogate); remove them and try again.',
      issues,
    );
  }
  return form;
}

const DASHBOARD_ROUTES = new Set<string>();

/** Every dashboard route registered so far, as `METHOD /dashboard/…` (the role matrix's test walks them). */
export function dashboardRoutes(): string[] {
  return [...DASHBOARD_ROUTES].sort();
}

export async function registerDashboard(app: FastifyInstance): Promise<void> {
  const assets = loadAssets();
  const hidden = { schema: { hide: true } };
  app.get('/', hidden, async (_request, reply) => reply.redirect('/dashboard', 302));
  app.get('/favicon.ico', hidden, async (_request, reply) => {
    const icon = assets.get('favicon.svg');
    return reply.type(icon?.type ?? 'image/svg+xml').send(icon?.body);
  });

  await app.register(
    async (dash) => {
      dash.decorateRequest('dashboardSession', null);
      // Pages are not API: they stay out of /openapi.json.
      dash.addHook('onRoute', (route) => {
        route.schema = { ...route.schema, hide: true };
        for (const method of [route.method].flat()) DASHBOARD_ROUTES.add(`${method} ${route.url}`);
      });
      // Forms post as application/x-www-form-urlencoded; only here, the API stays JSON-only.
      dash.addContentTypeParser(
        'application/x-www-form-urlencoded',
        { parseAs: 'string' },
        (_request, body, done) => {
          try {
            done(null, parseForm(String(body)));
          } catch (error) {
            done(error as AppError, undefined);
          }
        },
      );

      dash.addHook('onRequest', async (request, reply) => {
        setSecurityHeaders(reply);
        if (request.routeOptions.config.dashboardPublic) return;
        const resumed = await resumeSession({
          ctx: serviceCtx(app.tally),
          token: readCookie(request, SESSION_COOKIE),
        });
        if ('ended' in resumed) {
          if (resumed.ended !== 'none') clearSessionCookie(request, reply);
          const reason = resumed.ended === 'none' ? '' : `?ended=${resumed.ended}`;
          return reply.redirect(`/dashboard/login${reason}`, 303);
        }
        request.dashboardSession = resumed.session;
      });

      // CSRF: every state change carries the session's token and comes from this origin.
      dash.addHook('preHandler', async (request, reply) => {
        if (request.method === 'GET' || request.method === 'HEAD') return;
        if (!sameOrigin(request)) {
          return reply.code(403).type('text/plain; charset=utf-8').send('Cross-origin form refused.');
        }
        const s = request.dashboardSession;
        if (!s) return;
        const form = request.body instanceof Map ? (request.body as Form) : new Map<string, string[]>();
        if (!tokensMatch(s.csrfToken, field(form, 'csrf_token'))) {
          return reply
            .code(403)
            .type('text/plain; charset=utf-8')
            .send('The form has expired or did not come from this dashboard. Go back, reload and try again.');
        }
      });

      dash.setErrorHandler(async (error, request, reply) => {
        const appError = error instanceof AppError ? error : null;
        const status = appError?.status ?? (error as { statusCode?: number }).statusCode ?? 500;
        if (status >= 500) request.log.error({ err: error }, 'dashboard error');
        const message =
          appError && status < 500
            ? appError.message
            : status === 415 || status === 413 || status === 400
              ? 'The form could not be read.'
              : 'Something went wrong on our side. Try again shortly.';
        if (!request.dashboardSession) {
          return reply.code(status).type('text/plain; charset=utf-8').send(message);
        }
        return sendPage(request, reply, {
          title: status === 404 ? 'Not found' : 'Something went wrong',
          section: null,
          status,
          body: html`<p class="error" role="alert">${message}</p>
            <p><a href="/dashboard">Back to the overview</a></p>`,
        });
      });

      dash.setNotFoundHandler(async (request, reply) =>
        sendPage(request, reply, {
          title: 'Not found',
          section: null,
          status: 404,
          body: html`<p>There is no page at this address.</p>
            <p><a href="/dashboard">Back to the overview</a></p>`,
        }),
      );

      const open = { config: { dashboardPublic: true } };
      dash.get<{ Params: { name: string } }>('/assets/:name', open, async (request, reply) => {
        const asset = assets.get(request.params.name);
        if (!asset) return reply.code(404).type('text/plain; charset=utf-8').send('Not found');
        return reply.header('Cache-Control', 'public, max-age=300').type(asset.type).send(asset.body);
      });

      registerAccountPages(dash, app);
      registerOverviewPage(dash, app);
      registerReportPages(dash, app);
      registerEventPages(dash, app);
      registerTaskTypePages(dash, app);
      registerWebhookPages(dash, app);
      registerUsagePage(dash, app);
      registerSettingsPages(dash, app);
      registerOpenTelemetryPage(dash, app);
      registerPeriodPages(dash, app);
      registerPaybackPages(dash, app);
      registerBudgetEmailPages(dash, app);
      registerBudgetPages(dash, app);
      registerMemberPages(dash, app);
      registerSsoPages(dash, app);
      registerAssumptionPages(dash, app);
    },
    { prefix: '/dashboard' },
  );
}
