/**
 * Seeds the report benchmark: one organisation, 200 agents, 50 task types, 20 clients (plus
 * events without one), events spread over the 90 days before `now`. Rows go in directly in big
 * transactions, with the rollups built by the same function tracking calls.
 */
import { BUILTIN_TASK_TYPES } from '../src/catalogue/builtins.js';
import { recordRollups } from '../src/reports/rollups.js';
import type { Db } from '../src/storage/db.js';
import type { EventRow } from '../src/storage/schema.js';

const DAY_MS = 86_400_000;
const OUTCOMES = ['success', 'success', 'success', 'needs_review', 'failure'] as const;
const ROWS_PER_INSERT = 500;
const ROWS_PER_TRANSACTION = 20_000;

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function makeRow(i: number, total: number, orgId: string, now: number, rand: () => number): EventRow {
  const task = BUILTIN_TASK_TYPES[Math.floor(rand() * BUILTIN_TASK_TYPES.length)];
  const minutes = task?.default_baseline_minutes ?? 10;
  const outcome = OUTCOMES[Math.floor(rand() * OUTCOMES.length)] ?? 'success';
  const credit = outcome === 'success' ? 1 : outcome === 'needs_review' ? 0.5 : 0;
  const hours = Math.round((minutes * credit * 1e6) / 60);
  const client = rand() < 0.05 ? null : `client-${String(Math.floor(rand() * 20)).padStart(2, '0')}`;
  // Events arrive roughly in time order, as tracking stores them: oldest first, a little jitter.
  const occurredAt = Math.min(now, now - 90 * DAY_MS + Math.floor(((i + rand()) * 90 * DAY_MS) / total));
  return {
    id: `evt_${String(i).padStart(26, '0')}`,
    org_id: orgId,
    agent_id: `agent-${String(Math.floor(rand() * 200)).padStart(3, '0')}`,
    task_type: task?.key ?? 'support_ticket_reply',
    outcome,
    client_id: client,
    resolved_baseline_minutes: minutes,
    resolved_baseline_source: 'builtin',
    resolved_hourly_rate_micros: 50_000_000,
    currency: 'EUR',
    agent_duration_seconds: null,
    hours_saved_micros: hours,
    cost_saved_micros: hours * 50,
    agent_cost_micros: rand() < 0.3 ? null : Math.floor(rand() * 200_000),
    resolved_cost_source: 'provided',
    model: null,
    tokens_in: null,
    tokens_out: null,
    metadata: client === null ? null : JSON.stringify({ client_id: client }),
    audit_sample: null,
    pricing: null,
    occurred_at: occurredAt,
    received_at: occurredAt,
    idempotency_key: null,
  };
}

export async function seedEvents(db: Db, orgId: string, now: number, total: number): Promise<void> {
  const rand = rng(7);
  for (let start = 0; start < total; start += ROWS_PER_TRANSACTION) {
    const rows: EventRow[] = [];
    for (let i = start; i < Math.min(total, start + ROWS_PER_TRANSACTION); i++)
      rows.push(makeRow(i, total, orgId, now, rand));
    await db.transaction().execute(async (trx) => {
      for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
        await trx
          .insertInto('events')
          .values(rows.slice(i, i + ROWS_PER_INSERT))
          .execute();
      }
      await recordRollups(trx, rows);
    });
  }
}
