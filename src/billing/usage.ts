import type { OrgCtx } from '../context.js';
import type { DbOrTrx } from '../storage/db.js';
import { projectedOverageEur } from './overage.js';
import { monthEvents, usageMonth } from './usage-counter.js';

/** Every event ever counted for the organisation, over all months and shards. */
async function lifetimeEvents(db: DbOrTrx, orgId: string): Promise<number> {
  const row = await db
    .selectFrom('usage_monthly')
    .select((eb) => eb.fn.sum<number>('events').as('events'))
    .where('org_id', '=', orgId)
    .executeTakeFirst();
  return Number(row?.events ?? 0);
}

/** Usage state of the organisation (spec §2.5, DESIGN §6), from the receipt-time counters. */
export async function getUsage({ ctx }: { ctx: OrgCtx }) {
  const now = ctx.clock.now();
  const month = usageMonth(now);
  const [thisMonth, lifetime] = await Promise.all([
    monthEvents(ctx.db, ctx.org.id, month),
    lifetimeEvents(ctx.db, ctx.org.id),
  ]);
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
