import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { OrgCtx } from '../context.js';
import { AppError } from '../errors.js';
import { newId } from '../ids.js';
import type { DbOrTrx } from '../storage/db.js';
import type { StoredEvent } from '../tracking/events.js';
import type { JobOutcome, TrackJob } from '../tracking/job.js';
import { processBatch } from '../tracking/pipeline.js';
import { TrackBody } from '../tracking/schema.js';
import { trackEvent } from '../tracking/track.js';
import { checkPricedCost, checkTrackInput, type TrackInput } from '../tracking/track-input.js';
import type { RunDraft } from './draft.js';
import { matchClient, matchTaskType, type MappingRule } from './rules.js';

const addFormats = addFormatsModule.default;

// The checks POST /v1/track's schema makes, on the body a run becomes (same ajv options).
const ajv = new Ajv({
  allErrors: false,
  removeAdditional: false,
  useDefaults: true,
  coerceTypes: false,
  strict: false,
});
addFormats(ajv);
const validTrackBody = ajv.compile(TrackBody);

export type RunOutcome =
  | { kind: 'tracked'; replayed: boolean; event: StoredEvent }
  | { kind: 'unresolved'; reason: string }
  | { kind: 'rejected'; message: string };

export const NO_TASK_TYPE =
  'no task type: the span has no tally.task_type and no mapping rule matches (add one in the dashboard, OpenTelemetry)';

/** One key per run, from its trace and task span: an exporter's retry replays the first event. */
export const idempotencyKeyOf = (draft: { traceId: string; spanId: string }) =>
  `otlp:${draft.traceId}:${draft.spanId}`;

/** The track body of a draft with the rules applied, or why it has none. */
export function trackInputOf(
  draft: RunDraft,
  rules: MappingRule[],
): { input: TrackInput } | { unresolved: string } | { rejected: string } {
  const taskType = draft.taskType ?? matchTaskType(rules, draft.facts)?.task_type ?? null;
  if (taskType === null) return { unresolved: NO_TASK_TYPE };
  const metadata = { ...draft.input.metadata };
  if (metadata.client_id === undefined) {
    const client = matchClient(rules, draft.facts);
    if (client !== null) metadata.client_id = client;
  }
  const input: TrackInput = { ...draft.input, task_type: taskType, metadata };
  if (!validTrackBody(input)) {
    const issue = validTrackBody.errors?.[0];
    return {
      rejected: `the run's ${issue?.instancePath.slice(1) || 'body'} ${issue?.message ?? 'is invalid'}`,
    };
  }
  return { input };
}

/**
 * Tracks runs through the tracking pipeline, as POST /v1/track/batch tracks its events (one
 * batcher, the same baselines, pricing, quota and idempotency), each with the key of its trace
 * and span. A run whose task type is unknown is unresolved; one the pipeline refuses for another
 * reason (out of the occurred_at window, over the quota…) is rejected. Errors of the database
 * are thrown, after every run has settled.
 */
export async function trackRuns({
  ctx,
  drafts,
  rules,
}: {
  ctx: OrgCtx;
  drafts: RunDraft[];
  rules: MappingRule[];
}): Promise<RunOutcome[]> {
  const outcomes: RunOutcome[] = new Array<RunOutcome>(drafts.length);
  const calls: Promise<void>[] = [];
  drafts.forEach((draft, i) => {
    const prepared = trackInputOf(draft, rules);
    if ('unresolved' in prepared)
      return void (outcomes[i] = { kind: 'unresolved', reason: prepared.unresolved });
    if ('rejected' in prepared) return void (outcomes[i] = { kind: 'rejected', message: prepared.rejected });
    calls.push(
      trackEvent({ ctx, input: prepared.input, idempotencyKey: idempotencyKeyOf(draft) }).then(
        (result) => void (outcomes[i] = { kind: 'tracked', replayed: result.replayed, event: result.event }),
        (error: unknown) => {
          if (!(error instanceof AppError) || error.status >= 500) throw error;
          outcomes[i] =
            error.code === 'unknown_task_type'
              ? { kind: 'unresolved', reason: error.message }
              : { kind: 'rejected', message: error.message };
        },
      ),
    );
  });
  const settled = await Promise.allSettled(calls);
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
  return outcomes;
}

/** A run refused by tracking: unresolved when its task type is unknown, rejected otherwise. */
function refusal(error: unknown): RunOutcome {
  if (!(error instanceof AppError) || error.status >= 500) throw error;
  return error.code === 'unknown_task_type'
    ? { kind: 'unresolved', reason: error.message }
    : { kind: 'rejected', message: error.message };
}

/** The track call of a run, checked as trackEvent checks its input (throws its AppError). */
function jobOf(ctx: OrgCtx, input: TrackInput, idempotencyKey: string): TrackJob {
  const path = '/body';
  const { occurredAt, metadataJson } = checkTrackInput(input, path);
  const receivedAt = ctx.clock.now();
  checkPricedCost(input, ctx.org, occurredAt ?? receivedAt, path);
  return {
    ctx,
    input,
    metadataJson,
    idempotencyKey,
    path,
    eventId: newId('evt', receivedAt),
    receivedAt,
    occurredAt: occurredAt ?? receivedAt,
  };
}

/**
 * trackRuns inside the caller's open transaction `trx` (the export's, which holds its traces'
 * locks): the runs are written set-wise by the tracking pipeline, with the export's other writes,
 * and commit with them. The caller wakes the folding stage after its commit.
 */
export async function trackRunsIn(
  trx: DbOrTrx,
  { ctx, drafts, rules }: { ctx: OrgCtx; drafts: RunDraft[]; rules: MappingRule[] },
): Promise<RunOutcome[]> {
  const outcomes: RunOutcome[] = new Array<RunOutcome>(drafts.length);
  let pending: { index: number; job: TrackJob }[] = [];
  drafts.forEach((draft, index) => {
    const prepared = trackInputOf(draft, rules);
    if ('unresolved' in prepared)
      return void (outcomes[index] = { kind: 'unresolved', reason: prepared.unresolved });
    if ('rejected' in prepared)
      return void (outcomes[index] = { kind: 'rejected', message: prepared.rejected });
    try {
      pending.push({ index, job: jobOf(ctx, prepared.input, idempotencyKeyOf(draft)) });
    } catch (error) {
      outcomes[index] = refusal(error);
    }
  });
  // A second run with one key (a task span sent twice) waits for the pass after the first.
  while (pending.length > 0) {
    const results: JobOutcome[] = await processBatch(
      trx,
      pending.map((p) => p.job),
    );
    const again: typeof pending = [];
    pending.forEach((p, i) => {
      const result = results[i];
      if (result === undefined) throw new Error('no outcome for a tracked run');
      if ('ok' in result)
        outcomes[p.index] = { kind: 'tracked', replayed: result.ok.replayed, event: result.ok.event };
      else if ('error' in result) outcomes[p.index] = refusal(result.error);
      else again.push(p);
    });
    pending = again;
  }
  return outcomes;
}
