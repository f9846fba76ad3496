import type { OrgCtx } from '../context.js';
import { fromMicros } from '../money.js';
import type { Figures } from './figures.js';
import { monthRange } from './months.js';

/** One entry of what changed a closed month since its statement, beside the late events. */
export interface AdjustmentEntry extends Figures {
  kind: 'adjustment';
  id: string;
  /** When the adjustment was recorded (ISO 8601). */
  at: string;
  event_id: string;
  agent_id: string;
  task_type: string;
  client_id: string | null;
  /** What caused it: a review or a restatement. */
  cause: string;
  /** The review's or the restatement's id. */
  cause_id: string;
}

const num = (value: unknown) => Number(value ?? 0);

/**
 * The adjustments (src/ledger/) recorded after `closedAt` to events of `month`: reviews and
 * restatements, signed deltas with `events` 0. The first `limit`, oldest first, are listed; the
 * sums cover them all. An entry recorded at or before the closing is in the statement already.
 */
export async function adjustmentsSince(
  ctx: OrgCtx,
  org: string,
  month: string,
  closedAt: number,
  limit = 1000,
): Promise<{ entries: AdjustmentEntry[]; total: Figures; truncated: boolean }> {
  const range = monthRange(month);
  const base = ctx.db
    .selectFrom('adjustments')
    .where('org_id', '=', org)
    .where('occurred_at', '>=', range.from)
    .where('occurred_at', '<', range.to)
    .where('created_at', '>', closedAt);
  const sums = await base
    .select((eb) => [
      eb.fn.sum<number>('hours_saved_micros').as('hours'),
      eb.fn.sum<number>('cost_saved_micros').as('cost'),
      eb.fn.sum<number>('agent_cost_micros').as('agent'),
      eb.fn.sum<number>('review_hours_micros').as('review_hours'),
      eb.fn.sum<number>('review_cost_micros').as('review_cost'),
    ])
    .executeTakeFirst();
  const rows = await base
    .selectAll()
    .orderBy('created_at')
    .orderBy('id')
    .limit(limit + 1)
    .execute();
  const figures = (f: {
    hours: unknown;
    cost: unknown;
    agent: unknown;
    rh: unknown;
    rc: unknown;
  }): Figures => ({
    events: 0,
    hours_saved: fromMicros(num(f.hours)),
    cost_saved: fromMicros(num(f.cost)),
    agent_cost: fromMicros(num(f.agent)),
    net_saved: fromMicros(num(f.cost) - num(f.agent)),
    review_hours: fromMicros(num(f.rh)),
    review_cost: fromMicros(num(f.rc)),
  });
  return {
    total: figures({
      hours: sums?.hours,
      cost: sums?.cost,
      agent: sums?.agent,
      rh: sums?.review_hours,
      rc: sums?.review_cost,
    }),
    entries: rows.slice(0, limit).map((r) => ({
      kind: 'adjustment',
      id: r.id,
      at: new Date(Number(r.created_at)).toISOString(),
      event_id: r.event_id,
      agent_id: r.agent_id,
      task_type: r.task_type,
      client_id: r.client_id,
      cause: r.cause,
      cause_id: r.cause_id,
      ...figures({
        hours: r.hours_saved_micros,
        cost: r.cost_saved_micros,
        agent: r.agent_cost_micros,
        rh: r.review_hours_micros,
        rc: r.review_cost_micros,
      }),
    })),
    truncated: rows.length > limit,
  };
}
