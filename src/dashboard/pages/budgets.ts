import type { FastifyInstance } from 'fastify';
import { recentAlerts } from '../../alerts/raise.js';
import {
  BUDGET_SCOPES,
  createBudget,
  deleteBudget,
  getBudget,
  listBudgets,
  updateBudget,
  type Budget,
  type BudgetInput,
  type BudgetScope,
} from '../../budgets/budgets.js';
import { budgetViews, type BudgetView } from '../../budgets/status.js';
import { AppError } from '../../errors.js';
import { dateTime, money } from '../format.js';
import { html, type SafeHtml } from '../html.js';
import { csrfField } from '../layout.js';
import { dashboardCtx, field, session, type Form } from '../page-kit.js';
import { attempt, formNumber, sendBudgetsPage, stateBadge, tabs } from './budgets-kit.js';
import { select, textField } from './controls.js';

const SCOPE_LABELS: Record<BudgetScope, string> = {
  org: 'Whole organisation',
  agent: 'One agent',
  client: 'One client',
  task_type: 'One task type',
};

const ALERT_WORDS: Record<string, string> = {
  'budget.threshold_crossed': 'Threshold crossed',
  'budget.forecast_exceeded': 'Forecast to run out',
  'usage.threshold_crossed': 'Included events used',
};

function scopeText(b: BudgetView): SafeHtml {
  return b.scope === 'org'
    ? html`Whole organisation`
    : html`${SCOPE_LABELS[b.scope]}: <code>${b.scope_value}</code>`;
}

/** The form's fields as the budget verbs' input (what POST /v1/budgets takes). */
function inputOf(form: Form): BudgetInput {
  const scope = field(form, 'scope');
  if (!(BUDGET_SCOPES as readonly string[]).includes(scope))
    throw new AppError('validation_error', 'Choose a scope.');
  const amount = formNumber(field(form, 'amount'), 'The amount');
  if (amount === null) throw new AppError('validation_error', 'The amount is required.');
  const thresholdsText = field(form, 'thresholds').trim();
  const thresholds =
    thresholdsText === ''
      ? undefined
      : thresholdsText
          .split(/[\s,;%]+/)
          .filter((t) => t !== '')
          .map(Number);
  const value = field(form, 'scope_value').trim();
  return {
    name: field(form, 'name').slice(0, 200),
    scope: scope as BudgetScope,
    scope_value: scope === 'org' ? null : value.slice(0, 200),
    amount,
    ...(thresholds === undefined ? {} : { thresholds }),
  };
}

function budgetForm(
  action: string,
  token: string,
  b: Budget | null,
  currency: string,
  submit: string,
): SafeHtml {
  const id = b ? 'edit' : 'new';
  return html`<form method="post" action="${action}" class="form-grid">
    ${csrfField(token)}
    ${textField({ id: `${id}-name`, name: 'name', label: 'Name', required: true, value: b?.name ?? '' })}
    ${select({
      id: `${id}-scope`,
      name: 'scope',
      label: 'Scope',
      options: BUDGET_SCOPES.map((s) => [s, SCOPE_LABELS[s]] as const),
      value: b?.scope ?? 'org',
    })}
    ${textField({ id: `${id}-scope-value`, name: 'scope_value', label: 'Agent, client or task type', value: b?.scopeValue ?? '', hint: 'Empty for the whole organisation' })}
    ${textField({ id: `${id}-amount`, name: 'amount', label: `Monthly amount (${currency})`, type: 'number', required: true, value: b ? String(b.amountMicros / 1e6) : '', attrs: html`min="0" step="any"` })}
    ${textField({ id: `${id}-thresholds`, name: 'thresholds', label: 'Alert thresholds (%)', value: (b?.thresholds ?? [50, 80, 100]).join(', '), hint: 'Comma-separated, e.g. 50, 80, 100' })}
    <div class="field actions"><button type="submit" class="button">${submit}</button></div>
  </form>`;
}

