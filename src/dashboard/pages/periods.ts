import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasRole } from '../../accounts/authorize.js';
import { planAtLeast } from '../../billing/plans.js';
import type { OrgCtx } from '../../context.js';
import { AppError } from '../../errors.js';
import { periodChanges } from '../../periods/changes.js';
import { statementCsv } from '../../periods/csv.js';
import { isZero } from '../../periods/figures.js';
import { monthOf, monthRange } from '../../periods/months.js';
import { closedPeriodNotes, type ClosedPeriodNote } from '../../periods/notes.js';
import {
  closePeriod,
  getPeriod,
  listPeriods,
  listStatements,
  reopenPeriod,
  type PeriodSummary,
} from '../../periods/periods.js';
import { dateTime, monthName } from '../format.js';
import { html, type SafeHtml } from '../html.js';
import { csrfField, planGate } from '../layout.js';
import { dashboardCtx, field, redirectWithNotice, sendPage, session, type Form } from '../page-kit.js';
import { changesSection, differenceText, statementTables } from './period-statement.js';

/** Months offered on the Periods page: the last twelve that have ended, newest first. */
const RECENT_MONTHS = 12;

/** The line a page shows for each closed month it covers: when it closed and how live differs. */
export function closedPeriodLines(notes: readonly ClosedPeriodNote[], currency: string): SafeHtml {
  return html`${notes.map(
    (n) =>
      html`<p class="banner closed-month">
        <a href="/dashboard/periods/${n.month}">${monthName(n.month)}</a> closed on ${dateTime(n.closed_at)};
        ${
          isZero(n.difference)
            ? html`live figures equal its statement.`
            : html`live figures differ by ${differenceText(n.difference, currency)}.`
        }
      </p>`,
  )}`;
}

/** The lines for the closed months a report window meets (none on plans without reports). */
export async function closedPeriodBanner(
  ctx: OrgCtx,
  range: { from: string; to: string },
): Promise<SafeHtml> {
  const notes = await closedPeriodNotes(ctx, { from: Date.parse(range.from), to: Date.parse(range.to) + 1 });
  return closedPeriodLines(notes, ctx.org.currency);
}

function reasonForm(action: string, token: string, label: string, submit: string, confirm: string): SafeHtml {
  const id = action.endsWith('/reopen') ? 'reopen' : 'close';
  return html`<form method="post" action="${action}" class="form-grid">
    ${csrfField(token)}
    <div class="field wide">
      <label for="${id}-reason">${label}</label>
      <input id="${id}-reason" name="reason" type="text" maxlength="1000" required />
    </div>
    <div class="field wide">
      <label class="check"
        ><input id="${id}-confirm" name="confirm" type="checkbox" value="yes" required /> ${confirm}</label
      >
    </div>
    <div class="field actions"><button type="submit" class="button">${submit}</button></div>
  </form>`;
}

/** The last RECENT_MONTHS ended months and every month ever closed, newest first. */
function monthsShown(now: number, periods: readonly PeriodSummary[]): string[] {
  const months = new Set(periods.map((p) => p.month));
  const current = monthRange(monthOf(now));
  let at = current.from - 1;
  for (let i = 0; i < RECENT_MONTHS; i++) {
    const month = monthOf(at);
    months.add(month);
    at = monthRange(month).from - 1;
  }
  return [...months].sort().reverse();
}

function sendPeriodsPage(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  title: string,
  body: () => Promise<SafeHtml>,
) {
  const ctx = dashboardCtx(app, request);
  if (!planAtLeast(ctx.org.plan, 'pro')) {
    return sendPage(request, reply, {
      title: 'Periods',
      section: 'Periods',
      body: planGate('Closed months', 'Pro', ctx.org),
    });
  }
  return body().then((b) => sendPage(request, reply, { title, section: 'Periods', body: b }));
}

