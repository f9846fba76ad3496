import type { OrgCtx } from '../../context.js';
import { BAND_SENTENCE, buildForecast, dayText, methodSentence } from '../../forecast/forecast.js';
import type { Figures } from '../../forecast/figures.js';
import type { Band } from '../../forecast/method.js';
import { fromMicros } from '../../money.js';
import type { Metric, ReportInput } from '../../reports/params.js';
import { bucketLabels, compact, count, hours, money, moneyCompact } from '../format.js';
import { html, type SafeHtml } from '../html.js';
import { monthChart } from './forecast-chart.js';

function metricOf(f: Figures | Band, metric: Metric): number {
  switch (metric) {
    case 'events':
      return f.events;
    case 'hours_saved':
      return fromMicros(f.hours);
    case 'cost_saved':
      return fromMicros(f.cost);
    case 'agent_cost':
      return fromMicros(f.agentCost);
    case 'net_saved':
      return fromMicros('net' in f ? f.net : f.cost - f.agentCost);
  }
}

/**
 * Under a report by day: this month's days of the report's metric (with its filters), actual,
 * then forecast for each day left (the forecast of GET /v1/reports/forecast). Empty for other
 * reports.
 */
export async function reportForecast(ctx: OrgCtx, input: ReportInput, label: string): Promise<SafeHtml> {
  if (input.groupBy.length !== 1 || input.groupBy[0] !== 'day') return html``;
  const f = await buildForecast({ ctx, filters: input.filters });
  const metric = input.sort;
  const fmt =
    metric === 'events'
      ? count
      : metric === 'hours_saved'
        ? hours
        : (n: number) => money(n, ctx.org.currency);
  const days = f.monthEnd - f.monthStart;
  const actual: Array<number | null> = Array.from({ length: days }, () => null);
  const forecast = [...actual];
  const low = [...actual];
  const high = [...actual];
  for (const a of f.actual) if (a.day < f.today) actual[a.day - f.monthStart] = metricOf(a.figures, metric);
  const todayActual = f.actual.find((a) => a.day === f.today);
  for (const r of f.rest) {
    const i = r.day - f.monthStart;
    // Today: what happened so far plus its rest.
    const sofar = r.day === f.today && todayActual ? todayActual.figures : null;
    const plus = (v: number) => (sofar === null ? v : v + metricOf(sofar, metric));
    forecast[i] = plus(metricOf(r.figures, metric));
    low[i] = plus(metricOf(r.low, metric));
    high[i] = plus(metricOf(r.high, metric));
  }
  // The projection starts where the days that happened end, so the two lines join.
  const before = f.today - f.monthStart - 1;
  const last = before >= 0 ? (actual[before] ?? null) : null;
  if (last !== null) forecast[before] = low[before] = high[before] = last;
  const month = dayText(f.monthStart).slice(0, 7);
  return html`<section class="panel" aria-labelledby="report-forecast-title">
    <h2 id="report-forecast-title">
      ${label} by day in ${month}, with the forecast for the rest of the month
    </h2>
    ${monthChart({
      labels: bucketLabels(Array.from({ length: days }, (_, i) => dayText(f.monthStart + i))),
      series: [{ name: label, className: 's-saved', actual, forecast, low, high }],
      formatValue: fmt,
      formatCompact:
        metric === 'events' || metric === 'hours_saved'
          ? compact
          : (n: number) => moneyCompact(n, ctx.org.currency),
      wholeNumbers: metric === 'events',
      title: `${label} by day in ${month}: actual, then forecast`,
      tableId: 'report-forecast-table',
    })}
    <p class="muted method"><strong>Method:</strong> ${methodSentence(f)} ${BAND_SENTENCE}</p>
    <details>
      <summary>Forecast as a table</summary>
      <div class="table-wrap">
        <table id="report-forecast-table">
          <thead>
            <tr>
              <th scope="col">Day</th>
              <th scope="col" class="num">${label}</th>
              <th scope="col" class="num">Low</th>
              <th scope="col" class="num">High</th>
            </tr>
          </thead>
          <tbody>
            ${Array.from({ length: days }, (_, i) => {
              const p = forecast[i] ?? null;
              const shown = actual[i] ?? p;
              return html`<tr>
                <td>${dayText(f.monthStart + i)}${p === null ? '' : ' (forecast)'}</td>
                <td class="num">${shown === null ? '—' : fmt(shown)}</td>
                <td class="num">${low[i] === null ? '' : fmt(low[i] ?? 0)}</td>
                <td class="num">${high[i] === null ? '' : fmt(high[i] ?? 0)}</td>
              </tr>`;
            })}
          </tbody>
        </table>
      </div>
    </details>
  </section>`;
}
