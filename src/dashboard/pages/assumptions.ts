import type { FastifyInstance } from 'fastify';
import { checkChange } from '../../assumptions/change-input.js';
import { isRateKind, type AssumptionKind } from '../../assumptions/kinds.js';
import { previewChange, type Totals } from '../../assumptions/preview.js';
import { restate } from '../../assumptions/restatements.js';
import type { AssumptionVersionView } from '../../assumptions/view.js';
import { AppError } from '../../errors.js';
import { count, dateTime, decimal, hours, money } from '../format.js';
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
import { select, textField } from './controls.js';

export const KIND_LABELS: Record<AssumptionKind, string> = {
  baseline_override: 'Baseline override',
  custom_baseline: 'Baseline',
  fallback_baseline: 'Fallback baseline',
  default_hourly_rate: 'Default hourly rate',
  category_hourly_rate: 'Category hourly rate',
  custom_hourly_rate: 'Hourly rate',
  outcome_credit: 'Outcome credit',
};

const STATUS_LABELS = { in_force: 'In force', scheduled: 'Scheduled', superseded: 'Superseded' } as const;

function valueText(kind: AssumptionKind, value: number | null, currency: string): string {
  if (value === null) return kind === 'baseline_override' ? 'None (built-in default)' : 'None';
  if (isRateKind(kind)) return `${money(value, currency)} / h`;
  if (kind === 'outcome_credit') return decimal(value);
  return `${decimal(value)} minutes`;
}