function budgetsTable(views: BudgetView[], currency: string): SafeHtml {
  const fmt = (n: number) => money(n, currency);
  return html`<div class="table-wrap list">
    <table id="budgets-table">
      <caption class="sr-only">
        Budgets this month
      </caption>
      <thead>
        <tr>
          <th scope="col">Budget</th>
          <th scope="col">Status</th>
          <th scope="col" class="num">Spent this month</th>
          <th scope="col" class="num">Amount</th>
          <th scope="col" class="num">Forecast at month end</th>
          <th scope="col">Runs out</th>
        </tr>
      </thead>
      <tbody>
        ${views.map(
          (b) =>
            html`<tr>
              <td class="wrap">
                <a href="/dashboard/budgets/${b.id}"><strong>${b.name}</strong></a
                ><br /><span class="muted">${scopeText(b)}</span>
              </td>
              <td>${stateBadge(b.status.state as 'on_track' | 'at_risk' | 'exhausted')}</td>
              <td class="num">
                ${fmt(b.status.spend)}<br /><span class="muted">${b.status.percent_used}%</span>
                <meter
                  class="spend"
                  min="0"
                  max="100"
                  low="80"
                  high="99.9"
                  optimum="0"
                  value="${Math.min(100, b.status.percent_used)}"
                  aria-label="${b.name}: ${b.status.percent_used}% of the budget spent"
                ></meter>
              </td>
              <td class="num">
                ${fmt(b.amount)}<br /><span class="muted">alerts at ${b.thresholds.join(', ')}%</span>
              </td>
              <td class="num">
                ${fmt(b.status.forecast)}<br /><span class="muted"
                  >${fmt(b.status.forecast_low)} to ${fmt(b.status.forecast_high)}</span
                >
              </td>
              <td>${b.status.run_out_date ?? html`<span class="muted">Not this month</span>`}</td>
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

export function registerBudgetPages(dash: FastifyInstance, app: FastifyInstance): void {
  dash.get('/budgets', async (request, reply) =>
    sendBudgetsPage(app, request, reply, async () => {
      const ctx = dashboardCtx(app, request);
      const currency = ctx.org.currency;
      const views = await budgetViews({ ctx, budgets: (await listBudgets({ ctx, limit: 100 })).data });
      const alerts = await recentAlerts(ctx.db, ctx.org.id, 20);
      const method = views[0]?.status.method.description;
      return html`${tabs('Budgets')}
        <p class="muted">
          Monthly budgets on agent spend (agent cost), by the calendar month in UTC and the time each task
          ran. Alerts go to webhooks subscribed to <code>budget.threshold_crossed</code> and
          <code>budget.forecast_exceeded</code>, and by e-mail to the admins who opted in under
          <a href="/dashboard/budgets/emails">E-mails</a>.
        </p>
        ${
          views.length === 0
            ? html`<p class="muted">No budgets yet.<span data-change> Add one below.</span></p>`
            : html`${budgetsTable(views, currency)}
                <p class="muted method"><strong>Forecast method:</strong> ${method ?? ''}</p>`
        }
        <section class="panel" data-change>
          <h2>Add a budget</h2>
          ${budgetForm('/dashboard/budgets', session(request).csrfToken, null, currency, 'Add budget')}
        </section>
        <section class="panel">
          <h2>Recent alerts</h2>
          ${
            alerts.length === 0
              ? html`<p class="muted">No alert sent yet.</p>`
              : html`<div class="table-wrap">
                  <table>
                    <thead>
                      <tr>
                        <th scope="col">Sent</th>
                        <th scope="col">Alert</th>
                        <th scope="col">Month</th>
                        <th scope="col">About</th>
                      </tr>
                    </thead>
                    <tbody>
                      ${alerts.map((a) => {
                        const budget = a.payload.budget as { name?: string } | undefined;
                        return html`<tr>
                          <td>${dateTime(new Date(a.createdAt).toISOString())}</td>
                          <td>
                            ${ALERT_WORDS[a.type] ?? a.type}${a.kind === 'threshold' ? html` (${a.threshold}%)` : ''}
                          </td>
                          <td>${a.month}</td>
                          <td class="wrap">${budget?.name ?? 'Included events of the plan'}</td>
                        </tr>`;
                      })}
                    </tbody>
                  </table>
                </div>`
          }
        </section>`;
    }),
  );

  dash.post<{ Body: Form }>('/budgets', async (request, reply) =>
    attempt(app, request, reply, '/dashboard/budgets', async () => {
      const budget = await createBudget({ ctx: dashboardCtx(app, request), input: inputOf(request.body) });
      return `Budget “${budget.name}” added.`;
    }),
  );

  dash.get<{ Params: { id: string } }>('/budgets/:id', async (request, reply) =>
    sendBudgetsPage(app, request, reply, async () => {
      const ctx = dashboardCtx(app, request);
      const budget = await getBudget({ ctx, id: request.params.id.slice(0, 100) });
      const [view] = await budgetViews({ ctx, budgets: [budget] });
      const token = session(request).csrfToken;
      const base = `/dashboard/budgets/${budget.id}`;
      return html`${tabs('Budgets')}
        <p><a href="/dashboard/budgets">← All budgets</a></p>
        ${view ? budgetsTable([view], ctx.org.currency) : ''}
        ${view ? html`<p class="muted method"><strong>Forecast method:</strong> ${view.status.method.description}</p>` : ''}
        <section class="panel" data-change>
          <h2>Edit ${budget.name}</h2>
          ${budgetForm(base, token, budget, ctx.org.currency, 'Save budget')}
        </section>
        <section class="panel" data-change>
          <h2>Delete</h2>
          <form method="post" action="${base}/delete">
            ${csrfField(token)}
            <button type="submit" class="button danger">Delete budget “${budget.name}”</button>
          </form>
        </section>`;
    }),
  );

  dash.post<{ Params: { id: string }; Body: Form }>('/budgets/:id', async (request, reply) => {
    const back = `/dashboard/budgets/${encodeURIComponent(request.params.id)}`;
    return attempt(app, request, reply, back, async () => {
      const budget = await updateBudget({
        ctx: dashboardCtx(app, request),
        id: request.params.id.slice(0, 100),
        patch: inputOf(request.body),
      });
      return `Budget “${budget.name}” saved.`;
    });
  });

  dash.post<{ Params: { id: string } }>('/budgets/:id/delete', async (request, reply) =>
    attempt(app, request, reply, '/dashboard/budgets', async () => {
      await deleteBudget({ ctx: dashboardCtx(app, request), id: request.params.id.slice(0, 100) });
      return 'Budget deleted.';
    }),
  );
}
