import type { FastifyInstance } from 'fastify';
import { planAtLeast } from '../../billing/plans.js';
import { AppError } from '../../errors.js';
import { OUTCOMES, type Outcome } from '../../orgs/organizations.js';
import { openExport } from '../../reports/export.js';
import {
  DIMENSIONS,
  GROUP_KEY,
  METRICS,
  parseGroupBy,
  type Dimension,
  type Metric,
  type ReportInput,
} from '../../reports/params.js';
import { buildReport } from '../../reports/report.js';
import { barChart } from '../bar-chart.js';
import { lineChart } from '../chart.js';
import { bucketLabels, compact, count, hours, money, moneyCompact } from '../format.js';
import { html, type SafeHtml } from '../html.js';
import { planGate } from '../layout.js';
import { TaskTypeNames } from '../task-names.js';
import { dashboardCtx, queryOf, sendPage } from '../page-kit.js';
import { closedPeriodBanner } from './periods.js';
import { select, textField } from './controls.js';
import { isPartialBucket, partialEnds, PERIOD_LABELS, periodOf } from './figures.js';
import { reportForecast } from './report-forecast.js';

const DIMENSION_LABELS: Record<Dimension, string> = {
  agent: 'Agent',
  task_type: 'Task type',
  client: 'Client',
  day: 'Day',
  week: 'Week',
  month: 'Month',
};
const METRIC_LABELS: Record<Metric, string> = {
  events: 'Events',
  hours_saved: 'Hours saved',
  cost_saved: 'Cost saved',
  agent_cost: 'Agent cost',
  net_saved: 'Net saved',
};
const METADATA_KEY = /^[A-Za-z0-9_-]{1,64}$/;

function timeDimension(key: string): 'day' | 'week' | 'month' | null {
  return key === 'day' || key === 'week' || key === 'month' ? key : null;
}

/** The view's state, read from the dashboard's query string (the API's own parameter names). */
interface View {
  input: ReportInput;
  /** The API query string of this very view. */
  apiQuery: URLSearchParams;
  groupBy: string[];
  metadataText: string;
  error: string | null;
}

function readView(q: URLSearchParams): View {
  const period = periodOf(q.get('period'));
  const apiQuery = new URLSearchParams({ period });
  let error: string | null = null;
  const groupParts = q
    .getAll('group_by')
    .flatMap((g) => g.split(','))
    .filter((g) => g !== '');
  let groupBy: Dimension[] = ['agent'];
  try {
    if (groupParts.length > 0) groupBy = parseGroupBy(groupParts.join(','));
  } catch (e) {
    error = e instanceof AppError ? `Group by: ${e.message}` : 'Group by is not valid.';
  }
  apiQuery.set('group_by', groupBy.join(','));
  const sortText = q.get('sort') ?? 'hours_saved';
  const sort = (METRICS as readonly string[]).includes(sortText) ? (sortText as Metric) : 'hours_saved';
  apiQuery.set('sort', sort);
  const topText = (q.get('top') ?? '').trim();
  let top: number | null = null;
  if (topText !== '') {
    const n = Number(topText);
    if (Number.isInteger(n) && n >= 1 && n <= 10000) {
      top = n;
      apiQuery.set('top', String(n));
    } else error = 'Top must be a whole number from 1 to 10,000.';
  }
  const filters: ReportInput['filters'] = { metadata: [] };
  const agent = (q.get('agent_id') ?? '').trim();
  const taskType = (q.get('task_type') ?? '').trim();
  const client = (q.get('client_id') ?? '').trim();
  const outcome = q.get('outcome') ?? '';
  if (agent) {
    filters.agentId = agent;
    apiQuery.set('agent_id', agent);
  }
  if (taskType) {
    filters.taskType = taskType;
    apiQuery.set('task_type', taskType);
  }
  if (client) {
    filters.clientId = client;
    apiQuery.set('client_id', client);
  }
  if ((OUTCOMES as readonly string[]).includes(outcome)) {
    filters.outcome = outcome as Outcome;
    apiQuery.set('outcome', outcome);
  }
  const metadataText = (q.get('metadata') ?? '').trim();
  if (metadataText !== '') {
    for (const pair of metadataText.split(/[\n,]/)) {
      const eq = pair.indexOf('=');
      const key = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (eq < 1 || !METADATA_KEY.test(key)) {
        error =
          'Metadata filters are KEY=VALUE pairs separated by commas; keys use letters, digits, _ and -.';
        break;
      }
      filters.metadata.push([key, value]);
      apiQuery.set(`metadata.${key}`, value);
    }
    filters.metadata.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  }
  return {
    input: { period, groupBy, sort, top, filters },
    apiQuery,
    groupBy,
    metadataText,
    error,
  };
}

