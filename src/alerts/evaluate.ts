import { PostgresAdapter, sql } from 'kysely';
import { isPlanName, planAtLeast } from '../billing/plans.js';
import { monthRange, usageMonth } from '../billing/usage-counter.js';
import { budgetFilters, budgetFromRow, type Budget } from '../budgets/budgets.js';
import { budgetStatuses, reached } from '../budgets/status.js';
import type { OrgCtx, ServiceCtx } from '../context.js';
import { figuresOf, sumFigures } from '../forecast/figures.js';
import { getOrganization, type Organization } from '../orgs/organizations.js';
import { buildReport } from '../reports/report.js';
import { readDb, type DbOrTrx } from '../storage/db.js';
import { inSnapshot } from '../storage/snapshot.js';
import { forecastAlert, thresholdAlert, usageAlert } from './messages.js';
import { raiseAlert, type Alert } from './raise.js';

/**
 * For this many days into a month the month before is evaluated too, so that a threshold
 * crossed just before the month ended, while no worker ran, still goes out after the restart.
 */
export const CATCH_UP_DAYS = 7;
/** Shares of the plan's included events that raise `usage.threshold_crossed`. */
export const USAGE_THRESHOLDS = [80, 100] as const;

const previousMonth = (month: string) => {
  const [from] = monthRange(month);
  return usageMonth(new Date(from - 1));
};

/** The months evaluated at `now`: this one, and the one before during the first CATCH_UP_DAYS. */
export function monthsToEvaluate(now: Date): string[] {
  const month = usageMonth(now);
  return now.getUTCDate() <= CATCH_UP_DAYS ? [month, previousMonth(month)] : [month];
}

const key = (orgId: string, subject: string, month: string, kind: string, threshold: number) =>
  `${orgId} ${subject} ${month} ${kind} ${threshold}`;

const CHUNK = 500;

/** The alerts of `orgIds` already sent for `months`, by key (the ledger's primary key). */
async function sentAlerts(db: DbOrTrx, orgIds: string[], months: string[]): Promise<Set<string>> {
  const sent = new Set<string>();
  for (let i = 0; i < orgIds.length; i += CHUNK) {
    const rows = await db
      .selectFrom('alerts')
      .select(['org_id', 'subject', 'month', 'kind', 'threshold'])
      .where('org_id', 'in', orgIds.slice(i, i + CHUNK))
      .where('month', 'in', months)
      .execute();
    for (const r of rows) sent.add(key(r.org_id, r.subject, r.month, r.kind, Number(r.threshold)));
  }
  return sent;
}

/** Agent spend of each budget in a month that is over, read with the report verb. */
async function monthSpend(ctx: OrgCtx, budget: Budget, month: string): Promise<number> {
  const [from, to] = monthRange(month);
  const report = await buildReport({
    ctx,
    input: { period: 'all', groupBy: ['month'], sort: 'events', top: null, filters: budgetFilters(budget) },
    options: { range: { from, to } },
  });
  return sumFigures(report.rows.map(figuresOf)).agentCost;
}

async function budgetAlertsOf(ctx: OrgCtx, budgets: Budget[], sent: Set<string>, months: string[]) {
  const alerts: Alert[] = [];
  const at = ctx.clock.now();
  const isSent = (subject: string, m: string, kind: string, threshold: number) =>
    sent.has(key(ctx.org.id, subject, m, kind, threshold));
  const dashboardUrl = `${ctx.config.publicUrl}/dashboard/budgets`;
  const [month, previous] = months;
  if (month === undefined) return alerts;
  // A budget that sent every alert of the month needs no forecast.
  const open = budgets.filter(
    (b) =>
      !isSent(b.id, month, 'forecast', 0) || b.thresholds.some((t) => !isSent(b.id, month, 'threshold', t)),
  );
  const statuses = await budgetStatuses({ ctx, budgets: open });
  open.forEach((budget, i) => {
    const status = statuses[i];
    if (status === undefined) return;
    for (const threshold of status.crossed) {
      if (isSent(budget.id, month, 'threshold', threshold)) continue;
      alerts.push(
        thresholdAlert({
          org: ctx.org,
          budget,
          month,
          threshold,
          spendMicros: status.spendMicros,
          status,
          at,
          dashboardUrl,
        }),
      );
    }
    if (
      status.forecast.forecast.agentCost >= budget.amountMicros &&
      !isSent(budget.id, month, 'forecast', 0)
    ) {
      alerts.push(forecastAlert({ org: ctx.org, budget, status, at, dashboardUrl }));
    }
  });
  if (previous !== undefined) {
    const [monthStart] = monthRange(month);
    for (const budget of budgets) {
      // Only months the budget existed in, and only thresholds not sent yet.
      const unsent = budget.thresholds.filter((t) => !isSent(budget.id, previous, 'threshold', t));
      if (budget.createdAt >= monthStart || unsent.length === 0) continue;
      const spendMicros = await monthSpend(ctx, budget, previous);
      for (const threshold of unsent) {
        if (!reached(spendMicros, threshold, budget.amountMicros)) continue;
        alerts.push(
          thresholdAlert({
            org: ctx.org,
            budget,
            month: previous,
            threshold,
            spendMicros,
            status: null,
            at,
            dashboardUrl,
          }),
        );
      }
    }
  }
  return alerts;
}

