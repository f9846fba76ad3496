import type { FastifyInstance } from 'fastify';
import { OUTCOMES } from '../../orgs/organizations.js';
import { getEvent, listEvents } from '../../tracking/events.js';
import { count, dateTime, decimal, hours, money } from '../format.js';
import { html, type SafeHtml } from '../html.js';
import { dashboardCtx, queryOf, sendPage, session } from '../page-kit.js';
import { TaskTypeNames } from '../task-names.js';
import { select, textField } from './controls.js';
import { eventTabs, ledgerPanel, registerReviewPages } from './review.js';

const OUTCOME_LABELS: Record<string, string> = {
  success: 'Success',
  needs_review: 'Needs review',
  failure: 'Failure',
};

const BASELINE_LAYERS: Record<string, string> = {
  request: 'given in the request (human_baseline_minutes)',
  override: "the organisation's override of the built-in type",
  custom: "the organisation's custom task type",
  builtin: "Tally's built-in default for the type",
  fallback: "the organisation's fallback baseline (unknown task type)",
};

const COST_SOURCES: Record<string, string> = {
  provided: 'given in the request (agent_cost)',
  computed: 'computed from the model and token counts',
  none: 'not known (no agent_cost, or no model with token counts)',
};

/** The date and the time as two unbreakable parts, so a narrow column wraps between them. */
function dateTimeParts(iso: string): SafeHtml {
  const [date, time] = dateTime(iso).split(/ (.*)/s);
  return html`<span class="nowrap">${date}</span> <span class="nowrap">${time}</span>`;
}

function outcomeBadge(outcome: string): SafeHtml {
  return html`<span class="badge outcome-${outcome}">${OUTCOME_LABELS[outcome] ?? outcome}</span>`;
}

interface Pricing {
  provider?: string;
  model?: string;
  usd?: number;
  currency?: string;
  exchange_rate?: number;
  exchange_rate_source?: string;
  exchange_rate_date?: string | null;
  catalogue?: string;
  /** The assumption versions that priced the savings (src/assumptions/). */
  assumptions?: { baseline: string | null; hourly_rate: string | null; outcome_credit: string | null };
}

