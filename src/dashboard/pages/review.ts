import type { FastifyInstance } from 'fastify';
import { AppError } from '../../errors.js';
import { adjustmentView } from '../../ledger/adjustments.js';
import { figuresView, VERDICTS, type Figures } from '../../ledger/figures.js';
import { eventReviews, getReviewedEvent, recordReview, reviewView } from '../../ledger/review.js';
import type { OrgCtx } from '../../context.js';
import { listEvents } from '../../tracking/events.js';
import { dateTime, decimal, money } from '../format.js';
import { html, type SafeHtml } from '../html.js';
import { csrfField } from '../layout.js';
import {
  dashboardCtx,
  field,
  queryOf,
  redirectWithNotice,
  sendPage,
  session,
  type Form,
} from '../page-kit.js';
import { TaskTypeNames } from '../task-names.js';
import { select, textField } from './controls.js';

const VERDICT_LABELS: Record<string, string> = {
  accepted: 'Accepted',
  corrected: 'Corrected',
  rejected: 'Rejected',
};

const TABS = [
  ['All events', '/dashboard/events'],
  ['Review queue', '/dashboard/events/review-queue'],
] as const;

/** The Events page's parts, as links (each its own URL). */
export function eventTabs(current: (typeof TABS)[number][0]): SafeHtml {
  return html`<nav class="tabs" aria-label="Events sections">
    <ul>
      ${TABS.map(
        ([label, href]) =>
          html`<li><a href="${href}" ${label === current ? html`aria-current="page"` : ''}>${label}</a></li>`,
      )}
    </ul>
  </nav>`;
}

/** The form that records a review of one event (POST, with the session's CSRF token). */
function reviewForm(eventId: string, token: string, back: string, label: string): SafeHtml {
  const id = (name: string) => `${name}-${eventId}`;
  return html`<form method="post" action="/dashboard/events/${eventId}/review" class="form-grid review-form">
    ${csrfField(token)}
    <input type="hidden" name="back" value="${back}" />
    ${textField({ id: id('review_minutes'), name: 'review_minutes', label: 'Review minutes', type: 'number', required: true, attrs: html`min="0" step="any" inputmode="decimal"` })}
    ${select({ id: id('verdict'), name: 'verdict', label: 'Verdict', options: VERDICTS.map((v) => [v, VERDICT_LABELS[v] ?? v] as const), value: 'accepted' })}
    ${textField({ id: id('reviewer'), name: 'reviewer', label: 'Reviewer', attrs: html`maxlength="200"` })}
    ${textField({ id: id('note'), name: 'note', label: 'Note', attrs: html`maxlength="2000"` })}
    <div class="field actions"><button type="submit" class="button">${label}</button></div>
  </form>`;
}

function figureCells(f: ReturnType<typeof figuresView>, currency: string): SafeHtml {
  // Hours to the micro-unit, as stored: a ledger's entries add up exactly on the page too.
  // `data-label` names each cell where a phone shows the rows as cards (dashboard.css).
  return html`<td class="num" data-label="Hours saved">${decimal(f.hours_saved)}</td>
    <td class="num" data-label="Cost saved">${money(f.cost_saved, currency)}</td>
    <td class="num" data-label="Agent cost">${money(f.agent_cost, currency)}</td>
    <td class="num" data-label="Net saved">${money(f.net_saved, currency)}</td>
    <td class="num" data-label="Review hours">${decimal(f.review_hours)}</td>
    <td class="num" data-label="Review cost">${money(f.review_cost, currency)}</td>`;
}

/**
 * The event page's review and ledger: the review in force (or "not reviewed") with its history,
 * the original figures, every adjustment and the current figures, and the form to review it.
 */
