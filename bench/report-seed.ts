/**
 * Seeds the report benchmark: one organisation, 200 agents, 50 task types, 20 clients (plus
 * events without one), events spread over the 90 days before `now`. Rows go in directly in big
 * transactions, with the rollups built by the same function tracking calls.
 *
 * Shape `specialised` (the default) is how organisations use agents: each agent does one to four
 * task types of its own (500 agent × task type pairs in all), and a few clients bring most of the
 * work (client weights 1/rank). Shape `uniform` draws agent, task type and client
 * independently and uniformly (10,000 pairs, each on most days): the worst case for rollups.
 */
import { BUILTIN_TASK_TYPES } from '../src/catalogue/builtins.js';
import { coarseThroughAt, monthsThroughAt, recordRollups } from '../src/reports/rollups.js';
import { PostgresAdapter, sql } from 'kysely';
import type { Db } from '../src/storage/db.js';
import { writeEvents } from '../src/tracking/event-writes.js';
import type { EventRow } from '../src/storage/schema.js';

const DAY_MS = 86_400_000;
const OUTCOMES = ['success', 'success', 'success', 'needs_review', 'failure'] as const;
const AGENTS = 200;
const CHANNELS = ['email', 'chat', 'phone'];
const CLIENTS = 20;
const ROWS_PER_INSERT = 500;
const ROWS_PER_TRANSACTION = 20_000;

export type Shape = 'specialised' | 'uniform';

/** Agent i's own task types: 1 + i mod 4 of them, neighbours in the catalogue (one area of work). */
function agentTasks(agent: number): number[] {
  const first = (agent * 13) % BUILTIN_TASK_TYPES.length;
  return Array.from({ length: 1 + (agent % 4) }, (_, j) => (first + j) % BUILTIN_TASK_TYPES.length);
}

/** Cumulative client weights 1/rank, for drawing client r with probability ∝ 1/(r + 1). */
const CLIENT_CDF = (() => {
  const weights = Array.from({ length: CLIENTS }, (_, r) => 1 / (r + 1));
  const total = weights.reduce((a, b) => a + b, 0);
  let sum = 0;
  return weights.map((w) => (sum += w / total));
})();

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function makeRow(
  i: number,
  total: number,
  orgId: string,
  now: number,
  rand: () => number,
  shape: Shape,
  seq: EventRow['ingest_seq'],
): EventRow {
  const agent = Math.floor(rand() * AGENTS);
  const tasks = agentTasks(agent);
  const taskIndex =
    shape === 'uniform'
      ? Math.floor(rand() * BUILTIN_TASK_TYPES.length)
      : (tasks[Math.floor(rand() * tasks.length)] ?? 0);
  const task = BUILTIN_TASK_TYPES[taskIndex];
  const minutes = task?.default_baseline_minutes ?? 10;
  const outcome = OUTCOMES[Math.floor(rand() * OUTCOMES.length)] ?? 'success';
  const credit = outcome === 'success' ? 1 : outcome === 'needs_review' ? 0.5 : 0;
  const hours = Math.round((minutes * credit * 1e6) / 60);
  const r = rand();
  // findIndex finds nothing only when rounding left the last sum a hair under r.
  const drawn = CLIENT_CDF.findIndex((c) => r < c);
  const clientIndex = shape === 'uniform' ? Math.floor(r * CLIENTS) : drawn === -1 ? CLIENTS - 1 : drawn;
  const client = rand() < 0.05 ? null : `client-${String(clientIndex).padStart(2, '0')}`;
  // Events arrive roughly in time order, as tracking stores them: oldest first, a little jitter.
  const occurredAt = Math.min(now, now - 90 * DAY_MS + Math.floor(((i + rand()) * 90 * DAY_MS) / total));
  return {
    id: `evt_${String(i).padStart(26, '0')}`,
    org_id: orgId,
    agent_id: `agent-${String(agent).padStart(3, '0')}`,
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
    metadata: JSON.stringify({ ...(client === null ? {} : { client_id: client }), channel: CHANNELS[i % 3] }),
    audit_sample: null,
    pricing: null,
    occurred_at: occurredAt,
    received_at: occurredAt,
    idempotency_key: null,
    ingest_seq: seq,
  };
}