export function registerEventPages(dash: FastifyInstance, app: FastifyInstance): void {
  registerReviewPages(dash, app);
  dash.get('/events', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    const q = queryOf(request);
    const filter = (name: string) => {
      const v = (q.get(name) ?? '').trim();
      return v === '' ? undefined : v.slice(0, 200);
    };
    const outcome = filter('outcome');
    const input = {
      agentId: filter('agent_id'),
      taskType: filter('task_type'),
      clientId: filter('client_id'),
      outcome:
        outcome !== undefined && (OUTCOMES as readonly string[]).includes(outcome) ? outcome : undefined,
      cursor: filter('cursor'),
      limit: 50,
    };
    const [page, names] = await Promise.all([listEvents({ ctx, input }), TaskTypeNames.load(ctx)]);
    const currency = ctx.org.currency;
    const more = new URLSearchParams(q);
    if (page.next_cursor) more.set('cursor', page.next_cursor);
    const body = html`${eventTabs('All events')}
      <form method="get" action="/dashboard/events" class="controls" aria-label="Event filters">
        ${textField({ id: 'agent_id', name: 'agent_id', label: 'Agent', value: input.agentId ?? '' })}
        ${textField({ id: 'task_type', name: 'task_type', label: 'Task type', value: input.taskType ?? '', attrs: html`list="task-type-keys"` })}
        ${names.datalist('task-type-keys')}
        ${textField({ id: 'client_id', name: 'client_id', label: 'Client', value: input.clientId ?? '' })}
        ${select({
          id: 'outcome',
          name: 'outcome',
          label: 'Outcome',
          options: [['', 'Any'], ...Object.entries(OUTCOME_LABELS)],
          value: input.outcome ?? '',
        })}
        <div class="field actions"><button type="submit" class="button">Filter</button></div>
      </form>
      ${input.cursor ? html`<p><a href="/dashboard/events">Back to the newest events</a></p>` : ''}
      ${
        page.data.length === 0
          ? html`<p class="muted">No events match.</p>`
          : html`<div class="table-wrap">
              <table class="events">
                <thead>
                  <tr>
                    <th scope="col">Occurred</th>
                    <th scope="col">Agent</th>
                    <th scope="col">Task type</th>
                    <th scope="col">Outcome</th>
                    <th scope="col" class="num">Hours saved</th>
                    <th scope="col" class="num">Cost saved</th>
                    <th scope="col" class="num">Agent cost</th>
                    <th scope="col" class="num">Net saved</th>
                  </tr>
                </thead>
                <tbody>
                  ${page.data.map(
                    (e) =>
                      html`<tr>
                        <td>
                          <a href="/dashboard/events/${e.event_id}"
                            >${dateTimeParts(e.occurred_at)}
                            <span class="sr-only">by ${e.agent_id}: ${names.name(e.task_type)}</span></a
                          >
                        </td>
                        <td class="wrap">${e.agent_id}</td>
                        <td class="wrap">${names.cell(e.task_type)}</td>
                        <td>${outcomeBadge(e.outcome)}</td>
                        <td class="num">${hours(e.hours_saved)}</td>
                        <td class="num">${money(e.cost_saved, e.currency)}</td>
                        <td class="num">${e.agent_cost === null ? '—' : money(e.agent_cost, e.currency)}</td>
                        <td class="num">${money(e.net_saved, currency)}</td>
                      </tr>`,
                  )}
                </tbody>
              </table>
            </div>`
      }
      ${page.next_cursor ? html`<p><a class="button quiet" href="/dashboard/events?${more.toString()}">More events</a></p>` : ''}`;
    return sendPage(request, reply, { title: 'Events', section: 'Events', body });
  });

  dash.get<{ Params: { id: string } }>('/events/:id', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    const event = await getEvent({ ctx, eventId: request.params.id.slice(0, 100) });
    // What priced the run and the audit sample are stored beside the event, not in its API view.
    const extra = await ctx.db
      .selectFrom('events')
      .select(['pricing', 'audit_sample'])
      .where('org_id', '=', ctx.org.id)
      .where('id', '=', event.event_id)
      .executeTakeFirst();
    const pricing = extra?.pricing ? (JSON.parse(extra.pricing) as Pricing) : null;
    const cur = event.currency;
    const credit =
      event.resolved_baseline_minutes > 0 ? (event.hours_saved * 60) / event.resolved_baseline_minutes : 0;

    // The rate the event was priced with is stored; where it came from is matched against the
    // settings of today, which may have changed since.
    const names = await TaskTypeNames.load(ctx);
    const type = names.record(event.task_type);
    const rateMicros = Math.round(event.resolved_hourly_rate * 1e6);
    const same = (n: number | null | undefined) =>
      n !== null && n !== undefined && Math.round(n * 1e6) === rateMicros;
    const categoryRateMicros = type ? ctx.org.categoryHourlyRatesMicros[type.category] : undefined;
    const rateSource = same(type?.hourly_rate)
      ? `the custom task type's own hourly rate`
      : categoryRateMicros === rateMicros
        ? `the organisation's hourly rate for the ${type?.category ?? ''} category`
        : ctx.org.defaultHourlyRateMicros === rateMicros
          ? `the organisation's default hourly rate`
          : 'the settings at the time (they have changed since)';

    const row = (label: string, value: SafeHtml | string) =>
      html`<tr>
        <th scope="row">${label}</th>
        <td>${value}</td>
      </tr>`;
    const body = html`<p><a href="/dashboard/events">← All events</a></p>
      <p class="event-summary">
        <strong>${names.name(event.task_type)}</strong> by <strong>${event.agent_id}</strong>,
        <span class="nowrap">${dateTime(event.occurred_at)}</span>: ${outcomeBadge(event.outcome)}
      </p>
      <section class="panel">
        <h2>How the figures came about</h2>
        <ol class="derivation">
          <li>
            <strong>Baseline:</strong> ${decimal(event.resolved_baseline_minutes)} minutes, from
            ${BASELINE_LAYERS[event.resolved_baseline_source] ?? event.resolved_baseline_source}.
          </li>
          <li>
            <strong>Outcome credit:</strong> ${decimal(Math.round(credit * 1e4) / 1e4)} for
            ${OUTCOME_LABELS[event.outcome] ?? event.outcome}, so hours saved =
            ${decimal(event.resolved_baseline_minutes)} min × ${decimal(Math.round(credit * 1e4) / 1e4)} ÷ 60
            = <strong>${decimal(event.hours_saved)} h</strong>.
          </li>
          <li>
            <strong>Hourly rate:</strong> ${money(event.resolved_hourly_rate, cur)}, matching ${rateSource};
            cost saved = ${decimal(event.hours_saved)} h × ${money(event.resolved_hourly_rate, cur)} =
            <strong>${money(event.cost_saved, cur)}</strong>.
          </li>
          <li>
            <strong>Agent cost:</strong> ${event.agent_cost === null ? 'none' : money(event.agent_cost, cur)},
            ${COST_SOURCES[event.resolved_cost_source] ?? event.resolved_cost_source}.
            ${
              pricing?.provider !== undefined
                ? html`Priced as ${pricing.provider} / ${pricing.model ?? '?'} at
                  US$${decimal(pricing.usd ?? 0)}, converted at ${decimal(pricing.exchange_rate ?? 1)}
                  ${pricing.currency ?? ''} per USD
                  (${
                    pricing.exchange_rate_source === 'organization'
                      ? "the organisation's exchange rate"
                      : pricing.exchange_rate_source === 'reference'
                        ? `reference rate of ${pricing.exchange_rate_date ?? 'the shipped table'}`
                        : 'no conversion'
                  }),
                  with ${pricing.catalogue ?? 'the price catalogue'}.`
                : ''
            }
          </li>
          <li><strong>Net saved:</strong> ${money(event.net_saved, cur)} = cost saved − agent cost.</li>
          ${
            pricing?.assumptions
              ? html`<li>
                  <strong>Assumption versions</strong> in force at its occurred_at: baseline
                  ${
                    pricing.assumptions.baseline === null || pricing.assumptions.baseline === undefined
                      ? html`<span class="muted"
                          >none
                          (${event.resolved_baseline_source === 'request' ? 'sent with the event' : "Tally's built-in default"})</span
                        >`
                      : html`<code>${pricing.assumptions.baseline}</code>`
                  },
                  hourly rate <code>${pricing.assumptions.hourly_rate ?? '—'}</code>, outcome credit
                  <code>${pricing.assumptions.outcome_credit ?? '—'}</code>.
                </li>`
              : ''
          }
        </ol>
      </section>
      ${await ledgerPanel(ctx, event.event_id, session(request).csrfToken)}
      <section class="panel">
        <h2>Stored fields</h2>
        <div class="table-wrap">
          <table class="fields">
            <tbody>
              ${row('Event id', html`<code>${event.event_id}</code>`)} ${row('Agent', event.agent_id)}
              ${row('Task type', names.cell(event.task_type))} ${row('Outcome', outcomeBadge(event.outcome))}
              ${row('Occurred at', event.occurred_at)} ${row('Received at', event.received_at)}
              ${row('Baseline minutes', decimal(event.resolved_baseline_minutes))}
              ${row('Baseline source', event.resolved_baseline_source)}
              ${row('Hourly rate', money(event.resolved_hourly_rate, cur))} ${row('Currency', cur)}
              ${row('Hours saved', hours(event.hours_saved))}
              ${row('Cost saved', money(event.cost_saved, cur))}
              ${row('Agent cost', event.agent_cost === null ? '—' : money(event.agent_cost, cur))}
              ${row('Cost source', event.resolved_cost_source)}
              ${row('Net saved', money(event.net_saved, cur))}
              ${row('Agent duration', event.agent_duration_seconds === null ? '—' : `${decimal(event.agent_duration_seconds)} s`)}
              ${row('Model', event.model ?? '—')}
              ${row('Tokens in', event.tokens_in === null ? '—' : count(event.tokens_in))}
              ${row('Tokens out', event.tokens_out === null ? '—' : count(event.tokens_out))}
              ${row(
                'Metadata',
                event.metadata === null
                  ? '—'
                  : html`<pre class="code">${JSON.stringify(event.metadata, null, 2)}</pre>`,
              )}
              ${row(
                'Audit sample',
                extra?.audit_sample
                  ? html`<pre class="code">${JSON.stringify(JSON.parse(extra.audit_sample), null, 2)}</pre>`
                  : '—',
              )}
            </tbody>
          </table>
        </div>
      </section>`;
    return sendPage(request, reply, { title: `Event ${event.event_id}`, section: 'Events', body });
  });
}
