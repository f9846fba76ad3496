import type { OrgCtx } from '../context.js';
import { newId } from '../ids.js';
import type { Db } from '../storage/db.js';
import { batcherFor } from './batcher.js';
import { afterTrack } from '../fold/registry.js';
import type { TrackJob, TrackResult } from './job.js';
import { processBatch } from './pipeline.js';
import { checkPricedCost, checkTrackInput, type TrackInput } from './track-input.js';

export type { TrackInput } from './track-input.js';
export type { TrackResult } from './job.js';

/**
 * Records one finished agent task. Order (DESIGN §2): validation here, then in the batch:
 * idempotent replay, business rules (task type, occurred_at), quota; the event (and for a plan
 * with a hard cap, its count) commits, and the folding stage derives the rest (DESIGN §11).
 * Throws the job's AppError.
 */
export async function trackEvent({
  ctx,
  input,
  idempotencyKey,
  path = '/body',
}: {
  ctx: OrgCtx;
  input: TrackInput;
  idempotencyKey: string | null;
  path?: string;
}): Promise<TrackResult> {
  const { occurredAt, metadataJson } = checkTrackInput(input, path);
  const receivedAt = ctx.clock.now();
  checkPricedCost(input, ctx.org, occurredAt ?? receivedAt, path);
  const job: TrackJob = {
    ctx,
    input,
    metadataJson,
    idempotencyKey,
    path,
    eventId: newId('evt', receivedAt),
    receivedAt,
    occurredAt: occurredAt ?? receivedAt,
  };
  if (!ctx.db.isTransaction) {
    const result = await batcherFor(ctx.db as Db).submit(job);
    // The folding stage derives rollups, usage and webhook messages from the committed event.
    if (!result.replayed) await afterTrack(ctx);
    return result;
  }
  // Already inside a caller's transaction: process alone, in it.
  const [outcome] = await processBatch(ctx.db, [job]);
  if (outcome && 'ok' in outcome) return outcome.ok;
  if (outcome && 'error' in outcome) throw outcome.error;
  throw new Error('a lone track call cannot be deferred');
}