export async function ledgerPanel(ctx: OrgCtx, eventId: string, csrfToken: string): Promise<SafeHtml> {
  const { ledger, review } = await getReviewedEvent({ ctx, eventId });
  const reviews = await eventReviews(ctx.db, ctx.org.id, eventId);
  const cur = ledger.event.currency;
  const view = review === null ? null : reviewView(review);
  const adjustments = ledger.adjustments.map(adjustmentView);
  const line = (label: SafeHtml | string, f: Figures | ReturnType<typeof figuresView>, className = '') =>
    html`<tr class="${className}">
      <th scope="row">${label}</th>
      ${figureCells('hoursSavedMicros' in f ? figuresView(f) : f, cur)}
    </tr>`;
  return html`<section class="panel" aria-labelledby="review-heading">
      <h2 id="review-heading">Review</h2>
      ${
        view === null
          ? html`<p class="muted">Not reviewed.</p>`
          : html`<p>
              <strong>${VERDICT_LABELS[view.verdict] ?? view.verdict}</strong> after
              ${decimal(view.review_minutes)} minutes${view.reviewer ? html` by ${view.reviewer}` : ''},
              <span class="nowrap">${dateTime(view.created_at)}</span
              >${view.note ? html`: “${view.note}”` : ''}.
              ${reviews.length > 1 ? html`<span class="muted">(review ${reviews.length} of ${reviews.length}; earlier ones below)</span>` : ''}
            </p>`
      }
      ${
        reviews.length > 1
          ? html`<ul class="muted">
              ${reviews
                .slice(0, -1)
                .map(
                  (r) =>
                    html`<li>
                      ${dateTime(new Date(Number(r.created_at)).toISOString())}:
                      ${VERDICT_LABELS[r.verdict] ?? r.verdict}, ${decimal(Number(r.review_minutes))}
                      min${r.reviewer ? ` by ${r.reviewer}` : ''}
                    </li>`,
                )}
            </ul>`
          : ''
      }
      <details data-change ${view === null ? html`open` : ''}>
        <summary>${view === null ? 'Record a review' : 'Review again (replaces this review)'}</summary>
        ${reviewForm(eventId, csrfToken, `/dashboard/events/${eventId}`, 'Save review')}
      </details>
    </section>
    <section class="panel" aria-labelledby="ledger-heading">
      <h2 id="ledger-heading">Figures and adjustments</h2>
      <div class="table-wrap">
        <table class="ledger card-rows">
          <thead>
            <tr>
              <th scope="col">Entry</th>
              <th scope="col" class="num">Hours saved</th>
              <th scope="col" class="num">Cost saved</th>
              <th scope="col" class="num">Agent cost</th>
              <th scope="col" class="num">Net saved</th>
              <th scope="col" class="num">Review hours</th>
              <th scope="col" class="num">Review cost</th>
            </tr>
          </thead>
          <tbody>
            ${line('Original (as tracked)', ledger.original)}
            ${adjustments.map((a) =>
              line(
                html`${a.cause === 'review' ? 'Review' : 'Restatement'} <code>${a.cause_id}</code>,
                  <span class="nowrap">${dateTime(a.created_at)}</span>`,
                a,
                'adjustment',
              ),
            )}
            ${
              adjustments.length === 0
                ? html`<tr>
                    <td colspan="7" class="muted">No adjustments.</td>
                  </tr>`
                : ''
            }
          </tbody>
          <tfoot>
            ${line(html`<strong>Current</strong>`, ledger.current, 'current')}
          </tfoot>
        </table>
      </div>
    </section>`;
}

export function registerReviewPages(dash: FastifyInstance, app: FastifyInstance): void {
  dash.get('/events/review-queue', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    const q = queryOf(request);
    const cursor = (q.get('cursor') ?? '').trim().slice(0, 200) || undefined;
    const [page, names] = await Promise.all([
      listEvents({ ctx, input: { awaitingReview: true, limit: 20, cursor } }),
      TaskTypeNames.load(ctx),
    ]);
    const token = session(request).csrfToken;
    const body = html`${eventTabs('Review queue')}
      <p class="muted">
        Events that need review and have none yet, newest first. A review replaces the outcome credit with the
        time it took: accepted and corrected save the baseline minus the review minutes, rejected saves
        nothing and costs the review minutes.
      </p>
      ${
        page.data.length === 0
          ? html`<p class="muted">Nothing awaits review.</p>`
          : html`<ul class="review-queue">
              ${page.data.map(
                (e) =>
                  html`<li class="panel">
                    <p>
                      <a href="/dashboard/events/${e.event_id}"
                        ><strong>${names.name(e.task_type)}</strong></a
                      >
                      by <strong>${e.agent_id}</strong>,
                      <span class="nowrap">${dateTime(e.occurred_at)}</span>: baseline
                      ${decimal(e.resolved_baseline_minutes)} min, credited ${decimal(e.hours_saved)} h
                      (${money(e.cost_saved, e.currency)})
                    </p>
                    ${reviewForm(e.event_id, token, '/dashboard/events/review-queue', 'Record review')}
                  </li>`,
              )}
            </ul>`
      }
      ${page.next_cursor ? html`<p><a class="button quiet" href="/dashboard/events/review-queue?cursor=${page.next_cursor}">More</a></p>` : ''}`;
    return sendPage(request, reply, { title: 'Review queue', section: 'Events', body });
  });

  dash.post<{ Params: { id: string }; Body: Form }>('/events/:id/review', async (request, reply) => {
    const eventId = request.params.id.slice(0, 200);
    const requested = field(request.body, 'back');
    // Back to the queue or to the event's own page, never elsewhere.
    const back =
      requested === '/dashboard/events/review-queue'
        ? requested
        : `/dashboard/events/${encodeURIComponent(eventId)}`;
    try {
      const minutesText = field(request.body, 'review_minutes').trim();
      const minutes = minutesText === '' ? NaN : Number(minutesText);
      if (!Number.isFinite(minutes) || minutes < 0 || minutes > 525_600)
        throw new AppError('validation_error', 'Review minutes must be a number from 0 to 525,600.');
      const verdict = field(request.body, 'verdict');
      if (!(VERDICTS as readonly string[]).includes(verdict))
        throw new AppError('validation_error', 'Choose a verdict.');
      const text = (name: string, most: number) => {
        const value = field(request.body, name).trim();
        return value === '' ? null : value.slice(0, most);
      };
      const { event } = await recordReview({
        ctx: dashboardCtx(app, request),
        eventId,
        input: {
          review_minutes: minutes,
          verdict: verdict as (typeof VERDICTS)[number],
          reviewer: text('reviewer', 200),
          note: text('note', 2000),
        },
        idempotencyKey: null,
      });
      return redirectWithNotice(
        app,
        request,
        reply,
        back,
        `Review saved: ${decimal(event.current.hours_saved)} h saved, ${decimal(event.current.review_hours)} h of review.`,
      );
    } catch (error) {
      if (error instanceof AppError && error.status < 500)
        return redirectWithNotice(app, request, reply, back, `Not saved: ${error.message}`);
      throw error;
    }
  });
}
