import type { FastifyInstance } from 'fastify';
import { hasRole } from '../../accounts/authorize.js';
import { AppError } from '../../errors.js';
import { fromMicros } from '../../money.js';
import {
  allFixedCosts,
  createFixedCost,
  deleteFixedCost,
  type FixedCostInput,
} from '../../payback/fixed-costs.js';
import { getPlanningSettings, updatePlanningSettings } from '../../settings/planning-settings.js';
import { decimal, money } from '../format.js';
import { html } from '../html.js';
import { csrfField } from '../layout.js';
import { dashboardCtx, field, session, type Form } from '../page-kit.js';
import { attempt, formNumber, sendBudgetsPage, tabs } from './budgets-kit.js';
import { select, textField } from './controls.js';

function costInput(form: Form): FixedCostInput {
  const kind = field(form, 'kind') === 'one_off' ? 'one_off' : 'monthly';
  const amount = formNumber(field(form, 'amount'), 'The amount');
  if (amount === null) throw new AppError('validation_error', 'The amount is required.');
  const text = (name: string) => {
    const value = field(form, name).trim().slice(0, 20);
    return value === '' ? null : value;
  };
  return kind === 'monthly'
    ? {
        name: field(form, 'name').slice(0, 200),
        kind,
        amount,
        start_month: text('start_month'),
        end_month: text('end_month'),
      }
    : { name: field(form, 'name').slice(0, 200), kind, amount, date: text('date') };
}

export function registerPaybackPages(dash: FastifyInstance, app: FastifyInstance): void {
  dash.get('/budgets/payback', async (request, reply) =>
    sendBudgetsPage(app, request, reply, async () => {
      const ctx = dashboardCtx(app, request);
      const currency = ctx.org.currency;
      const token = session(request).csrfToken;
      const settings = await getPlanningSettings(ctx.db, ctx.org.id);
      const costs = (await allFixedCosts(ctx)).reverse();
      const fmt = (micros: number) => money(fromMicros(micros), currency);
      return html`${tabs('Payback')}
        <p class="muted">
          Payback and ROI net of fixed costs add the costs that per-event figures do not hold: monthly
          recurring costs (platform licences, seats, hosting) and one-off investments (building the agents).
          The Overview and <code>GET /v1/reports/payback</code> show the result.
        </p>
        <section class="panel">
          <h2>Fixed costs</h2>
          ${
            costs.length === 0
              ? html`<p class="muted">No fixed costs yet.</p>`
              : html`<div class="table-wrap">
                  <table id="fixed-costs-table">
                    <thead>
                      <tr>
                        <th scope="col">Name</th>
                        <th scope="col">Kind</th>
                        <th scope="col" class="num">Amount</th>
                        <th scope="col">When</th>
                        <th scope="col" data-change><span class="sr-only">Actions</span></th>
                      </tr>
                    </thead>
                    <tbody>
                      ${costs.map(
                        (c) =>
                          html`<tr>
                            <td class="wrap">${c.name}</td>
                            <td>${c.kind === 'monthly' ? 'Monthly' : 'One-off'}</td>
                            <td class="num">
                              ${fmt(c.amountMicros)}${c.kind === 'monthly' ? ' a month' : ''}
                            </td>
                            <td>
                              ${c.kind === 'monthly' ? `${c.startMonth ?? ''} to ${c.endMonth ?? 'now'}` : (c.date ?? '')}
                            </td>
                            <td data-change>
                              <form method="post" action="/dashboard/budgets/payback/costs/${c.id}/delete">
                                ${csrfField(token)}
                                <button
                                  type="submit"
                                  class="button danger small"
                                  aria-label="Delete ${c.name}"
                                >
                                  Delete
                                </button>
                              </form>
                            </td>
                          </tr>`,
                      )}
                    </tbody>
                  </table>
                </div>`
          }
          <form
            method="post"
            action="/dashboard/budgets/payback/costs"
            class="titled-form"
            aria-labelledby="add-cost-title"
          >
            <h3 id="add-cost-title">Add a fixed cost</h3>
            <div class="form-grid">
              ${csrfField(token)}
              ${textField({ id: 'cost-name', name: 'name', label: 'Name', required: true })}
              ${select({
                id: 'cost-kind',
                name: 'kind',
                label: 'Kind',
                options: [
                  ['monthly', 'Monthly, recurring'],
                  ['one_off', 'One-off'],
                ],
                value: 'monthly',
              })}
              ${textField({ id: 'cost-amount', name: 'amount', label: `Amount (${currency})`, type: 'number', required: true, attrs: html`min="0" step="any"` })}
              ${textField({ id: 'cost-start', name: 'start_month', label: 'From month (monthly)', type: 'month', hint: 'YYYY-MM' })}
              ${textField({ id: 'cost-end', name: 'end_month', label: 'To month (monthly, optional)', type: 'month', hint: 'Empty while it runs' })}
              ${textField({ id: 'cost-date', name: 'date', label: 'Date (one-off)', type: 'date', hint: 'YYYY-MM-DD' })}
              <div class="field actions"><button type="submit" class="button">Add cost</button></div>
            </div>
          </form>
        </section>
        <section class="panel">
          <h2>Full-time equivalent</h2>
          ${
            hasRole(ctx, 'admin')
              ? ''
              : html`<p id="fte-facts">
                  <strong>${decimal(fromMicros(settings.fteHoursPerMonthMicros))}</strong> working hours per
                  FTE-month: FTE capacity freed = hours saved ÷ these hours.
                </p>`
          }
          <form method="post" action="/dashboard/budgets/payback/fte" class="form-grid">
            ${csrfField(token)}
            ${textField({
              id: 'fte-hours',
              name: 'fte_hours_per_month',
              label: 'Working hours per FTE-month',
              type: 'number',
              required: true,
              value: decimal(fromMicros(settings.fteHoursPerMonthMicros)),
              hint: 'FTE capacity freed = hours saved ÷ these hours (default 160)',
              attrs: html`min="1" max="744" step="any"`,
            })}
            <div class="field actions"><button type="submit" class="button">Save</button></div>
          </form>
        </section>`;
    }),
  );

  dash.post<{ Body: Form }>('/budgets/payback/costs', async (request, reply) =>
    attempt(app, request, reply, '/dashboard/budgets/payback', async () => {
      const cost = await createFixedCost({ ctx: dashboardCtx(app, request), input: costInput(request.body) });
      return `Fixed cost “${cost.name}” added.`;
    }),
  );

  dash.post<{ Params: { id: string } }>('/budgets/payback/costs/:id/delete', async (request, reply) =>
    attempt(app, request, reply, '/dashboard/budgets/payback', async () => {
      await deleteFixedCost({ ctx: dashboardCtx(app, request), id: request.params.id.slice(0, 100) });
      return 'Fixed cost deleted.';
    }),
  );

  dash.post<{ Body: Form }>('/budgets/payback/fte', async (request, reply) =>
    attempt(app, request, reply, '/dashboard/budgets/payback', async () => {
      const hours = formNumber(field(request.body, 'fte_hours_per_month'), 'The hours');
      if (hours === null) throw new AppError('validation_error', 'The hours are required.');
      await updatePlanningSettings({
        ctx: dashboardCtx(app, request),
        patch: { fte_hours_per_month: hours },
      });
      return 'FTE hours saved.';
    }),
  );
}