async function attempt(
  app: FastifyInstance,
  request: FastifyRequest<{ Body: Form }>,
  reply: FastifyReply,
  back: string,
  run: (reason: string) => Promise<string>,
) {
  if (!planAtLeast(dashboardCtx(app, request).org.plan, 'pro')) return reply.redirect(back, 303);
  try {
    if (field(request.body, 'confirm') !== 'yes') {
      throw new AppError('validation_error', 'Tick the confirmation first.');
    }
    return redirectWithNotice(app, request, reply, back, await run(field(request.body, 'reason')));
  } catch (error) {
    if (error instanceof AppError && error.status < 500) {
      const detail = error.details?.[0];
      const message = detail
        ? `${detail.path.replace(/^\/(body|params)\//, '')} ${detail.message}`
        : error.message;
      return redirectWithNotice(app, request, reply, back, `Not done: ${message}`);
    }
    throw error;
  }
}

/** The month of a dashboard URL, checked (a 404 page otherwise). */
function monthParam(raw: string): string {
  try {
    return monthRange(raw.slice(0, 7) === raw ? raw : '').month;
  } catch {
    throw new AppError('not_found', 'No such month.');
  }
}

export function registerPeriodPages(dash: FastifyInstance, app: FastifyInstance): void {
  dash.get('/periods', async (request, reply) =>
    sendPeriodsPage(app, request, reply, 'Periods', async () => {
      const ctx = dashboardCtx(app, request);
      const periods = await listPeriods({ ctx });
      const byMonth = new Map(periods.map((p) => [p.month, p]));
      const months = monthsShown(ctx.clock.now().getTime(), periods);
      return html`<p class="muted">
          A closed month keeps a frozen statement: its totals by agent, task type and client as they stood
          when it was closed, with the assumptions in force. Reports keep including late events; each closed
          month shows how far the live figures have moved from its statement, and why.
          <span data-change>Close a month from its page once it has ended (UTC).</span>
        </p>
        <div class="table-wrap list">
          <table id="periods-table">
            <caption class="sr-only">
              Months and their status
            </caption>
            <thead>
              <tr>
                <th scope="col">Month</th>
                <th scope="col">Status</th>
                <th scope="col">Closed</th>
                <th scope="col">Reason</th>
              </tr>
            </thead>
            <tbody>
              ${months.map((m) => {
                const p = byMonth.get(m);
                return html`<tr>
                  <td><a href="/dashboard/periods/${m}">${monthName(m)}</a></td>
                  <td>
                    ${
                      p?.status === 'closed'
                        ? html`<span class="badge status-active"
                            ><span aria-hidden="true">■ </span>Closed</span
                          >`
                        : p
                          ? html`<span class="badge status-failing"
                              ><span aria-hidden="true">▲ </span>Reopened</span
                            >`
                          : html`<span class="badge"><span aria-hidden="true">○ </span>Open</span>`
                    }
                  </td>
                  <td>${p ? dateTime(p.closed_at) : html`<span class="muted">—</span>`}</td>
                  <td class="wrap">${p?.reopen_reason ?? p?.reason ?? ''}</td>
                </tr>`;
              })}
            </tbody>
          </table>
        </div>`;
    }),
  );

  dash.get<{ Params: { month: string } }>('/periods/:month', async (request, reply) => {
    const month = monthParam(request.params.month);
    return sendPeriodsPage(app, request, reply, monthName(month), async () => {
      const ctx = dashboardCtx(app, request);
      const token = session(request).csrfToken;
      const base = `/dashboard/periods/${month}`;
      const ended = ctx.clock.now().getTime() >= monthRange(month).to;
      const history = await listStatements({ ctx, month }).catch((error: unknown) => {
        if (error instanceof AppError && error.code === 'not_found') return [];
        throw error;
      });
      const back = html`<p class="no-print"><a href="/dashboard/periods">← All months</a></p>`;
      if (history.length === 0) {
        return html`${back}
          <p>${monthName(month)} is open: it has never been closed.</p>
          ${
            ended && hasRole(ctx, 'admin')
              ? html`<section class="panel" data-change>
                  <h2>Close ${monthName(month)}</h2>
                  ${reasonForm(`${base}/close`, token, 'Reason', `Close ${monthName(month)}`, 'Freeze the statement of this month as it stands now')}
                </section>`
              : ended
                ? ''
                : html`<p class="muted" data-change>
                    It can be closed once it has ended, from
                    ${dateTime(new Date(monthRange(month).to).toISOString())}.
                  </p>`
          }`;
      }
      const period = await getPeriod({ ctx, month });
      const changes = await periodChanges({ ctx, month });
      const closed = period.status === 'closed';
      return html`${back}
        <section class="statement" aria-labelledby="statement-title">
          <h2 id="statement-title">Statement of ${monthName(month)} · ${ctx.org.name}</h2>
          <p>
            ${closed ? html`Closed` : html`Reopened on ${dateTime(period.reopened_at)} (${period.reopen_reason ?? ''}); last closed`}
            on ${dateTime(period.closed_at)}: ${period.reason}.
            <span class="muted"
              >Statement <code>${period.id}</code>, ${period.currency}, UTC month
              ${period.range.from.slice(0, 10)} to ${period.range.to.slice(0, 10)} (exclusive).</span
            >
          </p>
          <p class="no-print">
            <a class="button quiet" href="${base}/statement.csv" download>Download CSV</a>
            <span class="muted">Print this page for a paper copy of the statement.</span>
          </p>
          ${statementTables(period)}
        </section>
        ${changesSection(changes)}
        ${
          closed && hasRole(ctx, 'owner')
            ? html`<section class="panel no-print" data-change>
                <h2>Reopen ${monthName(month)}</h2>
                <p class="muted">The statement stays in the history; the month can then be closed again.</p>
                ${reasonForm(`${base}/reopen`, token, 'Reason', `Reopen ${monthName(month)}`, 'Reopen this closed month (audited)')}
              </section>`
            : closed
              ? html`<p class="muted no-print" data-change>Only an owner can reopen a closed month.</p>`
              : hasRole(ctx, 'admin')
                ? html`<section class="panel no-print" data-change>
                    <h2>Close ${monthName(month)} again</h2>
                    ${reasonForm(`${base}/close`, token, 'Reason', `Close ${monthName(month)}`, 'Freeze a new statement of this month as it stands now')}
                  </section>`
                : ''
        }
        ${
          history.length > 1
            ? html`<section class="panel no-print">
                <h2>Earlier statements</h2>
                <ul>
                  ${history
                    .slice(1)
                    .map(
                      (s) =>
                        html`<li>
                          <code>${s.id}</code>: closed ${dateTime(s.closed_at)} (${s.reason}), reopened
                          ${dateTime(s.reopened_at)} (${s.reopen_reason ?? ''});
                          ${differenceText(s.totals, s.currency).replaceAll('+', '')}
                        </li>`,
                    )}
                </ul>
              </section>`
            : ''
        }`;
    });
  });

  dash.get<{ Params: { month: string } }>('/periods/:month/statement.csv', async (request, reply) => {
    const month = monthParam(request.params.month);
    const period = await getPeriod({ ctx: dashboardCtx(app, request), month });
    return reply
      .type('text/csv; charset=utf-8')
      .header('Content-Disposition', `attachment; filename="tally-statement-${month}.csv"`)
      .send(statementCsv(period));
  });

  dash.post<{ Params: { month: string }; Body: Form }>('/periods/:month/close', async (request, reply) => {
    const month = monthParam(request.params.month);
    return attempt(app, request, reply, `/dashboard/periods/${month}`, async (reason) => {
      await closePeriod({ ctx: dashboardCtx(app, request), month, reason });
      return `${monthName(month)} closed; its statement is frozen.`;
    });
  });

  dash.post<{ Params: { month: string }; Body: Form }>('/periods/:month/reopen', async (request, reply) => {
    const month = monthParam(request.params.month);
    return attempt(app, request, reply, `/dashboard/periods/${month}`, async (reason) => {
      await reopenPeriod({ ctx: dashboardCtx(app, request), month, reason });
      return `${monthName(month)} reopened.`;
    });
  });
}