function controls(view: View, q: URLSearchParams, names: TaskTypeNames): SafeHtml {
  const dims: Array<readonly [string, string]> = DIMENSIONS.map((d) => [d, DIMENSION_LABELS[d]] as const);
  const g = view.groupBy;
  return html`<form method="get" action="/dashboard/reports" class="controls" aria-label="Report options">
    ${select({
      id: 'period',
      name: 'period',
      label: 'Period',
      options: Object.entries(PERIOD_LABELS),
      value: view.input.period,
    })}
    ${select({ id: 'group1', name: 'group_by', label: 'Group by', options: dims, value: g[0] ?? 'agent' })}
    ${select({ id: 'group2', name: 'group_by', label: 'Then by', options: [['', '—'], ...dims], value: g[1] ?? '' })}
    ${select({ id: 'group3', name: 'group_by', label: 'And then by', options: [['', '—'], ...dims], value: g[2] ?? '' })}
    ${select({
      id: 'sort',
      name: 'sort',
      label: 'Sort by',
      options: METRICS.map((m) => [m, METRIC_LABELS[m]] as const),
      value: view.input.sort,
    })}
    ${textField({ id: 'top', name: 'top', label: 'Top', type: 'number', value: q.get('top') ?? '', attrs: html`min="1" max="10000"` })}
    ${textField({ id: 'agent_id', name: 'agent_id', label: 'Agent', value: view.input.filters.agentId ?? '' })}
    ${textField({ id: 'task_type', name: 'task_type', label: 'Task type', value: view.input.filters.taskType ?? '', attrs: html`list="task-type-keys"` })}
    ${names.datalist('task-type-keys')}
    ${textField({ id: 'client_id', name: 'client_id', label: 'Client', value: view.input.filters.clientId ?? '' })}
    ${select({
      id: 'outcome',
      name: 'outcome',
      label: 'Outcome',
      options: [
        ['', 'Any'],
        ['success', 'Success'],
        ['needs_review', 'Needs review'],
        ['failure', 'Failure'],
      ],
      value: view.input.filters.outcome ?? '',
    })}
    ${textField({
      id: 'metadata',
      name: 'metadata',
      label: 'Metadata',
      value: view.metadataText,
      hint: 'KEY=VALUE, comma-separated',
    })}
    <div class="field actions"><button type="submit" class="button">Show report</button></div>
  </form>`;
}