/**
 * Budget alerts of every organisation on Pro and above: each threshold the month's agent spend
 * reached, and the forecast reaching the amount, raised once (raiseAlert). Spend and forecast
 * are read with the report verbs (exact, the events not folded yet included).
 */
export async function evaluateBudgetAlerts(ctx: ServiceCtx): Promise<string[]> {
  const rows = await ctx.db.selectFrom('budgets').selectAll().orderBy('org_id').orderBy('id').execute();
  const byOrg = new Map<string, Budget[]>();
  for (const row of rows) byOrg.set(row.org_id, [...(byOrg.get(row.org_id) ?? []), budgetFromRow(row)]);
  const months = monthsToEvaluate(ctx.clock.now());
  const sent = await sentAlerts(ctx.db, [...byOrg.keys()], months);
  const raised: string[] = [];
  for (const [orgId, budgets] of byOrg) {
    const org = await getOrganization({ ctx, id: orgId });
    if (!planAtLeast(org.plan, 'pro')) continue;
    const alerts = await budgetAlertsOf({ ...ctx, org, actorKeyId: null }, budgets, sent, months);
    for (const alert of alerts) {
      const id = await raiseAlert(ctx, alert);
      if (id !== null) raised.push(id);
    }
  }
  return raised;
}

/**
 * Each organisation's events of `month` by time of receipt (DESIGN §6), exactly: the counts
 * folded into usage_monthly up to the watermark plus the tail after it, in one snapshot.
 */
async function monthEventsByOrg(ctx: ServiceCtx, month: string): Promise<Map<string, number>> {
  const [from, to] = monthRange(month);
  return inSnapshot(readDb(ctx), ctx.engine, async (db, fold) => {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    const mark = postgres ? sql`${String(fold.watermark)}::xid8` : sql`${fold.watermark}`;
    const folded = await db
      .selectFrom('usage_monthly')
      .select(['org_id', (eb) => eb.fn.sum<number>('events').as('events')])
      .where('month', '=', month)
      .groupBy('org_id')
      .execute();
    const { rows: tail } = await sql<{ org_id: string; events: unknown }>`
      SELECT org_id, COUNT(*) AS events FROM events
      WHERE ingest_seq >= ${mark} AND received_at >= ${from} AND received_at < ${to}
      GROUP BY org_id`.execute(db);
    const counts = new Map<string, number>();
    for (const r of [...folded, ...tail])
      counts.set(r.org_id, (counts.get(r.org_id) ?? 0) + Number(r.events));
    return counts;
  });
}

/** `usage.threshold_crossed` at 80 % and 100 % of the plan's included events, once per organisation and month. */
export async function evaluateUsageAlerts(ctx: ServiceCtx): Promise<string[]> {
  const at = ctx.clock.now();
  const months = monthsToEvaluate(at);
  const raised: string[] = [];
  for (const month of months) {
    const counts = await monthEventsByOrg(ctx, month);
    const lowest = Math.min(...USAGE_THRESHOLDS);
    // Plans first, for every organisation with events: only those near their included events
    // are read in full.
    const orgIds = [...counts.keys()];
    const plans = new Map<string, string>();
    for (let i = 0; i < orgIds.length; i += CHUNK) {
      const rows = await ctx.db
        .selectFrom('organizations')
        .select(['id', 'plan'])
        .where('id', 'in', orgIds.slice(i, i + CHUNK))
        .execute();
      for (const r of rows) plans.set(r.id, r.plan);
    }
    const candidates: Array<{ org: Organization; events: number; included: number }> = [];
    for (const [orgId, events] of counts) {
      const plan = plans.get(orgId);
      if (plan === undefined || !isPlanName(plan)) continue;
      const included = ctx.config.plans[plan].included_events_per_month;
      if (included === 0 || events * 100 < lowest * included) continue;
      candidates.push({ org: await getOrganization({ ctx, id: orgId }), events, included });
    }
    const sent = await sentAlerts(
      ctx.db,
      candidates.map((c) => c.org.id),
      [month],
    );
    for (const { org, events, included } of candidates) {
      for (const threshold of USAGE_THRESHOLDS) {
        if (
          events * 100 < threshold * included ||
          sent.has(key(org.id, 'usage', month, 'threshold', threshold))
        ) {
          continue;
        }
        const id = await raiseAlert(
          ctx,
          usageAlert({
            org,
            month,
            threshold,
            events,
            included,
            at,
            dashboardUrl: `${ctx.config.publicUrl}/dashboard/usage`,
          }),
        );
        if (id !== null) raised.push(id);
      }
    }
  }
  return raised;
}

/** Every alert due now; what the worker's scheduler runs. Returns the messages it wrote. */
export async function evaluateAlerts({ ctx }: { ctx: ServiceCtx }): Promise<string[]> {
  return [...(await evaluateBudgetAlerts(ctx)), ...(await evaluateUsageAlerts(ctx))];
}
