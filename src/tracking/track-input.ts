import { AppError, validationError } from '../errors.js';
import { nestingDepth } from '../http/storable.js';
import { toMicros } from '../money.js';
import type { Organization, Outcome } from '../orgs/organizations.js';
import { priceRun, type RunPricing } from '../pricing/price-run.js';
import { MAX_AGENT_COST } from './schema.js';

/** A validated POST /v1/track body (spec §2.1). */
export interface TrackInput {
  agent_id: string;
  task_type: string;
  outcome: Outcome;
  agent_duration_seconds?: number;
  agent_cost?: number;
  model?: string;
  tokens_in?: number;
  tokens_out?: number;
  human_baseline_minutes?: number;
  metadata?: Record<string, unknown>;
  audit_sample?: {
    input_excerpt?: string;
    output_excerpt?: string;
    model?: string;
    tokens_in?: number;
    tokens_out?: number;
  };
  occurred_at?: string;
}

export const METADATA_MAX_BYTES = 16 * 1024;
/** Objects and arrays metadata may nest, itself included (README "Limits"). */
export const METADATA_MAX_DEPTH = 32;
const MAX_AGENT_COST_MICROS = toMicros(MAX_AGENT_COST);
const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Validation beyond the JSON schema; `path` prefixes field paths (batch items). Returns the
 * serialised metadata too, as it is stored (serialised once, for the check and the row).
 */
export function checkTrackInput(
  input: TrackInput,
  path: string,
): { occurredAt: Date | null; metadataJson: string | null } {
  if (input.metadata !== undefined && nestingDepth(input.metadata) > METADATA_MAX_DEPTH) {
    throw validationError(`${path}/metadata`, `must not nest deeper than ${METADATA_MAX_DEPTH} levels`);
  }
  const metadataJson = input.metadata === undefined ? null : JSON.stringify(input.metadata);
  if (metadataJson !== null && Buffer.byteLength(metadataJson) > METADATA_MAX_BYTES) {
    throw validationError(`${path}/metadata`, `must be at most ${METADATA_MAX_BYTES} bytes serialized`);
  }
  if (input.occurred_at === undefined) return { occurredAt: null, metadataJson };
  const occurredAt = new Date(input.occurred_at);
  if (Number.isNaN(occurredAt.getTime())) {
    throw validationError(`${path}/occurred_at`, 'must be an RFC 3339 timestamp with a time zone');
  }
  return { occurredAt, metadataJson };
}

/** Spec §4.1: at most 90 days in the past and 24 hours in the future, from the time of receipt. */
export function checkOccurredAtWindow(occurredAt: Date, receivedAt: Date, path: string): void {
  const t = occurredAt.getTime();
  const now = receivedAt.getTime();
  if (t < now - 90 * DAY_MS || t > now + DAY_MS) {
    throw new AppError(
      'occurred_at_out_of_range',
      'occurred_at must be at most 90 days in the past and at most 24 hours in the future.',
      [{ path: `${path}/occurred_at`, message: 'is out of range' }],
    );
  }
}

/** Reports group by client through `metadata.client_id`. */
export function clientIdOf(metadata: Record<string, unknown> | undefined): string | null {
  const value = metadata?.client_id;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return null;
}

export interface AgentCost {
  micros: number | null;
  source: 'provided' | 'computed' | 'none';
  pricing: RunPricing['pricing'] | null;
}

/** Agent cost: given → provided; else model and tokens (top level, else audit_sample) → computed. */
export function agentCostOf(input: TrackInput, org: Organization, occurredAt: Date): AgentCost {
  if (input.agent_cost !== undefined)
    return { micros: toMicros(input.agent_cost), source: 'provided', pricing: null };
  const model = input.model ?? input.audit_sample?.model;
  const tokensIn = input.tokens_in ?? input.audit_sample?.tokens_in;
  const tokensOut = input.tokens_out ?? input.audit_sample?.tokens_out;
  if (model !== undefined && tokensIn !== undefined && tokensOut !== undefined) {
    const priced = priceRun({
      model,
      tokensIn,
      tokensOut,
      at: occurredAt,
      currency: org.currency,
      usdExchangeRate: org.usdExchangeRate,
    });
    if (priced) return { micros: priced.agentCostMicros, source: 'computed', pricing: priced.pricing };
  }
  return { micros: null, source: 'none', pricing: null };
}

/**
 * A cost priced from model and tokens is bounded like a given one: tokens at their maximum, the
 * dearest model and a weak currency can price beyond what the arithmetic of reports carries.
 */
export function checkPricedCost(input: TrackInput, org: Organization, occurredAt: Date, path: string): void {
  if (input.agent_cost !== undefined) return;
  const { micros } = agentCostOf(input, org, occurredAt);
  if (micros !== null && micros > MAX_AGENT_COST_MICROS) {
    throw validationError(
      `${path}/agent_cost`,
      `priced from the model and tokens exceeds the maximum agent_cost of ${MAX_AGENT_COST}; send agent_cost`,
    );
  }
}
