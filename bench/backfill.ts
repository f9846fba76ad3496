/**
 * The backfill the benchmarks send (bench:ingest, and bench:webhooks with BENCH_BACKFILL): events
 * of a random agent of 200, task type of 50 and client of 20, `occurred_at` spread at random over
 * the 89 days before now, through POST /v1/track/batch, 500 per request.
 */
import type { Pool } from 'undici';
import { BUILTIN_TASK_TYPES } from '../src/catalogue/builtins.js';

export const PER_REQUEST = 500;
const DAY_MS = 86_400_000;
const TASK_TYPES = BUILTIN_TASK_TYPES.map((t) => t.key);
const OUTCOMES = ['success', 'success', 'success', 'needs_review', 'failure'];

/** A seeded generator of numbers in [0, 1), so runs send the same events. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

export interface BenchEvent {
  agent_id: string;
  task_type: string;
  outcome: string;
  occurred_at: string;
  agent_duration_seconds: number;
  agent_cost: number;
  model: string;
  metadata: Record<string, string>;
}

/** The next event of the backfill drawn from `rand` (the same for the load and the floor). */
export function benchEvent(rand: () => number, now: number): BenchEvent {
  const pick = <T>(items: readonly T[]) => items[Math.floor(rand() * items.length)] as T;
  return {
    agent_id: `bench-agent-${String(Math.floor(rand() * 200)).padStart(3, '0')}`,
    task_type: pick(TASK_TYPES),
    outcome: pick(OUTCOMES),
    // A minute of margin, so the oldest stay inside the 90 days when they arrive.
    occurred_at: new Date(now - 60_000 - Math.floor(rand() * 89 * DAY_MS)).toISOString(),
    agent_duration_seconds: 42.5,
    agent_cost: 0.0123,
    model: 'gpt-4o',
    metadata: {
      client_id: `client-${String(Math.floor(rand() * 20)).padStart(2, '0')}`,
      ticket: 'T-123456',
      channel: 'email',
    },
  };
}

/**
 * Sends `total` events with `inFlight` batch requests at once, each sent when the one before it
 * on its connection is answered. Returns how many events were not stored (201) and the seconds
 * it took.
 */
export async function sendBackfill(options: {
  api: Pool;
  apiKey: string;
  total: number;
  inFlight: number;
  seed?: number;
}): Promise<{ failed: number; seconds: number }> {
  const { api, total } = options;
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${options.apiKey}` };
  const rand = rng(options.seed ?? 7);
  const started = performance.now();
  let next = 0;
  let failed = 0;
  const worker = async () => {
    while (next < total) {
      const n = Math.min(PER_REQUEST, total - next);
      next += n;
      const events = Array.from({ length: n }, () => benchEvent(rand, Date.now()));
      const res = await api.request({
        method: 'POST',
        path: '/v1/track/batch',
        headers,
        body: JSON.stringify({ events }),
      });
      const body = (await res.body.json()) as { data?: Array<{ status: number }> };
      if (res.statusCode !== 207) failed += n;
      else failed += (body.data ?? []).filter((d) => d.status !== 201).length;
    }
  };
  await Promise.all(Array.from({ length: options.inFlight }, worker));
  return { failed, seconds: (performance.now() - started) / 1000 };
}
