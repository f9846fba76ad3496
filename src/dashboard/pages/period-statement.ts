import type { PeriodChanges } from '../../periods/changes.js';
import { isZero, type Figures } from '../../periods/figures.js';
import type { Statement } from '../../periods/periods.js';
import { count, dateTime, hours, money, monthName } from '../format.js';
import { html, type SafeHtml } from '../html.js';

// A closed month's statement and what changed since, as the Periods page shows them (periods.ts).

function signed(value: number, format: (n: number) => string): string {
  if (value === 0) return format(0);
  return `${value > 0 ? '+' : '−'}${format(Math.abs(value))}`;
}

/** `+1 event, +2.5 h saved, −€3.10 net saved`. */
export function differenceText(d: Figures, currency: string): string {
  return [
    `${signed(d.events, count)} ${Math.abs(d.events) === 1 ? 'event' : 'events'}`,
    `${signed(d.hours_saved, hours)} h saved`,
    `${signed(d.net_saved, (n) => money(n, currency))} net saved`,
    ...(d.review_hours === 0 ? [] : [`${signed(d.review_hours, hours)} h of review`]),
  ].join(', ');
}

/**
 * Measured review time is shown only where a row has some, as on the Reports page: most months
 * have none, and five columns read better on a phone than seven. The CSV always carries them.
 */
function reviewedIn(rows: ReadonlyArray<{ figures: Figures }>): boolean {
  return rows.some((r) => r.figures.review_hours !== 0 || r.figures.review_cost !== 0);
}

function reviewCells(f: Figures, currency: string, reviewed: boolean): SafeHtml | '' {
  return reviewed
    ? html`<td class="num">${hours(f.review_hours)}</td>
        <td class="num">${money(f.review_cost, currency)}</td>`
    : '';
}

function reviewHeaders(reviewed: boolean): SafeHtml | '' {
  return reviewed
    ? html`<th scope="col" class="num">Review hours</th>
        <th scope="col" class="num">Review cost</th>`
    : '';
}

function figureCells(f: Figures, currency: string, reviewed: boolean): SafeHtml {
  return html`<td class="num">${count(f.events)}</td>
    <td class="num">${hours(f.hours_saved)}</td>
    <td class="num">${money(f.cost_saved, currency)}</td>
    <td class="num">${money(f.agent_cost, currency)}</td>
    <td class="num">${money(f.net_saved, currency)}</td>
    ${reviewCells(f, currency, reviewed)}`;
}

const FIGURE_HEADERS = html`<th scope="col" class="num">Events</th>
  <th scope="col" class="num">Hours saved</th>
  <th scope="col" class="num">Cost saved</th>
  <th scope="col" class="num">Agent cost</th>
  <th scope="col" class="num">Net saved</th>`;

function figuresTable(
  id: string,
  caption: string,
  label: string,
  rows: ReadonlyArray<{ key: string | null; figures: Figures }>,
  currency: string,
): SafeHtml {
  const reviewed = reviewedIn(rows);
  return html`<div class="table-wrap">
    <table id="${id}" class="figures">
      <caption>
        ${caption}
      </caption>
      <thead>
        <tr>
          <th scope="col">${label}</th>
          ${FIGURE_HEADERS} ${reviewHeaders(reviewed)}
        </tr>
      </thead>
      <tbody>
        ${rows.map(
          (r) =>
            html`<tr>
              <td class="wrap">${r.key ?? html`<span class="muted">(none)</span>`}</td>
              ${figureCells(r.figures, currency, reviewed)}
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

export function statementTables(s: Statement): SafeHtml {
  const c = s.currency;
  return html`${figuresTable('statement-totals', 'Totals', 'Month', [{ key: monthName(s.month), figures: s.totals }], c)}
  ${figuresTable(
    'statement-agents',
    'By agent',
    'Agent',
    s.by_agent.map((r) => ({ key: r.agent_id, figures: r })),
    c,
  )}
  ${figuresTable(
    'statement-task-types',
    'By task type',
    'Task type',
    s.by_task_type.map((r) => ({ key: r.task_type, figures: r })),
    c,
  )}
  ${figuresTable(
    'statement-clients',
    'By client',
    'Client',
    s.by_client.map((r) => ({ key: r.client_id, figures: r })),
    c,
  )}`;
}

export function changesSection(changes: PeriodChanges): SafeHtml {
  const c = changes.currency;
  const rows = [
    { key: 'Statement', figures: changes.statement },
    { key: 'Entries since', figures: changes.entries_total },
    { key: 'Live', figures: changes.live.totals },
  ];
  return html`<section class="panel no-print" aria-labelledby="changes-title">
    <h2 id="changes-title">What changed since closing</h2>
    ${
      isZero(changes.difference.totals)
        ? html`<p class="muted">Nothing: the live figures equal the statement.</p>`
        : html`<p>Live figures differ by ${differenceText(changes.difference.totals, c)}.</p>`
    }
    ${figuresTable('changes-sum', 'Statement + entries = live', 'Figures', rows, c)}
    ${
      isZero(changes.unexplained)
        ? ''
        : html`<p class="muted">
            Not explained by the entries (events in flight at the moment of closing):
            ${differenceText(changes.unexplained, c)}.
          </p>`
    }
    ${changes.entries.length === 0 ? '' : entriesTable(changes)}
  </section>`;
}

const ENTRY_KINDS: Record<string, string> = {
  late_event: 'Late event',
  review: 'Review',
  restatement: 'Restatement',
};

function entriesTable(changes: PeriodChanges): SafeHtml {
  const c = changes.currency;
  const reviewed = reviewedIn(changes.entries.map((e) => ({ figures: e })));
  return html`<div class="table-wrap">
    <table id="changes-entries" class="figures">
      <caption>
        Entries${changes.entries_truncated ? ' (the first 1,000)' : ''}
      </caption>
      <thead>
        <tr>
          <th scope="col">Kind</th>
          <th scope="col">Recorded</th>
          <th scope="col">Event</th>
          <th scope="col" class="num">Hours saved</th>
          <th scope="col" class="num">Cost saved</th>
          <th scope="col" class="num">Agent cost</th>
          <th scope="col" class="num">Net saved</th>
          ${reviewHeaders(reviewed)}
        </tr>
      </thead>
      <tbody>
        ${changes.entries.map(
          (e) =>
            html`<tr>
              <td>${ENTRY_KINDS[e.kind === 'late_event' ? e.kind : e.cause] ?? 'Adjustment'}</td>
              <td>${dateTime(e.at)}</td>
              <td class="wrap">
                <a href="/dashboard/events/${e.event_id}"><code>${e.event_id}</code></a
                ><br /><span class="muted"
                  >${e.agent_id} · ${e.task_type}${e.client_id === null ? '' : ` · ${e.client_id}`}</span
                >
              </td>
              <td class="num">${hours(e.hours_saved)}</td>
              <td class="num">${money(e.cost_saved, c)}</td>
              <td class="num">${money(e.agent_cost, c)}</td>
              <td class="num">${money(e.net_saved, c)}</td>
              ${reviewCells(e, c, reviewed)}
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}
