import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { OrgCtx } from '../context.js';
import { AppError } from '../errors.js';
import type { StoredEvent } from '../tracking/events.js';
import { TrackBody } from '../tracking/schema.js';
import { trackEvent } from '../tracking/track.js';
import type { TrackInput } from '../tracking/track-input.js';
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
