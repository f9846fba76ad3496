import type { Organization } from '../orgs/organizations.js';
import type { Role } from '../accounts/roles.js';
import { html, type SafeHtml } from './html.js';
import { withoutChangeForms } from './read-only.js';

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

/**
 * The part of the dashboard a page belongs to, highlighted in the header: an entry of the
 * navigation, the signed-in person's own account (the link with their e-mail), or none (a page
 * not found).
 */
export type Section = (typeof NAV)[number][0] | 'Account' | null;

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

/** The signed-in person of a page (absent for an API key's session). */
export interface PagePerson {
  email: string;
  role: Role;
  memberships: ReadonlyArray<{ orgId: string; orgName: string; role: Role }>;
}

export interface PageInput {
  title: string;
  section: Section;
  org: Organization;
  csrfToken: string;
  flash: string | null;
  body: SafeHtml;
  person?: PagePerson | null;
  /** False: the body's change panels and forms are left out (an analyst's pages; read-only.ts). */
  mayChange?: boolean;
}

function personMenu(person: PagePerson, org: Organization, csrfToken: string, current: boolean): SafeHtml {
  const others = person.memberships.filter((m) => m.orgId !== org.id);
  const switcher =
    others.length === 0
      ? ''
      : html`<form method="post" action="/dashboard/account/switch" class="switch-org">
          <input type="hidden" name="csrf_token" value="${csrfToken}" />
          <label for="switch_org" class="sr-only">Switch organisation</label>
          <select id="switch_org" name="org_id">
            ${person.memberships.map(
              (m) =>
                html`<option value="${m.orgId}" ${m.orgId === org.id ? html` selected` : ''}>
                  ${m.orgName} (${m.role})
                </option>`,
            )}
          </select>
          <button type="submit" class="button quiet">Switch</button>
        </form>`;
  return html`<div class="person">
    ${switcher}
    <a
      href="/dashboard/account"
      class="person-link"
      title="Your account and sessions"
      ${current ? html` aria-current="page"` : ''}
      >${person.email} <span class="pill">${person.role}</span></a
    >
  </div>`;
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
          ${
            input.person
              ? personMenu(input.person, input.org, input.csrfToken, input.section === 'Account')
              : ''
          }
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
          ${input.mayChange === false ? withoutChangeForms(input.body) : input.body}
          <footer class="muted"><a href="/reference">API reference</a></footer>
        </main>
      </body>
    </html>`.text
  }`;
}

/** A page outside a session: sign-in, password reset, the first owner's account. */
export function publicPage(title: string, body: SafeHtml): string {
  return `<!doctype html>\n${
    html`<html lang="en">
      ${head(title)}
      <body class="login">
        <main id="main" class="login-box">
          <p class="brand">Tally</p>
          <h1>${title}</h1>
          ${body}
        </main>
      </body>
    </html>`.text
  }`;
}

export function messageLine(message: string | null, status: 'error' | 'info' = 'error'): SafeHtml | '' {
  return message === null
    ? ''
    : html`<p class="${status === 'info' ? 'notice' : 'error'}" role="alert">${message}</p>`;
}

/**
 * The sign-in page (no session yet): e-mail and password; the API key form only where the
 * operator allows key sign-in (`keyForm`).
 */
export function loginPage(input: {
  message: string | null;
  status?: 'error' | 'info';
  email?: string;
  keyForm?: boolean;
}): string {
  const keyForm = input.keyForm
    ? html`<details class="key-sign-in">
        <summary>Sign in with an API key</summary>
        <p class="muted">
          For recovery, where the operator allows it: an admin API key of your organisation opens a session
          and is not kept in your browser.
        </p>
        <form method="post" action="/dashboard/login">
          <label for="api_key">API key</label>
          <input id="api_key" name="api_key" type="password" autocomplete="off" spellcheck="false" required />
          <button type="submit" class="button quiet">Sign in with the key</button>
        </form>
      </details>`
    : '';
  return publicPage(
    'Sign in',
    html`${messageLine(input.message, input.status)}
      <form method="post" action="/dashboard/login">
        <label for="email">E-mail</label>
        <input
          id="email"
          name="email"
          type="email"
          autocomplete="username"
          value="${input.email ?? ''}"
          required
          autofocus
        />
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autocomplete="current-password" required />
        <button type="submit" class="button">Sign in</button>
      </form>
      <p><a href="/dashboard/password-reset">Forgot your password?</a></p>
      <p><a href="/dashboard/sso">Sign in with single sign-on</a></p>
      ${keyForm}`,
  );
}

/** Hidden CSRF field of every form. */
export function csrfField(token: string): SafeHtml {
  return html`<input type="hidden" name="csrf_token" value="${token}" />`;
}

/**
 * The plan-gate explanation in place of a page part (DESIGN §10: never an error page). `change`:
 * the part gated is a change (a form), so the gate is a change panel that an analyst does not see.
 */
export function planGate(what: string, needed: string, org: Organization, change = false): SafeHtml {
  return html`<section class="gate" aria-label="Plan required" ${change ? html`data-change` : ''}>
    <h2>${what} needs the ${needed} plan</h2>
    <p>
      Your organisation is on the ${planName(org.plan)} plan. ${what} is part of the ${needed} and Enterprise
      plans. An administrator can change the plan with
      <code>tally orgs set-plan --org ${org.id} --plan pro</code>.
    </p>
  </section>`;
}
