import { requireRole } from '../accounts/authorize.js';
import type { OrgCtx } from '../context.js';
import { notFound } from '../errors.js';
import { ulid } from '../ids.js';
import type { DbOrTrx } from '../storage/db.js';
import { pageOf } from '../storage/pagination.js';
import type { RunDraft } from './draft.js';
import { loadRules } from './rule-store.js';
import type { RunFacts } from './rules.js';
import { emptyAttributes } from './spans.js';
import { otlpDb, type OtlpTables } from './tables.js';
import { trackRuns } from './track-runs.js';

/** An unresolved run as the API lists it. */
export interface UnresolvedRun {
  id: string;
  trace_id: string;
  span_id: string;
  agent_id: string;
  agent_name: string | null;
  workflow_name: string | null;
  span_name: string;
  service_name: string | null;
  /** The task type named by the span's `tally.task_type`, when it was one Tally does not know. */
  task_type: string | null;
  reason: string;
  occurred_at: string;
  received_at: string;
}

type Row = OtlpTables['otlp_unresolved_runs'];

/** Facts as stored: what rules match on, and the span's own task type. */
interface StoredFacts extends RunFacts {
  task_type: string | null;
}

function view(row: Row): UnresolvedRun {
  const facts = JSON.parse(row.facts) as StoredFacts;
  const service = facts.resource['service.name'];
  return {
    id: row.id,
    trace_id: row.trace_id,
    span_id: row.span_id,
    agent_id: row.agent_id,
    agent_name: facts.agent_name,
    workflow_name: facts.workflow_name,
    span_name: facts.span_name,
    service_name: typeof service === 'string' ? service : null,
    task_type: facts.task_type,
    reason: row.reason,
    occurred_at: new Date(Number(row.occurred_at)).toISOString(),
    received_at: new Date(Number(row.received_at)).toISOString(),
  };
}

function draftOf(row: Row): RunDraft {
  const facts = JSON.parse(row.facts) as StoredFacts;
  const { task_type: taskType, ...rest } = facts;
  return {
    traceId: row.trace_id,
    spanId: row.span_id,
    spanCount: 0,
    facts: { ...rest, resource: Object.assign(emptyAttributes(), rest.resource) },
    taskType,
    input: JSON.parse(row.input) as RunDraft['input'],
  };
}

/** Keeps runs whose task type could not be resolved (a run sent again is kept once). */
export async function recordUnresolved(
  db: DbOrTrx,
  orgId: string,
  receivedAt: Date,
  runs: { draft: RunDraft; reason: string }[],
): Promise<void> {
  if (runs.length === 0) return;
  await otlpDb(db)
    .insertInto('otlp_unresolved_runs')
    .values(
      runs.map(({ draft, reason }) => ({
        id: `run_${ulid(receivedAt)}`,
        org_id: orgId,
        trace_id: draft.traceId,
        span_id: draft.spanId,
        agent_id: draft.input.agent_id,
        reason,
        facts: JSON.stringify({ ...draft.facts, task_type: draft.taskType } satisfies StoredFacts),
        input: JSON.stringify(draft.input),
        occurred_at: new Date(draft.input.occurred_at ?? receivedAt).getTime(),
        received_at: receivedAt.getTime(),
      })),
    )
    .onConflict((oc) => oc.columns(['org_id', 'trace_id', 'span_id']).doNothing())
    .execute();
}

/** Newest first. */
export async function listUnresolvedRuns({
  ctx,
  limit,
  cursor,
}: {
  ctx: OrgCtx;
  limit: number;
  cursor?: string;
}): Promise<{ data: UnresolvedRun[]; next_cursor: string | null }> {
  let query = otlpDb(ctx.db).selectFrom('otlp_unresolved_runs').selectAll().where('org_id', '=', ctx.org.id);
  if (cursor !== undefined) query = query.where('id', '<', cursor);
  const rows = await query
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  const { page, next_cursor } = pageOf(rows, limit);
  return { data: page.map(view), next_cursor };
}

export async function countUnresolvedRuns(db: DbOrTrx, orgId?: string): Promise<number> {
  let query = otlpDb(db)
    .selectFrom('otlp_unresolved_runs')
    .select((eb) => eb.fn.countAll<number>().as('n'));
  if (orgId !== undefined) query = query.where('org_id', '=', orgId);
  const row = await query.executeTakeFirst();
  return Number(row?.n ?? 0);
}

export async function dismissUnresolvedRun({ ctx, id }: { ctx: OrgCtx; id: string }): Promise<UnresolvedRun> {
  requireRole(ctx, 'admin');
  const row = await otlpDb(ctx.db)
    .selectFrom('otlp_unresolved_runs')
    .selectAll()
    .where('org_id', '=', ctx.org.id)
    .where('id', '=', id)
    .executeTakeFirst();
  if (!row) throw notFound(`Unresolved run ${id}`);
  await otlpDb(ctx.db)
    .deleteFrom('otlp_unresolved_runs')
    .where('org_id', '=', ctx.org.id)
    .where('id', '=', id)
    .execute();
  return view(row);
}

/** Unresolved runs tried per call (oldest first); the rest wait for the next. */
const RETRY_LIMIT = 1000;

/**
 * Tracks the unresolved runs the current rules and catalogue resolve (after a rule is added, or
 * a custom task type created); each one tracked leaves the list. Returns how many were tracked.
 */
export async function retryUnresolvedRuns({ ctx }: { ctx: OrgCtx }): Promise<number> {
  requireRole(ctx, 'admin');
  const rows = await otlpDb(ctx.db)
    .selectFrom('otlp_unresolved_runs')
    .selectAll()
    .where('org_id', '=', ctx.org.id)
    .orderBy('id', 'asc')
    .limit(RETRY_LIMIT)
    .execute();
  if (rows.length === 0) return 0;
  const rules = await loadRules(ctx.db, ctx.org.id);
  const outcomes = await trackRuns({ ctx, drafts: rows.map(draftOf), rules });
  let tracked = 0;
  for (const [i, row] of rows.entries()) {
    const outcome = outcomes[i];
    if (outcome?.kind === 'tracked') {
      tracked++;
      await otlpDb(ctx.db).deleteFrom('otlp_unresolved_runs').where('id', '=', row.id).execute();
    } else if (outcome) {
      const reason = outcome.kind === 'unresolved' ? outcome.reason : outcome.message;
      if (reason !== row.reason)
        await otlpDb(ctx.db)
          .updateTable('otlp_unresolved_runs')
          .set({ reason })
          .where('id', '=', row.id)
          .execute();
    }
  }
  return tracked;
}

/** Runs too old to be tracked any more (past the occurred_at window) leave the list. */
export async function forgetUnresolvedBefore(db: DbOrTrx, occurredBefore: number): Promise<void> {
  await otlpDb(db).deleteFrom('otlp_unresolved_runs').where('occurred_at', '<', occurredBefore).execute();
}