export function registerReportPages(dash: FastifyInstance, app: FastifyInstance): void {
  dash.get('/reports', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    if (!planAtLeast(ctx.org.plan, 'pro')) {
      return sendPage(request, reply, {
        title: 'Reports',
        section: 'Reports',
        body: planGate('Reports', 'Pro', ctx.org),
      });
    }
    const q = queryOf(request);
    const view = readView(q);
    const currency = ctx.org.currency;
    const [report, names] = await Promise.all([
      view.error === null ? buildReport({ ctx, input: view.input }) : null,
      TaskTypeNames.load(ctx),
    ]);
    const keys = view.input.groupBy.map((d) => GROUP_KEY[d]);
    const fmt = (n: number) => money(n, currency);
    const sort = view.input.sort;
    const valueOf = (r: { [k in Metric]: number }) => r[sort];
    const formatSort = sort === 'events' ? count : sort === 'hours_saved' ? hours : fmt;
    const compactSort =
      sort === 'events' || sort === 'hours_saved' ? compact : (n: number) => moneyCompact(n, currency);
    const apiPath = `/v1/reports/time-saved?${view.apiQuery.toString()}`;
    const exportPath = `/dashboard/reports/export?${view.apiQuery.toString()}`;
    const origin = `${request.protocol}://${request.host}`;

    let result: SafeHtml = html``;
    if (view.error !== null) result = html`<p class="error" role="alert">${view.error}</p>`;
    else if (report && report.rows.length === 0)
      result = html`<p class="muted">No events match this view.</p>`;
    else if (report) {
      const timeOnly =
        view.input.groupBy.length === 1 && ['day', 'week', 'month'].includes(view.input.groupBy[0] ?? '');
      const shown = (k: string, v: string | null) =>
        v === null ? '(none)' : k === 'task_type' ? names.name(v) : v;
      const labels = report.rows.map((r) => keys.map((k) => shown(k, r.group[k] ?? null)).join(' · '));
      // Review columns only where a row has measured review time: most views have none, and the
      // table then keeps the chart beside it. The CSV and the API always carry them.
      const reviewed = report.rows.some((r) => r.review_hours !== 0 || r.review_cost !== 0);
      let chart: SafeHtml;
      if (timeOnly) {
        const key = keys[0] ?? 'day';
        const ordered = [...report.rows].sort((a, b) =>
          (a.group[key] ?? '') < (b.group[key] ?? '') ? -1 : 1,
        );
        chart = lineChart({
          labels: bucketLabels(ordered.map((r) => r.group[key] ?? '')),
          series: [{ name: METRIC_LABELS[sort], className: 's-saved', values: ordered.map(valueOf) }],
          formatValue: formatSort,
          formatCompact: compactSort,
          wholeNumbers: sort === 'events',
          partial: partialEnds(
            ordered.map((r) => r.group[key] ?? ''),
            timeDimension(key) ?? 'day',
            report.meta.range,
          ),
          title: `${METRIC_LABELS[sort]} by ${DIMENSION_LABELS[view.input.groupBy[0] ?? 'day'].toLowerCase()}`,
          tableId: 'report-table',
        });
      } else {
        chart = barChart({
          labels,
          values: report.rows.map(valueOf),
          formatValue: formatSort,
          formatCompact: compactSort,
          title: `${METRIC_LABELS[sort]} by ${view.input.groupBy.map((d) => DIMENSION_LABELS[d].toLowerCase()).join(' and ')}`,
          tableId: 'report-table',
        });
      }
      result = html`<p class="muted">
          ${count(report.meta.total_groups)}
          groups${
            view.input.top !== null && report.meta.total_groups > report.rows.length
              ? html`, the top ${count(report.rows.length)} shown`
              : ''
          };
          ${PERIOD_LABELS[view.input.period].toLowerCase()} (<span class="nowrap"
            >${report.meta.range.from.slice(0, 10)}</span
          >
          to <span class="nowrap">${report.meta.range.to.slice(0, 10)}</span>, UTC).
        </p>
        <div class="${timeOnly || view.input.groupBy.length > 1 || reviewed ? 'report stacked' : 'report'}">
          <div class="table-wrap">
            <table id="report-table">
              <caption class="sr-only">
                Report rows
              </caption>
              <thead>
                <tr>
                  ${view.input.groupBy.map((d) => html`<th scope="col">${DIMENSION_LABELS[d]}</th>`)}
                  ${METRICS.map(
                    (m) =>
                      html`<th scope="col" class="num" ${m === sort ? html` aria-sort="descending"` : ''}>
                        ${METRIC_LABELS[m]}
                      </th>`,
                  )}
                  ${
                    reviewed
                      ? html`<th scope="col" class="num">Review hours</th>
                          <th scope="col" class="num">Review cost</th>`
                      : ''
                  }
                </tr>
              </thead>
              <tbody>
                ${report.rows.map(
                  (r) =>
                    html`<tr>
                      ${keys.map((k) => {
                        const value = r.group[k] ?? null;
                        const time = timeDimension(k);
                        if (k === 'task_type') return html`<td class="wrap">${names.cell(value)}</td>`;
                        if (value === null) return html`<td><span class="muted">(none)</span></td>`;
                        return html`<td>
                          ${value}${time && isPartialBucket(value, time, report.meta.range) ? html` <span class="muted">(partial)</span>` : ''}
                        </td>`;
                      })}
                      <td class="num">${count(r.events)}</td>
                      <td class="num">${hours(r.hours_saved)}</td>
                      <td class="num">${fmt(r.cost_saved)}</td>
                      <td class="num">${fmt(r.agent_cost)}</td>
                      <td class="num">${fmt(r.net_saved)}</td>
                      ${
                        reviewed
                          ? html`<td class="num">${hours(r.review_hours)}</td>
                              <td class="num">${fmt(r.review_cost)}</td>`
                          : ''
                      }
                    </tr>`,
                )}
              </tbody>
            </table>
          </div>
          <div class="report-chart">${chart}</div>
        </div>`;
    }

    // A report by day also shows this month with its forecast (report-forecast.ts).
    const forecast =
      report && report.rows.length > 0 ? await reportForecast(ctx, view.input, METRIC_LABELS[sort]) : '';
    // Each closed month the window meets: when it closed and how far live has moved (periods.ts).
    const closedMonths = report ? await closedPeriodBanner(ctx, report.meta.range) : '';
    const body = html`${controls(view, q, names)}
      <div class="toolbar">
        <a class="button" href="${exportPath}" download>Download CSV</a>
      </div>
      ${closedMonths} ${result} ${forecast}
      <section class="panel">
        <h2>The same report from the API</h2>
        <pre class="code" id="api-request"><code>curl -H "Authorization: Bearer $TALLY_API_KEY" \\
  "${origin}${apiPath}"</code></pre>
        <button type="button" class="button quiet" data-copy="api-request">Copy</button>
      </section>`;
    return sendPage(request, reply, { title: 'Reports', section: 'Reports', body });
  });

  // The CSV of exactly the view on screen: the API export's verb with the same input.
  dash.get('/reports/export', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    if (!planAtLeast(ctx.org.plan, 'pro')) return reply.redirect('/dashboard/reports', 303);
    const view = readView(queryOf(request));
    if (view.error !== null) throw new AppError('validation_error', view.error);
    const stamp = ctx.clock.now().toISOString().slice(0, 10).replaceAll('-', '');
    const body = await openExport({ ctx, input: view.input });
    reply.raw.once('close', () => body.destroy());
    return reply
      .type('text/csv; charset=utf-8')
      .header('Content-Disposition', `attachment; filename="tally-export-${view.input.period}-${stamp}.csv"`)
      .send(body);
  });
}
