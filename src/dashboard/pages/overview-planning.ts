import { listBudgets } from '../../budgets/budgets.js';
import { budgetStatuses, percentUsed } from '../../budgets/status.js';
import type { OrgCtx } from '../../context.js';
import { BAND_SENTENCE, buildForecast, dayText, methodSentence } from '../../forecast/forecast.js';
import type { Figures } from '../../forecast/figures.js';
import type { Band, MonthForecast } from '../../forecast/method.js';
import { fromMicros } from '../../money.js';
import { buildPayback, fteFreed, paybackSentence, roiPercent } from '../../payback/payback.js';
import type { Period } from '../../reports/params.js';
import { bucketLabels, count, hours, money, moneyCompact } from '../format.js';
import { html, type SafeHtml } from '../html.js';
import { monthChart } from './forecast-chart.js';
import { PERIOD_LABELS } from './figures.js';

const percentFormat = new Intl.NumberFormat('en-US', { minimumFractionDigits: 1, maximumFractionDigits: 1 });

type Key = 'cost' | 'agentCost' | 'net';

const valueOf = (f: Figures | Band, key: Key) =>
  key === 'net' ? ('net' in f ? f.net : f.cost - f.agentCost) : f[key];
const pointOf = (f: Figures, key: Key) => (key === 'net' ? f.cost - f.agentCost : f[key]);

/**
 * A month's running totals of one figure, in currency units: what happened up to now, then the
 * projection (its first point is now), with its band.
 */
export function runningTotals(f: MonthForecast, key: Key) {
  const days = f.monthEnd - f.monthStart;
  const actual: Array<number | null> = Array.from({ length: days }, () => null);
  const forecast = [...actual];
  const low = [...actual];
  const high = [...actual];
  let sum = 0;
  for (const a of f.actual) {
    sum += pointOf(a.figures, key);
    actual[a.day - f.monthStart] = fromMicros(sum);
  }
  const todayIndex = f.today - f.monthStart;
  forecast[todayIndex] = low[todayIndex] = high[todayIndex] = fromMicros(sum);
  let point = sum;
  let lo = sum;
  let hi = sum;
  f.rest.forEach((r, i) => {
    point += pointOf(r.figures, key);
    lo += valueOf(r.low, key);
    hi += valueOf(r.high, key);
    // Each day left's figure is in by the end of that day, drawn at the next day's point.
    const index = todayIndex + i + 1;
    if (index < days) {
      forecast[index] = fromMicros(point);
      low[index] = fromMicros(lo);
      high[index] = fromMicros(hi);
    }
  });
  const last = days - 1;
  forecast[last] = fromMicros(point);
  low[last] = fromMicros(lo);
  high[last] = fromMicros(hi);
  return { actual, forecast, low, high };
}

function card(label: string, value: string, note: SafeHtml | string): SafeHtml {
  return html`<div class="card">
    <dt>${label}</dt>
    <dd class="figure">${value}</dd>
    <dd class="note muted">${note}</dd>
  </div>`;
}

function forecastSection(f: MonthForecast, currency: string): SafeHtml {
  const fmt = (micros: number) => money(fromMicros(micros), currency);
  const band = (low: number, high: number) => `between ${fmt(low)} and ${fmt(high)}`;
  const month = dayText(f.monthStart).slice(0, 7);
  const labels = bucketLabels(
    Array.from({ length: f.monthEnd - f.monthStart }, (_, i) => dayText(f.monthStart + i)),
  );
  const saved = runningTotals(f, 'cost');
  const spent = runningTotals(f, 'agentCost');
  const table = html`<details>
    <summary>Forecast as a table</summary>
    <div class="table-wrap">
      <table id="forecast-table">
        <thead>
          <tr>
            <th scope="col">Day</th>
            <th scope="col">Kind</th>
            <th scope="col" class="num">Cost saved</th>
            <th scope="col" class="num">Agent cost</th>
            <th scope="col" class="num">Net saved</th>
          </tr>
        </thead>
        <tbody>
          ${f.actual.map(
            (a) =>
              html`<tr>
                <td>${dayText(a.day)}</td>
                <td>${a.day === f.today ? 'so far' : 'actual'}</td>
                <td class="num">${fmt(a.figures.cost)}</td>
                <td class="num">${fmt(a.figures.agentCost)}</td>
                <td class="num">${fmt(a.figures.cost - a.figures.agentCost)}</td>
              </tr>`,
          )}
          ${f.rest.map(
            (r) =>
              html`<tr>
                <td>${dayText(r.day)}</td>
                <td>${r.day === f.today ? 'forecast, rest of the day' : 'forecast'}</td>
                <td class="num">${fmt(r.figures.cost)}</td>
                <td class="num">${fmt(r.figures.agentCost)}</td>
                <td class="num">${fmt(r.figures.cost - r.figures.agentCost)}</td>
              </tr>`,
          )}
        </tbody>
      </table>
    </div>
  </details>`;
  return html`<section class="panel" aria-labelledby="forecast-title">
    <h2 id="forecast-title">Forecast for ${month}</h2>
    <dl class="cards">
      ${card('Events at month end', count(f.forecast.events), `${count(f.monthToDate.events)} so far`)}
      ${card('Cost saved at month end', fmt(f.forecast.cost), band(f.low.cost, f.high.cost))}
      ${card('Agent cost at month end', fmt(f.forecast.agentCost), band(f.low.agentCost, f.high.agentCost))}
      ${card('Net saved at month end', fmt(f.forecast.cost - f.forecast.agentCost), band(f.low.net, f.high.net))}
    </dl>
    <p class="muted method"><strong>Method:</strong> ${methodSentence(f)} ${BAND_SENTENCE}</p>
    ${monthChart({
      labels,
      series: [
        { name: 'Cost saved', className: 's-saved', ...saved },
        { name: 'Agent cost', className: 's-cost', ...spent },
      ],
      formatValue: (n) => money(n, currency),
      formatCompact: (n) => moneyCompact(n, currency),
      title: `Cost saved and agent cost in ${month}, running totals: actual to now, then forecast`,
      tableId: 'forecast-table',
    })}
    ${table}
  </section>`;
}

