import type { OrgCtx, ServiceCtx } from '../context.js';
import { newId } from '../ids.js';
import { trackDb, type Db } from '../storage/db.js';
import { batcherFor } from './batcher.js';
import type { CommitListener } from './commit-listeners.js';
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
    // The batcher's commit listeners hear of the event (the folding stage derives rollups,
    // usage and webhook messages from it).
    return batcherOf(ctx).submit(job);
  }
  // Already inside a caller's transaction: process alone, in it.
  const [outcome] = await processBatch(ctx.db, [job]);
  if (outcome && 'ok' in outcome) return outcome.ok;
  if (outcome && 'error' in outcome) throw outcome.error;
  throw new Error('a lone track call cannot be deferred');
}

/** The batcher of `ctx`'s handle, its batches committing on the track connection (trackDb). */
function batcherOf(ctx: Pick<ServiceCtx, 'db' | 'storage'>) {
  return batcherFor(ctx.db as Db, trackDb(ctx) as Db);
}

/**
 * Listens to the track calls that commit an event on `ctx.db` (the handle the service's requests
 * use), through every door: the API, OpenTelemetry ingest, verbs called directly. Returns the
 * function that stops listening.
 */
export function onTrackCommitted(
  ctx: Pick<ServiceCtx, 'db' | 'storage'>,
  listener: CommitListener,
): () => void {
  return batcherOf(ctx).committed.add(listener);
}

/**
 * Tells the listeners of `ctx.db` that events committed by a door that writes them in a
 * transaction of its own (an OpenTelemetry export settling its traces under their locks).
 */
export async function announceCommitted(ctx: Pick<ServiceCtx, 'db' | 'storage'>): Promise<void> {
  await batcherOf(ctx).committed.notify();
}
