import type { FastifyInstance } from 'fastify';
import { getUsage } from '../../billing/usage.js';
import { planAtLeast } from '../../billing/plans.js';
import { buildReport, type ReportRow } from '../../reports/report.js';
import { listWebhooks } from '../../webhooks/subscriptions.js';
import { lineChart } from '../chart.js';
import { bucketLabels, change, count, hours, money, moneyCompact, roi } from '../format.js';
import { html, type SafeHtml } from '../html.js';
import { planGate } from '../layout.js';
import { TaskTypeNames } from '../task-names.js';
import { dashboardCtx, queryOf, sendPage } from '../page-kit.js';
import { closedPeriodBanner } from './periods.js';
import {
  isPartialBucket,
  partialEnds,
  PERIOD_LABELS,
  periodOf,
  previousPeriodReport,
  reportInputOf,
  totalsOf,
  type Totals,
} from './figures.js';
import { periodPicker } from './controls.js';
import { overviewPlanning } from './overview-planning.js';

function card(label: string, value: string, delta: SafeHtml | string): SafeHtml {
  return html`<div class="card">
    <dt>${label}</dt>
    <dd class="figure">${value}</dd>
    <dd class="delta">${delta}</dd>
  </div>`;
}

function deltaOf(current: number, previous: number | null, moreIsBetter = true): SafeHtml | string {
  if (previous === null) return '';
  const c = change(current, previous);
  const good = c.direction === 'flat' ? 'flat' : (c.direction === 'up') === moreIsBetter ? 'good' : 'bad';
  const arrow = c.direction === 'up' ? '▲' : c.direction === 'down' ? '▼' : '';
  return html`<span class="${good}"><span aria-hidden="true">${arrow} </span>${c.text}</span>
    <span class="muted">vs previous period</span>`;
}

function topTable(
  caption: string,
  column: string,
  cell: (r: ReportRow) => SafeHtml | string,
  rows: ReportRow[],
  currency: string,
  empty: string,
): SafeHtml {
  return html`<section class="panel">
    <h3>${caption}</h3>
    ${
      rows.length === 0
        ? html`<p class="muted">${empty}</p>`
        : html`<div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">${column}</th>
                  <th scope="col" class="num">Events</th>
                  <th scope="col" class="num">Net saved</th>
                </tr>
              </thead>
              <tbody>
                ${rows.map(
                  (r) =>
                    html`<tr>
                      <td class="wrap">${cell(r)}</td>
                      <td class="num">${count(r.events)}</td>
                      <td class="num">${money(r.net_saved, currency)}</td>
                    </tr>`,
                )}
              </tbody>
            </table>
          </div>`
    }
  </section>`;
}

function firstEventHelp(origin: string): SafeHtml {
  const curl = `curl -X POST ${origin}/v1/track \\
  -H "Authorization: Bearer $TALLY_API_KEY" \\
  -H "Content-Type: application/json" \\
  -d '{"agent_id": "support-bot", "task_type": "support_ticket_reply", "outcome": "success"}'`;
  return html`<section class="panel empty">
    <h2>Track your first event</h2>
    <p>
      Nothing has been tracked yet. When an agent finishes a task, send it to Tally; the figures on this page
      fill in from the first event. Create an <strong>ingest</strong> key for your agents under
      <a href="/dashboard/settings">Settings</a>, then:
    </p>
    <pre class="code" id="first-event"><code>${curl}</code></pre>
    <button type="button" class="button quiet" data-copy="first-event">Copy</button>
  </section>`;
}

