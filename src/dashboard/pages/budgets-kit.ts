import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { planAtLeast } from '../../billing/plans.js';
import type { BudgetState } from '../../budgets/status.js';
import { AppError } from '../../errors.js';
import { html, type SafeHtml } from '../html.js';
import { planGate } from '../layout.js';
import { dashboardCtx, redirectWithNotice, sendPage } from '../page-kit.js';

const TABS = [
  ['Budgets', '/dashboard/budgets'],
  ['Payback', '/dashboard/budgets/payback'],
  ['E-mails', '/dashboard/budgets/emails'],
] as const;

/** The Budgets page's parts, as links (each its own URL, so back and shared links work). */
export function tabs(current: (typeof TABS)[number][0]): SafeHtml {
  return html`<nav class="tabs" aria-label="Budgets sections">
    <ul>
      ${TABS.map(
        ([label, href]) =>
          html`<li><a href="${href}" ${label === current ? html`aria-current="page"` : ''}>${label}</a></li>`,
      )}
    </ul>
  </nav>`;
}

const STATES: Record<BudgetState, [icon: string, words: string, className: string]> = {
  on_track: ['●', 'On track', 'status-active'],
  at_risk: ['▲', 'At risk', 'status-failing'],
  exhausted: ['■', 'Used up', 'status-deactivated'],
};

export function stateBadge(state: BudgetState): SafeHtml {
  const [icon, words, className] = STATES[state];
  return html`<span class="badge ${className}"><span aria-hidden="true">${icon} </span>${words}</span>`;
}

/** Sends a Budgets page, or explains which plan unlocks it (never an error page). */
export function sendBudgetsPage(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  body: () => Promise<SafeHtml>,
) {
  const ctx = dashboardCtx(app, request);
  if (!planAtLeast(ctx.org.plan, 'pro')) {
    return sendPage(request, reply, {
      title: 'Budgets',
      section: 'Budgets',
      body: planGate('Budgets, forecasts and payback', 'Pro', ctx.org),
    });
  }
  return body().then((b) => sendPage(request, reply, { title: 'Budgets', section: 'Budgets', body: b }));
}

/** A form's action: its refusal becomes a notice on the page it came from, never an error page. */
export async function attempt(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  back: string,
  run: () => Promise<string>,
) {
  if (!planAtLeast(dashboardCtx(app, request).org.plan, 'pro')) return reply.redirect(back, 303);
  try {
    return redirectWithNotice(app, request, reply, back, await run());
  } catch (error) {
    if (error instanceof AppError && error.status < 500) {
      const detail = error.details?.[0];
      const message = detail ? `${detail.path.replace('/body/', '')} ${detail.message}` : error.message;
      return redirectWithNotice(app, request, reply, back, `Not saved: ${message}`);
    }
    throw error;
  }
}

/** A number typed into a form; empty is null; anything else not a number is refused. */
export function formNumber(text: string, label: string): number | null {
  const trimmed = text.trim().replaceAll(',', '');
  if (trimmed === '') return null;
  const n = Number(trimmed);
  if (!Number.isFinite(n)) throw new AppError('validation_error', `${label} must be a number.`);
  return n;
}
