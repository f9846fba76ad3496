import type { OrgCtx } from '../context.js';
import { projectedOverageEur } from './overage.js';
import { usageMonth } from './usage-counter.js';

/** Usage state of the organisation (spec §2.5, DESIGN §6), from the receipt-time counters. */
export async function getUsage({ ctx }: { ctx: OrgCtx }) {
  const now = ctx.clock.now();
  const month = usageMonth(now);
  const rows = await ctx.db
    .selectFrom('usage_monthly')
    .select(['month', 'events'])
    .where('org_id', '=', ctx.org.id)
    .execute();
  // A month may span several rows (shards): sum them.
  const thisMonth = rows.filter((r) => r.month === month).reduce((sum, r) => sum + Number(r.events), 0);
  const lifetime = rows.reduce((sum, r) => sum + Number(r.events), 0);
  const plan = ctx.config.plans[ctx.org.plan];
  const included = plan.included_events_per_month;
  return {
    plan: ctx.org.plan,
    currency: ctx.org.currency,
    month,
    events_this_month: thisMonth,
    events_included_in_plan: included,
    overage_events: Math.max(0, thisMonth - included),
    lifetime_events: lifetime,
    projected_overage_eur: projectedOverageEur(plan, thisMonth, now),
  };
}
