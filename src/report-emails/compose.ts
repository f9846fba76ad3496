import { listBudgets } from '../budgets/budgets.js';
import { budgetStatuses, percentUsed, type BudgetState } from '../budgets/status.js';
import type { OrgCtx } from '../context.js';
import { count, hours, money, roi } from '../dashboard/format.js';
import { html, type SafeHtml } from '../dashboard/html.js';
import { figuresOf, sumFigures } from '../forecast/figures.js';
import { dayText } from '../forecast/forecast.js';
import { fromMicros } from '../money.js';
import { csvText } from '../reports/csv.js';
import { buildReport } from '../reports/report.js';
import { periodLabel, type ReportPeriod } from './periods.js';

/** Rows of the attached CSV at most (the largest net saved first); the dashboard exports all. */
export const CSV_MAX_ROWS = 5_000;
const TOP = 5;

const STATE_WORDS: Record<BudgetState, string> = {
  on_track: 'On track',
  at_risk: 'At risk: forecast to run out',
  exhausted: 'Used up',
};

export interface ReportEmail {
  subject: string;
  /** The text and HTML parts, with the recipient's own unsubscribe link. */
  render(unsubscribeUrl: string): { text: string; html: string };
  attachment: { filename: string; contentType: string; content: string };
}

/**
 * The report e-mail of one period (the same for every recipient but the unsubscribe link): the
 * period's figures, the top agents by net saved, the budgets' status and the period's CSV
 * (agent × task type), all from the report verbs. Budgets are shown for the month the period
 * ends in: a monthly report shows the month's final spend; a weekly one this month so far and
 * its forecast.
 */
