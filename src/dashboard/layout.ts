import type { Organization } from '../orgs/organizations.js';
import { html, type SafeHtml } from './html.js';

export const NAV = [
  ['Overview', '/dashboard'],
  ['Reports', '/dashboard/reports'],
  ['Budgets', '/dashboard/budgets'],
  ['Events', '/dashboard/events'],
  ['Task types', '/dashboard/task-types'],
  ['Webhooks', '/dashboard/webhooks'],
  ['Usage', '/dashboard/usage'],
  ['Settings', '/dashboard/settings'],
  ['OpenTelemetry', '/dashboard/opentelemetry'],
  ['Periods', '/dashboard/periods'],
  ['Members', '/dashboard/members'],
] as const;

export type Section = (typeof NAV)[number][0];

const PLAN_NAMES: Record<string, string> = { free: 'Free', pro: 'Pro', enterprise: 'Enterprise' };
export const planName = (plan: string) => PLAN_NAMES[plan] ?? plan;

function head(title: string): SafeHtml {
  return html`<head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>${title} · Tally</title>
    <link rel="icon" href="/dashboard/assets/favicon.svg" type="image/svg+xml" />
    <link rel="stylesheet" href="/dashboard/assets/dashboard.css" />
    <script src="/dashboard/assets/dashboard.js" defer></script>
  </head>`;
}

export interface PageInput {
  title: string;
  section: Section;
  org: Organization;
  csrfToken: string;
  flash: string | null;
  body: SafeHtml;
}

/** The frame of every signed-in page: navigation, organisation, plan and currency, notice. */
export function page(input: PageInput): string {
  const nav = NAV.map(
    ([label, href]) =>
      html`<li>
        <a href="${href}" ${input.section === label ? html` aria-current="page"` : ''}>${label}</a>
      </li>`,
  );
  return `<!doctype html>\n${
    html`<html lang="en">
      ${head(input.title)}
      <body>
        <a class="skip" href="#main">Skip to content</a>
        <header class="top">
          <div class="brand"><a href="/dashboard" aria-label="Tally home">Tally</a></div>
          <div class="org" aria-label="Organisation">
            <span class="org-name">${input.org.name}</span>
            <span class="pill">${planName(input.org.plan)} plan</span>
            <span class="pill">${input.org.currency}</span>
          </div>
          <nav aria-label="Main">
            <ul>
              ${nav}
            </ul>
            <form method="post" action="/dashboard/logout" class="signout">
              <input type="hidden" name="csrf_token" value="${input.csrfToken}" />
              <button type="submit" class="button quiet">Sign out</button>
            </form>
          </nav>
        </header>
        <main id="main">
          <h1>${input.title}</h1>
          ${input.flash === null ? '' : html`<p class="notice" role="status">${input.flash}</p>`}
          ${input.body}
          <footer class="muted"><a href="/reference">API reference</a></footer>
        </main>
      </body>
    </html>`.text
  }`;
}

/** The sign-in page (no session yet). */
export function loginPage(input: { message: string | null; status?: 'error' | 'info' }): string {
  return `<!doctype html>\n${
    html`<html lang="en">
      ${head('Sign in')}
      <body class="login">
        <main id="main" class="login-box">
          <p class="brand">Tally</p>
          <h1>Sign in</h1>
          <p class="muted">
            Sign in with an admin API key of your organisation. The key opens a session and is not kept in
            your browser.
          </p>
          ${
            input.message === null
              ? ''
              : html`<p class="${input.status === 'info' ? 'notice' : 'error'}" role="alert">
                  ${input.message}
                </p>`
          }
          <form method="post" action="/dashboard/login">
            <label for="api_key">API key</label>
            <input
              id="api_key"
              name="api_key"
              type="password"
              autocomplete="off"
              spellcheck="false"
              required
            />
            <button type="submit" class="button">Sign in</button>
          </form>
          <p><a href="/dashboard/sso">Sign in with single sign-on</a></p>
        </main>
      </body>
    </html>`.text
  }`;
}

/** Hidden CSRF field of every form. */
export function csrfField(token: string): SafeHtml {
  return html`<input type="hidden" name="csrf_token" value="${token}" />`;
}

/** The plan-gate explanation in place of a page part (DESIGN §10: never an error page). */
export function planGate(what: string, needed: string, org: Organization): SafeHtml {
  return html`<section class="gate" aria-label="Plan required">
    <h2>${what} needs the ${needed} plan</h2>
    <p>
      Your organisation is on the ${planName(org.plan)} plan. ${what} is part of the ${needed} and Enterprise
      plans. An administrator can change the plan with
      <code>tally orgs set-plan --org ${org.id} --plan pro</code>.
    </p>
  </section>`;
}