/** Every version with its dates, newest effective date first (DESIGN §10: dates shown). */
export function historyTable(
  versions: readonly AssumptionVersionView[],
  currency: string,
  caption: string,
): SafeHtml {
  if (versions.length === 0)
    return html`<p class="muted">No change recorded: the defaults apply from the beginning.</p>`;
  const ordered = [...versions].sort(
    (a, b) =>
      (b.effective_from ?? '').localeCompare(a.effective_from ?? '') ||
      b.recorded_at.localeCompare(a.recorded_at),
  );
  return html`<div class="table-wrap">
    <table id="assumption-history" class="card-rows">
      <caption class="sr-only">
        ${caption}
      </caption>
      <thead>
        <tr>
          <th scope="col">Assumption</th>
          <th scope="col">Value</th>
          <th scope="col">Applies from</th>
          <th scope="col">Recorded</th>
          <th scope="col">Status</th>
          <th scope="col">Reason</th>
        </tr>
      </thead>
      <tbody>
        ${ordered.map(
          (v) =>
            html`<tr>
              <td data-label="Assumption">
                ${KIND_LABELS[v.kind]}${v.key === null ? '' : html` <code>${v.key}</code>`}
              </td>
              <td data-label="Value">${valueText(v.kind, v.value, currency)}</td>
              <td data-label="Applies from">
                ${v.effective_from === null ? 'The beginning' : dateTime(v.effective_from)}
              </td>
              <td data-label="Recorded">${dateTime(v.recorded_at)}</td>
              <td data-label="Status">
                <span class="badge status-${v.status}">${STATUS_LABELS[v.status]}</span>${
                  v.restatement_id ? html` <span class="badge">Restated</span>` : ''
                }
              </td>
              <td class="wrap" data-label="Reason">${v.reason ?? html`<span class="muted">—</span>`}</td>
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

/**
 * A form that changes one assumption from a past date: it opens the preview, from which the
 * change is applied. `choices`: [kind, key, label]. Its heading and explanation sit inside it and
 * it is marked `data-change`, so that the page frame leaves the whole of it out for those who may
 * not change anything (read-only.ts withoutChangeForms), as it does with the forms that post.
 */
export function pastChangeForm(input: {
  id: string;
  intro: string;
  choices: ReadonlyArray<readonly [kind: AssumptionKind, key: string, label: string]>;
  back: string;
  valueHint: string;
}): SafeHtml {
  return html`<form
    method="get"
    action="/dashboard/restatements/preview"
    class="titled-form"
    aria-labelledby="${input.id}-title"
    data-change
  >
    <h3 id="${input.id}-title">Change from a past date</h3>
    <p class="muted">${input.intro}</p>
    <input type="hidden" name="back" value="${input.back}" />
    <div class="form-grid">
      ${select({
        id: `${input.id}-what`,
        name: 'what',
        label: 'Assumption',
        options: input.choices.map(([kind, key, label]) => [`${kind}:${key}`, label] as const),
        value: '',
      })}
      ${textField({ id: `${input.id}-value`, name: 'value', label: 'New value', type: 'number', hint: input.valueHint, attrs: html`min="0" step="any"` })}
      ${textField({ id: `${input.id}-from`, name: 'effective_from', label: 'Applies from (UTC day)', type: 'date', required: true })}
      <div class="field actions"><button type="submit" class="button">Preview the change</button></div>
    </div>
  </form>`;
}

function totalsCells(t: Totals, currency: string): SafeHtml {
  return html`<td class="num">${hours(t.hours_saved)}</td>
    <td class="num">${money(t.cost_saved, currency)}</td>
    <td class="num">${money(t.net_saved, currency)}</td>`;
}

/** A preview group's value of its dimension (`agent_id`, `task_type` or `client_id`). */
const groupName = (group: object, field: string) => (group as Record<string, string | null>)[field] ?? null;

const safeBack = (back: string) =>
  /^\/dashboard\/[A-Za-z0-9/_-]*$/.test(back) ? back : '/dashboard/settings';

function changeOf(query: URLSearchParams | Form) {
  const get = (name: string) =>
    query instanceof URLSearchParams ? (query.get(name) ?? '') : field(query, name);
  const [kind = '', key = ''] = get('what').split(':');
  const valueText = get('value').trim();
  const value = valueText === '' ? null : Number(valueText);
  if (value !== null && !Number.isFinite(value))
    throw new AppError('validation_error', 'The new value must be a number.');
  return { kind, key: key === '' ? null : key, value, effective_from: get('effective_from').trim() };
}

/** What a refused change says on the page (its first detail, else its message); 5xx rethrown. */
function refusalText(error: unknown): string {
  if (!(error instanceof AppError) || error.status >= 500) throw error;
  const d = error.details?.[0];
  return d ? `${d.path.replace('/body/', '')} ${d.message}` : error.message;
}

export function registerAssumptionPages(dash: FastifyInstance, app: FastifyInstance): void {
  dash.get('/restatements/preview', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    const query = queryOf(request);
    const back = safeBack(query.get('back') ?? '');
    let input;
    let change;
    let preview;
    try {
      input = changeOf(query);
      change = await checkChange(ctx, input);
      // An analyst is refused here (the preview is the first step of a change).
      preview = await previewChange({ ctx, change });
    } catch (error) {
      return redirectWithNotice(app, request, reply, back, `Not previewed: ${refusalText(error)}`);
    }
    const cur = ctx.org.currency;
    const past = change.effectiveFrom < ctx.clock.now().getTime();
    const kind = change.kind;
    const label = `${KIND_LABELS[kind]}${change.key === '' ? '' : ` (${change.key})`}`;
    const token = session(request).csrfToken;
    const body = html`<p><a href="${back}">← Back</a></p>
      <section class="panel">
        <h2>The change</h2>
        <p>
          <strong>${label}</strong> becomes <strong>${valueText(kind, input.value, cur)}</strong> from
          <strong>${dateTime(new Date(change.effectiveFrom).toISOString())}</strong>.
        </p>
        <p>
          ${count(preview.affected_events)} stored
          ${preview.affected_events === 1 ? 'event moves' : 'events move'}: hours saved
          ${hours(preview.delta.hours_saved)}, cost and net saved ${money(preview.delta.net_saved, cur)} in
          all.
        </p>
      </section>
      ${
        preview.months.length === 0
          ? ''
          : html`<section class="panel">
                <h2>Months before and after</h2>
                <div class="table-wrap">
                  <table id="restatement-months">
                    <thead>
                      <tr>
                        <th scope="col">Month</th>
                        <th scope="col">Events moved</th>
                        <th scope="col" class="num">Hours before</th>
                        <th scope="col" class="num">Cost saved before</th>
                        <th scope="col" class="num">Net saved before</th>
                        <th scope="col" class="num">Hours after</th>
                        <th scope="col" class="num">Cost saved after</th>
                        <th scope="col" class="num">Net saved after</th>
                      </tr>
                    </thead>
                    <tbody>
                      ${preview.months.map(
                        (m) =>
                          html`<tr>
                            <th scope="row">${m.month}</th>
                            <td class="num">${count(m.events_affected)}</td>
                            ${totalsCells(m.before, cur)} ${totalsCells(m.after, cur)}
                          </tr>`,
                      )}
                    </tbody>
                  </table>
                </div>
              </section>
              <section class="panel">
                <h2>Groups moved</h2>
                <p class="muted">Each month's agents, task types and clients whose figures move.</p>
                <div class="table-wrap">
                  <table id="restatement-groups">
                    <thead>
                      <tr>
                        <th scope="col">Month</th>
                        <th scope="col">By</th>
                        <th scope="col">Group</th>
                        <th scope="col" class="num">Events moved</th>
                        <th scope="col" class="num">Net saved before</th>
                        <th scope="col" class="num">Net saved after</th>
                      </tr>
                    </thead>
                    <tbody>
                      ${preview.months.flatMap((m) =>
                        (
                          [
                            ['Agent', m.by_agent.map((g) => [groupName(g, 'agent_id'), g] as const)],
                            ['Task type', m.by_task_type.map((g) => [groupName(g, 'task_type'), g] as const)],
                            ['Client', m.by_client.map((g) => [groupName(g, 'client_id'), g] as const)],
                          ] as const
                        ).flatMap(([by, groups]) =>
                          groups.map(
                            ([name, g]) =>
                              html`<tr>
                                <td>${m.month}</td>
                                <td>${by}</td>
                                <td class="wrap">${name ?? html`<span class="muted">none</span>`}</td>
                                <td class="num">${count(g.events_affected)}</td>
                                <td class="num">${money(g.before.net_saved, cur)}</td>
                                <td class="num">${money(g.after.net_saved, cur)}</td>
                              </tr>`,
                          ),
                        ),
                      )}
                    </tbody>
                  </table>
                </div>
              </section>
              <section class="panel">
                <h2>Events moved</h2>
                <p class="muted">The first ${count(preview.events.length)}, oldest first.</p>
                <div class="table-wrap">
                  <table id="restatement-events">
                    <thead>
                      <tr>
                        <th scope="col">Event</th>
                        <th scope="col">Occurred</th>
                        <th scope="col">Agent</th>
                        <th scope="col" class="num">Baseline before → after</th>
                        <th scope="col" class="num">Cost saved before → after</th>
                      </tr>
                    </thead>
                    <tbody>
                      ${preview.events.map(
                        (e) =>
                          html`<tr>
                            <td>
                              <a href="/dashboard/events/${e.event_id}"><code>${e.event_id}</code></a>
                            </td>
                            <td>${dateTime(e.occurred_at)}</td>
                            <td class="wrap">${e.agent_id}</td>
                            <td class="num">
                              ${decimal(e.before.resolved_baseline_minutes)} →
                              ${decimal(e.after.resolved_baseline_minutes)} min
                            </td>
                            <td class="num">
                              ${money(e.before.cost_saved, cur)} → ${money(e.after.cost_saved, cur)}
                            </td>
                          </tr>`,
                      )}
                    </tbody>
                  </table>
                </div>
              </section>`
      }
      ${
        past
          ? html`<section class="panel">
              <h2>Apply the restatement</h2>
              <p>
                The change is recorded with its date and reason; the events' own rows stay as they are, and
                each moved event gets an adjustment entry.
              </p>
              <form method="post" action="/dashboard/restatements" class="form-grid">
                ${csrfField(token)}
                <input type="hidden" name="back" value="${back}" />
                <input type="hidden" name="what" value="${query.get('what') ?? ''}" />
                <input type="hidden" name="value" value="${query.get('value') ?? ''}" />
                <input type="hidden" name="effective_from" value="${input.effective_from}" />
                ${textField({ id: 'reason', name: 'reason', label: 'Reason', required: true, wide: true, attrs: html`maxlength="1000"` })}
                <div class="field actions">
                  <button type="submit" class="button">Apply restatement</button>
                </div>
              </form>
            </section>`
          : html`<p class="muted">
              This date is not in the past: the change moves no stored figure. Make it with the ordinary form.
            </p>`
      }`;
    return sendPage(request, reply, {
      title: 'Restatement preview',
      section: back.startsWith('/dashboard/task-types') ? 'Task types' : 'Settings',
      body,
    });
  });

  dash.post<{ Body: Form }>('/restatements', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    const back = safeBack(field(request.body, 'back'));
    try {
      const r = await restate({
        ctx,
        onBackgroundError: (error) =>
          app.log.error({ err: error }, 'restatement: applying failed; it resumes'),
        input: { ...changeOf(request.body), reason: field(request.body, 'reason') },
      });
      return redirectWithNotice(
        app,
        request,
        reply,
        back,
        r.status === 'applied'
          ? `Restatement ${r.id} applied from ${dateTime(r.version.effective_from)}: ${r.events_adjusted} events adjusted.`
          : `Restatement ${r.id} recorded from ${dateTime(r.version.effective_from)}; its figures are being applied.`,
      );
    } catch (error) {
      return redirectWithNotice(app, request, reply, back, `Not applied: ${refusalText(error)}`);
    }
  });
}