/**
 * What the Overview shows of forecasts, payback and budgets (overview.ts calls it on Pro and
 * above): banners for budgets at risk, this month's forecast, and payback and ROI net of fixed
 * costs for the period picked, beside the ROI card (cost saved ÷ agent cost) it complements.
 */
export async function overviewPlanning({ ctx, period }: { ctx: OrgCtx; period: Period }) {
  const currency = ctx.org.currency;
  const fmt = (micros: number) => money(fromMicros(micros), currency);
  const forecast = await buildForecast({ ctx, filters: { metadata: [] } });
  const payback = await buildPayback({ ctx, period });
  const budgets = (await listBudgets({ ctx, limit: 100 })).data;
  const statuses = await budgetStatuses({ ctx, budgets });

  const banners: SafeHtml[] = [];
  budgets.forEach((b, i) => {
    const s = statuses[i];
    if (!s || s.state === 'on_track') return;
    const scope =
      b.scope === 'org' ? 'whole organisation' : `${b.scope.replace('_', ' ')} ${b.scopeValue ?? ''}`;
    const spent = `${fmt(s.spendMicros)} of ${fmt(b.amountMicros)} spent (${percentUsed(s.spendMicros, b.amountMicros)}%)`;
    const when = s.runOut ? dayText(s.runOut.day) : '';
    banners.push(
      html`<p class="banner warn" role="alert">
        <strong>Budget ${s.state === 'exhausted' ? 'used up' : 'at risk'}:</strong> ${b.name} (${scope}):
        ${spent}${s.state === 'exhausted' ? `, reached on ${when}` : `; forecast to run out on ${when}`}.
        <a href="/dashboard/budgets">See budgets</a>
      </p>`,
    );
  });

  const p = payback.period;
  const roi = roiPercent(p.figures, p.fixedCosts);
  const fte = fteFreed(forecast.forecast.hours, payback.fteHoursMicros);
  const lastMonths = payback.months.slice(-12);
  const paybackValue = payback.paybackMonth ?? 'Not in sight';
  const paybackNote =
    payback.status === 'reached'
      ? 'Cumulative net saved after fixed costs positive since'
      : payback.status === 'forecast'
        ? 'Forecast, at this month’s rate'
        : 'Not within 5 years at this month’s rate';
  const paybackSection = html`<section class="panel" aria-labelledby="payback-title">
    <h2 id="payback-title">Payback and ROI net of fixed costs</h2>
    <dl class="cards">
      ${card('ROI net of fixed costs', roi === null ? '—' : `${percentFormat.format(roi)}%`, PERIOD_LABELS[period])}
      ${card('Fixed costs', fmt(p.fixedCosts), PERIOD_LABELS[period])}
      ${card('Net saved after fixed costs', fmt(p.figures.cost - p.figures.agentCost - p.fixedCosts), PERIOD_LABELS[period])}
      ${card('Payback month', paybackValue, paybackNote)}
      ${card(
        'FTE capacity freed',
        fte === null ? '—' : `${fte.toFixed(2)} FTE`,
        `${hours(fromMicros(forecast.forecast.hours))} hours forecast this month ÷ ${hours(fromMicros(payback.fteHoursMicros))} per FTE`,
      )}
    </dl>
    <p class="muted">
      ${paybackSentence(payback, currency, (micros) => fmt(micros))} ROI above (×) is cost saved ÷ agent cost,
      a multiple of what the runs cost; ROI net of fixed costs is (cost saved − agent cost − fixed costs) ÷
      (agent cost + fixed costs), the return on everything spent, monthly fixed costs counted for the share of
      each month in the period.
      <a href="/dashboard/budgets/payback">Fixed costs and FTE hours</a>
    </p>
    ${
      lastMonths.length === 0
        ? ''
        : html`<details>
            <summary>Cumulative net saved after fixed costs, by month</summary>
            <div class="table-wrap">
              <table id="payback-table">
                <thead>
                  <tr>
                    <th scope="col">Month</th>
                    <th scope="col" class="num">Net saved</th>
                    <th scope="col" class="num">Fixed costs</th>
                    <th scope="col" class="num">Cumulative after fixed costs</th>
                    <th scope="col" class="num">FTE freed</th>
                  </tr>
                </thead>
                <tbody>
                  ${lastMonths.map(
                    (m) =>
                      html`<tr>
                        <td>${m.month}${m.complete ? '' : ' (so far)'}</td>
                        <td class="num">${fmt(m.figures.cost - m.figures.agentCost)}</td>
                        <td class="num">${fmt(m.fixedCosts)}</td>
                        <td class="num">${fmt(m.cumulative)}</td>
                        <td class="num">
                          ${fteFreed(m.figures.hours, payback.fteHoursMicros)?.toFixed(2) ?? '—'}
                        </td>
                      </tr>`,
                  )}
                  ${payback.forecastMonths.slice(0, 12).map(
                    (m) =>
                      html`<tr>
                        <td>${m.month} (forecast)</td>
                        <td class="num">${fmt(m.net)}</td>
                        <td class="num">${fmt(m.fixedCosts)}</td>
                        <td class="num">${fmt(m.cumulative)}</td>
                        <td class="num">—</td>
                      </tr>`,
                  )}
                </tbody>
              </table>
            </div>
          </details>`
    }
  </section>`;

  return { banners, body: html`${forecastSection(forecast, currency)} ${paybackSection}` };
}
