import type { OrgCtx } from '../context.js';
import { readDb, type DbOrTrx } from '../storage/db.js';
import { projectedOverageEur } from './overage.js';
import { inSnapshot } from '../storage/snapshot.js';
import { usageCounts, usageMonth } from './usage-counter.js';

/**
 * Usage state of the organisation (spec §2.5, DESIGN §6), by time of receipt: the counts folded
 * up to the watermark plus the tail after it, in one snapshot (DESIGN §11).
 */
export async function getUsage({ ctx }: { ctx: OrgCtx }) {
  const now = ctx.clock.now();
  const month = usageMonth(now);
  const { month: thisMonth, lifetime } = await inSnapshot(readDb(ctx), ctx.engine, (db: DbOrTrx, fold) =>
    usageCounts(db, ctx.org.id, month, { watermark: fold.watermark }),
  );
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