/**
 * The seeded events, folded already: the seed writes their rollups and usage counts with them,
 * and they take positions below the watermark, as the folding stage leaves them. Positions as
 * tracking gives them, so that the planners' statistics of `ingest_seq` are those of a real
 * events table: SQLite numbers events one by one; on PostgreSQL an event takes its transaction's
 * id, so the seeded ones share the ids below the database's next one, in order (a test database
 * may have used only a few thousand, about as many events per id as a batch of tracking holds).
 */
export async function seedEvents(
  db: Db,
  orgId: string,
  now: number,
  total: number,
  shape: Shape = 'specialised',
): Promise<void> {
  const rand = rng(7);
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  const { rows: marks } = postgres
    ? await sql<{ next: string }>`SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS next`.execute(db)
    : await sql<{ next: number }>`SELECT COALESCE(MAX(ingest_seq), 0) + 1 AS next FROM events`.execute(db);
  const next = Number(marks[0]?.next ?? 1);
  const seqOf = (i: number): EventRow['ingest_seq'] =>
    postgres ? String(1 + Math.floor((i * (next - 1)) / total)) : next + i;
  // As the folding stage leaves them at `now`: week rows of ended weeks, month rows of ended days.
  const coarseThrough = coarseThroughAt(now);
  const monthsThrough = monthsThroughAt(now);
  await db
    .updateTable('fold_state')
    .set({ coarse_through: coarseThrough, months_through: monthsThrough })
    .execute();
  for (let start = 0; start < total; start += ROWS_PER_TRANSACTION) {
    const rows: EventRow[] = [];
    for (let i = start; i < Math.min(total, start + ROWS_PER_TRANSACTION); i++)
      rows.push(makeRow(i, total, orgId, now, rand, shape, seqOf(i)));
    await db.transaction().execute(async (trx) => {
      for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
        await trx
          .insertInto('events')
          .values(rows.slice(i, i + ROWS_PER_INSERT))
          .execute();
      }
      await recordRollups(trx, rows, 0, coarseThrough, monthsThrough);
    });
  }
  const month = postgres
    ? sql`to_char(to_timestamp(received_at / 1000) AT TIME ZONE 'UTC', 'YYYY-MM')`
    : sql`strftime('%Y-%m', received_at / 1000, 'unixepoch')`;
  await sql`
    INSERT INTO usage_monthly (org_id, month, shard, events)
    SELECT org_id, ${month}, 0, COUNT(*) FROM events WHERE org_id = ${orgId} GROUP BY 1, 2
    ON CONFLICT (org_id, month, shard) DO UPDATE SET events = usage_monthly.events + excluded.events`.execute(
    db,
  );
  const watermark = postgres ? sql`${String(next)}::xid8` : sql`${next + total}`;
  await sql`UPDATE fold_state SET watermark = ${watermark}`.execute(db);
}

/**
 * `total` more events of the last 24 hours before `now`, written as tracking writes them and not
 * folded: the folding stage's tail (BENCH_TAIL in reports.ts). Returns their ids.
 */
export async function seedTail(db: Db, orgId: string, now: number, total: number): Promise<string[]> {
  const rand = rng(11);
  const rows = Array.from({ length: total }, (_, i) => {
    // Numbered as tracking numbers them (writeEvents).
    const row = makeRow(i, total, orgId, now, rand, 'specialised', null);
    const at = now - Math.floor(rand() * DAY_MS);
    return { ...row, id: `evt_tail_${String(i).padStart(21, '0')}`, occurred_at: at, received_at: at };
  });
  for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
    const chunk = rows.slice(i, i + ROWS_PER_INSERT);
    await db.transaction().execute((trx) => writeEvents(trx, chunk));
  }
  return rows.map((row) => row.id);
}