export async function composeReportEmail({
  ctx,
  period,
}: {
  ctx: OrgCtx;
  period: ReportPeriod;
}): Promise<ReportEmail> {
  const currency = ctx.org.currency;
  const range = { from: period.from, to: period.to };
  const filters = { metadata: [] };
  const agents = await buildReport({
    ctx,
    input: { period: 'all', groupBy: ['agent'], sort: 'net_saved', top: null, filters },
    options: { range },
  });
  const csvRows = await buildReport({
    ctx,
    input: { period: 'all', groupBy: ['agent', 'task_type'], sort: 'net_saved', top: CSV_MAX_ROWS, filters },
    options: { range },
  });
  const totals = sumFigures(agents.rows.map(figuresOf));
  const top = agents.rows.slice(0, TOP);
  const statusAt = period.frequency === 'monthly' ? period.to - 1 : ctx.clock.now().getTime();
  const budgets = (await listBudgets({ ctx, limit: 100 })).data;
  const statuses = await budgetStatuses({
    ctx: { ...ctx, clock: { now: () => new Date(statusAt) } },
    budgets,
  });
  const budgetMonth = dayText(Math.floor(statusAt / 86_400_000)).slice(0, 7);
  const label = periodLabel(period);
  const fmt = (micros: number) => money(fromMicros(micros), currency);
  const net = totals.cost - totals.agentCost;
  const dashboardUrl = `${ctx.config.publicUrl}/dashboard?period=${period.frequency === 'weekly' ? '7d' : '30d'}`;
  const title = `${period.frequency === 'weekly' ? 'Weekly' : 'Monthly'} report, ${label}`;
  const figures: Array<[string, string]> = [
    ['Events', count(totals.events)],
    ['Hours saved', hours(fromMicros(totals.hours))],
    ['Cost saved', fmt(totals.cost)],
    ['Agent cost', fmt(totals.agentCost)],
    ['Net saved', fmt(net)],
    ['ROI (cost saved ÷ agent cost)', roi(fromMicros(totals.cost), fromMicros(totals.agentCost))],
  ];
  const budgetLines = budgets.map((b, i) => {
    const s = statuses[i];
    const scope =
      b.scope === 'org' ? 'Whole organisation' : `${b.scope.replace('_', ' ')}: ${b.scopeValue ?? ''}`;
    return {
      name: b.name,
      scope,
      amount: fmt(b.amountMicros),
      spend: s ? `${fmt(s.spendMicros)} (${percentUsed(s.spendMicros, b.amountMicros)}%)` : '',
      forecast: s ? fmt(s.forecast.forecast.agentCost) : '',
      state: s ? STATE_WORDS[s.state] : '',
    };
  });

  const text = (unsubscribe: string) =>
    [
      `Tally: ${ctx.org.name}`,
      `${title} (UTC)`,
      '',
      ...figures.map(([k, v]) => `${k}: ${v}`),
      '',
      `Top agents by net saved`,
      ...(top.length === 0
        ? ['No events in this period.']
        : top.map(
            (r, i) =>
              `${i + 1}. ${r.group.agent_id ?? ''}: ${count(r.events)} events, ${money(r.net_saved, currency)} net saved`,
          )),
      '',
      `Budgets, ${budgetMonth}`,
      ...(budgetLines.length === 0
        ? ['No budgets set.']
        : budgetLines.map(
            (b) => `- ${b.name} (${b.scope}): ${b.spend} of ${b.amount}; forecast ${b.forecast}; ${b.state}`,
          )),
      '',
      `Open the dashboard: ${dashboardUrl}`,
      `The period's figures by agent and task type are attached as CSV.`,
      '',
      `Unsubscribe: ${unsubscribe}`,
    ].join('\n');

  const cell = 'padding:8px 12px;border-bottom:1px solid #dde2e8;font-size:14px;';
  const num = `${cell}text-align:right;white-space:nowrap;`;
  const head =
    'padding:8px 12px;border-bottom:2px solid #dde2e8;font-size:12px;color:#5b6675;text-align:left;';
  const section = (heading: string, body: SafeHtml) =>
    html`<tr>
      <td style="padding:20px 24px 0 24px;">
        <h2 style="margin:0 0 8px 0;font-size:16px;color:#1b2330;">${heading}</h2>
        ${body}
      </td>
    </tr>`;
  const table = (headers: string[], rows: string[][], numeric: number[]) =>
    html`<table
      role="presentation"
      width="100%"
      cellpadding="0"
      cellspacing="0"
      style="border-collapse:collapse;"
    >
      <tr>
        ${headers.map((h, i) => html`<th style="${numeric.includes(i) ? `${head}text-align:right;` : head}">${h}</th>`)}
      </tr>
      ${rows.map(
        (row) =>
          html`<tr>
            ${row.map((v, i) => html`<td style="${numeric.includes(i) ? num : cell}">${v}</td>`)}
          </tr>`,
      )}
    </table>`;
  const htmlPart = (unsubscribe: string) =>
    `<!doctype html>\n${
      html`<html lang="en">
        <head>
          <meta charset="utf-8" />
          <meta name="viewport" content="width=device-width, initial-scale=1" />
          <title>${title}</title>
        </head>
        <body
          style="margin:0;padding:0;background:#f6f7f9;font-family:Arial,Helvetica,sans-serif;color:#1b2330;"
        >
          <table role="presentation" width="100%" cellpadding="0" cellspacing="0" style="background:#f6f7f9;">
            <tr>
              <td align="center" style="padding:24px 8px;">
                <table
                  role="presentation"
                  width="600"
                  cellpadding="0"
                  cellspacing="0"
                  style="width:100%;max-width:600px;background:#ffffff;border:1px solid #dde2e8;border-radius:8px;"
                >
                  <tr>
                    <td style="padding:24px 24px 0 24px;">
                      <p style="margin:0;font-size:18px;font-weight:bold;color:#1f4e79;">Tally</p>
                      <h1 style="margin:8px 0 0 0;font-size:20px;">${ctx.org.name}</h1>
                      <p style="margin:4px 0 0 0;font-size:14px;color:#5b6675;">${title} (UTC)</p>
                    </td>
                  </tr>
                  ${section('The period', table(['Figure', 'Value'], figures, [1]))}
                  ${section(
                    'Top agents by net saved',
                    top.length === 0
                      ? html`<p style="font-size:14px;color:#5b6675;">No events in this period.</p>`
                      : table(
                          ['Agent', 'Events', 'Net saved'],
                          top.map((r) => [
                            r.group.agent_id ?? '(none)',
                            count(r.events),
                            money(r.net_saved, currency),
                          ]),
                          [1, 2],
                        ),
                  )}
                  ${section(
                    `Budgets, ${budgetMonth}`,
                    budgetLines.length === 0
                      ? html`<p style="font-size:14px;color:#5b6675;">No budgets set.</p>`
                      : table(
                          ['Budget', 'Spend', 'Forecast', 'Status'],
                          budgetLines.map((b) => [
                            `${b.name} (${b.scope}, ${b.amount})`,
                            b.spend,
                            b.forecast,
                            b.state,
                          ]),
                          [1, 2],
                        ),
                  )}
                  <tr>
                    <td style="padding:24px;">
                      <a
                        href="${dashboardUrl}"
                        style="display:inline-block;background:#1f4e79;color:#ffffff;text-decoration:none;padding:10px 18px;border-radius:6px;font-weight:bold;font-size:14px;"
                        >Open the dashboard</a
                      >
                      <p style="margin:16px 0 0 0;font-size:13px;color:#5b6675;">
                        The period's figures by agent and task type are attached as CSV.
                      </p>
                    </td>
                  </tr>
                </table>
                <p style="margin:16px 0 0 0;font-size:12px;color:#5b6675;">
                  You receive this ${period.frequency} report of ${ctx.org.name} from Tally.
                  <a href="${unsubscribe}" style="color:#5b6675;">Unsubscribe</a>
                </p>
              </td>
            </tr>
          </table>
        </body>
      </html>`.text
    }`;

  return {
    subject: `[Tally] ${title}: ${money(fromMicros(net), currency)} net saved`,
    render: (unsubscribe) => ({ text: text(unsubscribe), html: htmlPart(unsubscribe) }),
    attachment: {
      filename: `tally-report-${period.frequency}-${period.key}.csv`,
      contentType: 'text/csv; charset=utf-8',
      content: await csvText(['agent', 'task_type'], csvRows.rows),
    },
  };
}
