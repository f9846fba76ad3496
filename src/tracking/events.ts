import type { OrgCtx } from '../context.js';
import { notFound } from '../errors.js';
import { fromMicros } from '../money.js';
import type { EventRow } from '../storage/schema.js';
import { pageOf } from '../storage/pagination.js';

/**
 * The stored event as the API shows it (spec §2.2 plus DESIGN §4's extra fields). `metadata`, when
 * the caller holds it already, is `row.metadata` parsed.
 */
export function eventView(row: EventRow, metadata?: Record<string, unknown> | null) {
  const agentCostMicros = row.agent_cost_micros === null ? null : Number(row.agent_cost_micros);
  return {
    event_id: row.id,
    agent_id: row.agent_id,
    task_type: row.task_type,
    outcome: row.outcome,
    resolved_baseline_minutes: row.resolved_baseline_minutes,
    resolved_baseline_source: row.resolved_baseline_source,
    resolved_hourly_rate: fromMicros(Number(row.resolved_hourly_rate_micros)),
    currency: row.currency,
    agent_duration_seconds: row.agent_duration_seconds,
    hours_saved: fromMicros(Number(row.hours_saved_micros)),
    cost_saved: fromMicros(Number(row.cost_saved_micros)),
    agent_cost: agentCostMicros === null ? null : fromMicros(agentCostMicros),
    resolved_cost_source: row.resolved_cost_source,
    net_saved: fromMicros(Number(row.cost_saved_micros) - (agentCostMicros ?? 0)),
    occurred_at: new Date(Number(row.occurred_at)).toISOString(),
    model: row.model,
    tokens_in: row.tokens_in === null ? null : Number(row.tokens_in),
    tokens_out: row.tokens_out === null ? null : Number(row.tokens_out),
    metadata:
      metadata !== undefined
        ? metadata
        : row.metadata === null
          ? null
          : (JSON.parse(row.metadata) as Record<string, unknown>),
    received_at: new Date(Number(row.received_at)).toISOString(),
  };
}

export type StoredEvent = ReturnType<typeof eventView>;

export async function getEvent({ ctx, eventId }: { ctx: OrgCtx; eventId: string }): Promise<StoredEvent> {
  const row = await ctx.db
    .selectFrom('events')
    .selectAll()
    .where('org_id', '=', ctx.org.id)
    .where('id', '=', eventId)
    .executeTakeFirst();
  if (!row) throw notFound(`Event ${eventId}`);
  return eventView(row);
}

export interface ListEventsInput {
  agentId?: string;
  taskType?: string;
  /** The dashboard's extra filters (DESIGN §10). */
  clientId?: string;
  outcome?: string;
  /** Events awaiting review: `needs_review` without a review (src/ledger/). */
  awaitingReview?: boolean;
  limit: number;
  cursor?: string;
}

/**
 * Newest first; the cursor is the id of the last event of the previous page. The events have no
 * index by agent, task type, client or outcome (migration 0014): a filtered page walks the
 * organisation's events newest first until it is full. An agent the organisation never tracked
 * (the `agents` table, written with its first event) answers an empty page without that walk.
 */
export async function listEvents({ ctx, input }: { ctx: OrgCtx; input: ListEventsInput }) {
  if (input.agentId !== undefined) {
    const known = await ctx.db
      .selectFrom('agents')
      .select('agent_id')
      .where('org_id', '=', ctx.org.id)
      .where('agent_id', '=', input.agentId)
      .executeTakeFirst();
    if (known === undefined) return { data: [], next_cursor: null };
  }
  let query = ctx.db.selectFrom('events').selectAll().where('org_id', '=', ctx.org.id);
  if (input.agentId !== undefined) query = query.where('agent_id', '=', input.agentId);
  if (input.taskType !== undefined) query = query.where('task_type', '=', input.taskType);
  if (input.clientId !== undefined) query = query.where('client_id', '=', input.clientId);
  if (input.outcome !== undefined) query = query.where('outcome', '=', input.outcome);
  if (input.awaitingReview === true)
    query = query
      .where('outcome', '=', 'needs_review')
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('reviews')
              .select('reviews.id')
              .whereRef('reviews.event_id', '=', 'events.id')
              .where('reviews.org_id', '=', ctx.org.id),
          ),
        ),
      );
  if (input.cursor !== undefined) query = query.where('id', '<', input.cursor);
  const rows = await query
    .orderBy('id', 'desc')
    .limit(input.limit + 1)
    .execute();
  const { page, next_cursor } = pageOf(rows, input.limit);
  return { data: page.map((row) => eventView(row)), next_cursor };
}
