import type { OrgCtx } from '../../src/context.js';
import type { Outcome } from '../../src/orgs/organizations.js';
import type { StoredEvent } from '../../src/tracking/events.js';
import { trackEvent } from '../../src/tracking/track.js';

export interface SeedEvent {
  agent: string;
  taskType: string;
  outcome: Outcome;
  client: string | null;
  occurredAt: number;
  agentCost: number | null;
  baselineMinutes?: number;
  metadata?: Record<string, unknown>;
}

/** Seeds through the real track verb (so rollups are maintained exactly as in production). */
export async function seed(ctx: OrgCtx, events: readonly SeedEvent[]): Promise<StoredEvent[]> {
  const stored: StoredEvent[] = [];
  for (const e of events) {
    const metadata = { ...e.metadata, ...(e.client === null ? {} : { client_id: e.client }) };
    const { event } = await trackEvent({
      ctx,
      idempotencyKey: null,
      input: {
        agent_id: e.agent,
        task_type: e.taskType,
        outcome: e.outcome,
        occurred_at: new Date(e.occurredAt).toISOString(),
        ...(e.agentCost === null ? {} : { agent_cost: e.agentCost }),
        ...(e.baselineMinutes === undefined ? {} : { human_baseline_minutes: e.baselineMinutes }),
        ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
      },
    });
    stored.push(event);
  }
  return stored;
}

/** A deterministic pseudo-random sequence, so failures reproduce. */
export function lcg(seedValue: number): () => number {
  let s = seedValue >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}
