import type { FastifyInstance } from 'fastify';
import { hasRole } from '../../accounts/authorize.js';
import { nextSendAt } from '../../report-emails/periods.js';
import { createSchedule, deleteSchedule, listSchedules } from '../../report-emails/schedules.js';
import { sendScheduleNow } from '../../report-emails/send.js';
import { getPlanningSettings, updatePlanningSettings } from '../../settings/planning-settings.js';
import { dateTime } from '../format.js';
import { html } from '../html.js';
import { csrfField } from '../layout.js';
import { dashboardCtx, field, fields, session, type Form } from '../page-kit.js';
import { attempt, sendBudgetsPage, tabs } from './budgets-kit.js';
import { select } from './controls.js';

export function registerBudgetEmailPages(dash: FastifyInstance, app: FastifyInstance): void {
  dash.get('/budgets/emails', async (request, reply) =>
    sendBudgetsPage(app, request, reply, async () => {
      const ctx = dashboardCtx(app, request);
      const token = session(request).csrfToken;
      const settings = await getPlanningSettings(ctx.db, ctx.org.id);
      const optedIn = new Set(settings.alertEmails.map((e) => e.toLowerCase()));
      const schedules = (await listSchedules({ ctx, limit: 100 })).data;
      const now = ctx.clock.now();
      // Who gets the alerts, as text, for those who may not change it (the form below says it too).
      const alerted = ctx.org.adminEmails.filter((email) => optedIn.has(email.toLowerCase()));
      const alertFacts = html`<section class="panel" id="alert-facts">
        <h2>Who gets alert e-mails</h2>
        ${
          alerted.length === 0
            ? html`<p class="muted">Nobody: no admin has chosen to get budget and usage alerts by e-mail.</p>`
            : html`<p>Budget and usage alerts go by e-mail to ${alerted.join(', ')}.</p>`
        }
      </section>`;
      return html`${tabs('E-mails')} ${hasRole(ctx, 'admin') ? '' : alertFacts}
        <section class="panel" data-change>
          <h2>Alert e-mails</h2>
          ${
            ctx.org.adminEmails.length === 0
              ? html`<p class="muted">
                  Alerts go by e-mail to the organisation's admins who opt in. Add admin e-mails under
                  <a href="/dashboard/settings">Settings</a> first.
                </p>`
              : html`<form method="post" action="/dashboard/budgets/emails/alerts">
                  ${csrfField(token)}
                  <fieldset class="field">
                    <legend>Admins who get budget and usage alerts by e-mail</legend>
                    ${ctx.org.adminEmails.map(
                      (email, i) =>
                        html`<label class="check"
                          ><input
                            type="checkbox"
                            name="alert_emails"
                            value="${email}"
                            id="alert-${i}"
                            ${optedIn.has(email.toLowerCase()) ? html`checked` : ''}
                          />
                          ${email}</label
                        >`,
                    )}
                  </fieldset>
                  <p><button type="submit" class="button">Save alert e-mails</button></p>
                </form>`
          }
        </section>
        <section class="panel">
          <h2>Report e-mails</h2>
          <p class="muted">
            A summary of the period (figures, top agents, budgets, a link here) with its CSV attached, weekly
            on Mondays or monthly on the 1st, at 09:00 UTC. Each e-mail has an unsubscribe link.
          </p>
          ${
            schedules.length === 0
              ? html`<p class="muted">No report e-mails scheduled.</p>`
              : html`<div class="table-wrap">
                  <table id="schedules-table">
                    <thead>
                      <tr>
                        <th scope="col">Frequency</th>
                        <th scope="col">Recipients</th>
                        <th scope="col">Next</th>
                        <th scope="col" data-change><span class="sr-only">Actions</span></th>
                      </tr>
                    </thead>
                    <tbody>
                      ${schedules.map(
                        (s) =>
                          html`<tr>
                            <td>${s.frequency === 'weekly' ? 'Weekly' : 'Monthly'}</td>
                            <td class="wrap">
                              ${s.recipients.map(
                                (r) =>
                                  html`${r.email}${r.unsubscribedAt === null ? '' : html` <span class="badge">unsubscribed</span>`}<br />`,
                              )}
                            </td>
                            <td>${dateTime(new Date(nextSendAt(s.frequency, now)).toISOString())}</td>
                            <td data-change>
                              <div class="button-row">
                                <form method="post" action="/dashboard/budgets/emails/${s.id}/send">
                                  ${csrfField(token)}
                                  <button type="submit" class="button quiet small">
                                    Send last period now
                                  </button>
                                </form>
                                <form method="post" action="/dashboard/budgets/emails/${s.id}/delete">
                                  ${csrfField(token)}
                                  <button type="submit" class="button danger small">Delete</button>
                                </form>
                              </div>
                            </td>
                          </tr>`,
                      )}
                    </tbody>
                  </table>
                </div>`
          }
          <form
            method="post"
            action="/dashboard/budgets/emails"
            class="titled-form"
            aria-labelledby="schedule-title"
          >
            <h3 id="schedule-title">Schedule a report e-mail</h3>
            <div class="form-grid">
              ${csrfField(token)}
              ${select({
                id: 'frequency',
                name: 'frequency',
                label: 'Frequency',
                options: [
                  ['weekly', 'Weekly (last week, Mondays)'],
                  ['monthly', 'Monthly (last month, on the 1st)'],
                ],
                value: 'weekly',
              })}
              <div class="field wide">
                <label for="recipients">Recipients</label>
                <textarea
                  id="recipients"
                  name="recipients"
                  rows="3"
                  aria-describedby="recipients-hint"
                  required
                ></textarea>
                <small id="recipients-hint" class="muted">One e-mail address per line</small>
              </div>
              <div class="field actions"><button type="submit" class="button">Schedule</button></div>
            </div>
          </form>
        </section>`;
    }),
  );

  dash.post<{ Body: Form }>('/budgets/emails/alerts', async (request, reply) =>
    attempt(app, request, reply, '/dashboard/budgets/emails', async () => {
      const chosen = fields(request.body, 'alert_emails').slice(0, 50);
      await updatePlanningSettings({ ctx: dashboardCtx(app, request), patch: { alert_emails: chosen } });
      return 'Alert e-mails saved.';
    }),
  );

  dash.post<{ Body: Form }>('/budgets/emails', async (request, reply) =>
    attempt(app, request, reply, '/dashboard/budgets/emails', async () => {
      const recipients = field(request.body, 'recipients')
        .split(/[\s,;]+/)
        .map((e) => e.trim())
        .filter((e) => e !== '')
        .slice(0, 100);
      const frequency = field(request.body, 'frequency') === 'monthly' ? 'monthly' : 'weekly';
      await createSchedule({ ctx: dashboardCtx(app, request), input: { frequency, recipients } });
      return `The ${frequency} report e-mail is scheduled.`;
    }),
  );

  dash.post<{ Params: { id: string } }>('/budgets/emails/:id/send', async (request, reply) =>
    attempt(app, request, reply, '/dashboard/budgets/emails', async () => {
      const sent = await sendScheduleNow({
        ctx: dashboardCtx(app, request),
        id: request.params.id.slice(0, 100),
      });
      return sent.queued.length === 0
        ? `Every recipient already has the report of ${sent.period}.`
        : `The report of ${sent.period} is on its way to ${sent.queued.join(', ')}.`;
    }),
  );

  dash.post<{ Params: { id: string } }>('/budgets/emails/:id/delete', async (request, reply) =>
    attempt(app, request, reply, '/dashboard/budgets/emails', async () => {
      await deleteSchedule({ ctx: dashboardCtx(app, request), id: request.params.id.slice(0, 100) });
      return 'Report e-mail deleted.';
    }),
  );
}
