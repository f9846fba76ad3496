import type { OrgCtx } from '../context.js';
import type { AppError } from '../errors.js';
import type { StoredEvent } from './events.js';
import type { TrackInput } from './track-input.js';

export interface TrackResult {
  event: StoredEvent;
  replayed: boolean;
}

/** One track call waiting for its batch. Its id and receipt time are fixed on arrival. */
export interface TrackJob {
  ctx: OrgCtx;
  input: TrackInput;
  /** `input.metadata` serialised, as stored; null without metadata. */
  metadataJson: string | null;
  idempotencyKey: string | null;
  /** Prefix of field paths in error details (`/body`, or `/body/events/3` in a batch). */
  path: string;
  eventId: string;
  receivedAt: Date;
  occurredAt: Date;
}

export type JobOutcome = { ok: TrackResult } | { error: AppError } | { retry: true };
