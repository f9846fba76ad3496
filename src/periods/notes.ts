import type { OrgCtx } from '../context.js';
import { buildReport } from '../reports/report.js';
import { combine, figuresOf, ZERO, type Figures } from './figures.js';
import { monthRange, monthsBetween } from './months.js';
import { closedStatements } from './periods.js';

/** A closed month beside a report: its statement's totals, the live totals and the difference. */
export interface ClosedPeriodNote {
  month: string;
  closed_at: string;
  statement_id: string;
  statement: Figures;
  live: Figures;
  difference: Figures;
}

/**
 * The closed months that the window [from, to) meets, oldest first, each with the whole month's
 * totals (whatever the report's filters and window) as frozen and as they are now. One read of
 * the periods; the live totals only when a month is closed, in one report by month.
 */
export async function closedPeriodNotes(
  ctx: OrgCtx,
  window: { from: number; to: number },
): Promise<ClosedPeriodNote[]> {
  const statements = await closedStatements(ctx, monthsBetween(window.from, window.to));
  if (statements.length === 0) return [];
  const first = monthRange(statements[0]?.month ?? '').from;
  const last = monthRange(statements[statements.length - 1]?.month ?? '').to;
  const live = await buildReport({
    ctx,
    input: { period: 'all', groupBy: ['month'], sort: 'hours_saved', top: null, filters: { metadata: [] } },
    options: { range: { from: first, to: last } },
  });
  const byMonth = new Map(live.rows.map((row) => [row.group.month, row]));
  return statements.map((s) => {
    const row = byMonth.get(s.month);
    const now: Figures = row ? figuresOf(row) : { ...ZERO };
    return {
      month: s.month,
      closed_at: s.closed_at,
      statement_id: s.id,
      statement: s.totals,
      live: now,
      difference: combine(now, s.totals, -1),
    };
  });
}

/** A report JSON with `closed_periods` added when its window meets a closed month. */
export async function withClosedPeriods<R extends { meta: { range: { from: string; to: string } } }>(
  ctx: OrgCtx,
  report: R,
): Promise<R & { closed_periods?: ClosedPeriodNote[] }> {
  const notes = await closedPeriodNotes(ctx, {
    from: Date.parse(report.meta.range.from),
    to: Date.parse(report.meta.range.to) + 1,
  });
  return notes.length === 0 ? report : { ...report, closed_periods: notes };
}