export function registerOverviewPage(dash: FastifyInstance, app: FastifyInstance): void {
  dash.get('/', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    const period = periodOf(queryOf(request).get('period'));
    const currency = ctx.org.currency;
    const [usage, webhooks] = await Promise.all([
      getUsage({ ctx }),
      planAtLeast(ctx.org.plan, 'pro') ? listWebhooks({ ctx, limit: 100 }) : Promise.resolve({ data: [] }),
    ]);

    const banners: SafeHtml[] = [];
    for (const w of webhooks.data.filter((w) => w.status !== 'active')) {
      banners.push(
        html`<p class="banner warn" role="alert">
          <strong>Webhook ${w.status}:</strong> ${w.url} has ${count(w.consecutive_failures)} failed
          deliveries in a row.
          <a href="/dashboard/webhooks/${w.id}"
            >See its delivery log<span class="sr-only"> (${w.url})</span></a
          >
        </p>`,
      );
    }
    const included = usage.events_included_in_plan;
    if (included > 0 && usage.events_this_month >= 0.8 * included) {
      const pct = Math.floor((usage.events_this_month / included) * 100);
      banners.push(
        html`<p class="banner warn" role="alert">
          <strong>${pct}% of the included events used:</strong> ${count(usage.events_this_month)} of
          ${count(included)} events this month. <a href="/dashboard/usage">See usage</a>
        </p>`,
      );
    }

    const picker = periodPicker('/dashboard', period, new URLSearchParams());
    if (!planAtLeast(ctx.org.plan, 'pro')) {
      const body = html`${banners} ${usage.lifetime_events === 0 ? firstEventHelp(origin(request)) : ''}
        <dl class="cards">
          ${card('Events this month', count(usage.events_this_month), `of ${count(included)} included`)}
          ${card('Lifetime events', count(usage.lifetime_events), '')}
        </dl>
        ${planGate('Reports of hours and money saved', 'Pro', ctx.org)}`;
      return sendPage(request, reply, { title: 'Overview', section: 'Overview', body });
    }

    const bucket = period === '24h' || period === '7d' || period === '30d' ? 'day' : 'week';
    const [series, previous, agents, taskTypes, clients, names] = await Promise.all([
      buildReport({ ctx, input: reportInputOf(period, [bucket], 'events') }),
      previousPeriodReport(ctx, reportInputOf(period, ['month'], 'events')),
      buildReport({ ctx, input: reportInputOf(period, ['agent'], 'net_saved', 5) }),
      buildReport({ ctx, input: reportInputOf(period, ['task_type'], 'net_saved', 5) }),
      buildReport({ ctx, input: reportInputOf(period, ['client'], 'net_saved', 5) }),
      TaskTypeNames.load(ctx),
    ]);
    const none = html`<span class="muted">(none)</span>`;
    // Forecast, payback and budgets at risk (overview-planning.ts).
    const planning = await overviewPlanning({ ctx, period });
    banners.push(...planning.banners);
    const totals = totalsOf(series.rows);
    const prev: Totals | null = previous ? totalsOf(previous.rows) : null;
    const points = [...series.rows].sort((a, b) =>
      (a.group[bucket] ?? '') < (b.group[bucket] ?? '') ? -1 : 1,
    );
    const fmt = (n: number) => money(n, currency);
    const prevRoi = prev && prev.agent_cost > 0 ? prev.cost_saved / prev.agent_cost : null;
    const curRoi = totals.agent_cost > 0 ? totals.cost_saved / totals.agent_cost : null;

    const cards = html`<dl class="cards">
      ${card('Events', count(totals.events), deltaOf(totals.events, prev?.events ?? null))}
      ${card('Hours saved', hours(totals.hours_saved), deltaOf(totals.hours_saved, prev?.hours_saved ?? null))}
      ${card('Cost saved', fmt(totals.cost_saved), deltaOf(totals.cost_saved, prev?.cost_saved ?? null))}
      ${card('Agent cost', fmt(totals.agent_cost), deltaOf(totals.agent_cost, prev?.agent_cost ?? null, false))}
      ${card('Net saved', fmt(totals.net_saved), deltaOf(totals.net_saved, prev?.net_saved ?? null))}
      ${card(
        'ROI',
        roi(totals.cost_saved, totals.agent_cost),
        curRoi !== null && prevRoi !== null ? deltaOf(curRoi, prevRoi) : '',
      )}
    </dl>`;

    const chart =
      points.length === 0
        ? html`<p class="muted">No events in this period.</p>`
        : html`${lineChart({
              labels: bucketLabels(points.map((r) => r.group[bucket] ?? '')),
              series: [
                { name: 'Cost saved', className: 's-saved', values: points.map((r) => r.cost_saved) },
                { name: 'Agent cost', className: 's-cost', values: points.map((r) => r.agent_cost) },
              ],
              formatValue: fmt,
              formatCompact: (n) => moneyCompact(n, currency),
              partial: partialEnds(
                points.map((r) => r.group[bucket] ?? ''),
                bucket,
                series.meta.range,
              ),
              title: `Cost saved and agent cost by ${bucket}, ${PERIOD_LABELS[period].toLowerCase()}`,
              tableId: 'trend-table',
            })}
            <details>
              <summary>Chart as a table</summary>
              <div class="table-wrap">
                <table id="trend-table">
                  <thead>
                    <tr>
                      <th scope="col">${bucket === 'day' ? 'Day' : 'Week of'}</th>
                      <th scope="col" class="num">Cost saved</th>
                      <th scope="col" class="num">Agent cost</th>
                      <th scope="col" class="num">Net saved</th>
                    </tr>
                  </thead>
                  <tbody>
                    ${points.map(
                      (r) =>
                        html`<tr>
                          <td>
                            ${r.group[bucket]}
                            ${isPartialBucket(r.group[bucket] ?? '', bucket, series.meta.range) ? html`<span class="muted">(partial)</span>` : ''}
                          </td>
                          <td class="num">${fmt(r.cost_saved)}</td>
                          <td class="num">${fmt(r.agent_cost)}</td>
                          <td class="num">${fmt(r.net_saved)}</td>
                        </tr>`,
                    )}
                  </tbody>
                </table>
              </div>
            </details>`;

    // Each closed month the period meets: when it closed and how far live has moved (periods.ts).
    const closedMonths = await closedPeriodBanner(ctx, series.meta.range);
    const body = html`${banners} ${usage.lifetime_events === 0 ? firstEventHelp(origin(request)) : ''}
      <div class="toolbar">${picker}</div>
      <p class="muted period-note">
        ${PERIOD_LABELS[period]}: <span class="nowrap">${series.meta.range.from.slice(0, 10)}</span> to
        <span class="nowrap">${series.meta.range.to.slice(0, 10)}</span> (UTC)
      </p>
      ${closedMonths} ${cards} ${planning.body}
      <section class="panel">
        <h2>Cost saved and agent cost</h2>
        ${chart}
      </section>
      <h2>Top 5 by net saved</h2>
      <div class="grid3">
        ${topTable('Top agents', 'Agent', (r) => r.group.agent_id ?? none, agents.rows, currency, 'No agents in this period.')}
        ${topTable('Top task types', 'Task type', (r) => names.cell(r.group.task_type ?? null), taskTypes.rows, currency, 'No task types in this period.')}
        ${topTable('Top clients', 'Client', (r) => r.group.client_id ?? none, clients.rows, currency, 'No clients in this period.')}
      </div>`;
    return sendPage(request, reply, { title: 'Overview', section: 'Overview', body });
  });
}

function origin(request: { protocol: string; host: string }): string {
  return `${request.protocol}://${request.host}`;
}
