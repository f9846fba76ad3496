import { sql } from 'kysely';
import { expect } from 'vitest';
import { getUsage } from '../../src/billing/usage.js';
import type { OrgCtx, ServiceCtx } from '../../src/context.js';
import { foldOnce } from '../../src/fold/pass.js';
import { tailState } from '../../src/fold/tail.js';
import type { Dimension, ReportInput } from '../../src/reports/params.js';
import { buildReport } from '../../src/reports/report.js';
import { eventView } from '../../src/tracking/events.js';
import { expectedRows, type Dim } from '../reports/reference.js';
import { OUTCOMES } from '../../src/orgs/organizations.js';
import { DAY_MS, SUMS, SUM_COLUMNS, foldPartOf, rollupDeltas, sumColumn } from '../../src/reports/rollups.js';
import type { DbOrTrx } from '../../src/storage/db.js';
import { createWebhook } from '../../src/webhooks/subscriptions.js';
import { lcg, type SeedEvent } from '../reports/seed.js';
import type { Harness, HarnessOptions } from '../support/harness.js';

/** The harness's options for tests that fold by hand, with webhooks to a local address. */
export const PAUSED = {
  foldInline: false,
  env: { TALLY_WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' },
} satisfies HarnessOptions;

/** `n` seeded random events, back-dated up to 80 days from `now`, and up to a day ahead. */
export function randomEvents(seedValue: number, n: number, now: number): SeedEvent[] {
  const rand = lcg(seedValue);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)] as T;
  return Array.from({ length: n }, () => ({
    agent: pick(['a', 'b', 'c', 'd']),
    taskType: pick(['support_ticket_reply', 'dev_bug_fix']),
    outcome: pick(['success', 'failure', 'needs_review'] as const),
    client: pick(['k1', 'k2', null]),
    occurredAt: now - Math.floor(rand() * 81 * DAY_MS) + DAY_MS,
    agentCost: rand() < 0.5 ? null : Math.round(rand() * 1e6) / 1e6,
  }));
}

/** A new organisation of the harness with a webhook for both event types. */
export async function orgWithWebhook(h: Harness): Promise<OrgCtx> {
  const ctx = await h.orgCtx(await h.createOrg({ plan: 'pro' }));
  await createWebhook({
    ctx,
    input: { url: 'http://127.0.0.1:9/hook', event_types: ['event.created', 'agent.first_event'] },
  });
  return ctx;
}

async function count(db: DbOrTrx, query: ReturnType<typeof sql<{ n: unknown }>>): Promise<number> {
  const { rows } = await query.execute(db);
  return Number(rows[0]?.n ?? 0);
}

/**
 * Rolled-up events and usage of an organisation, and its webhook messages by type. The month
 * rows hold the days before `months_through` only (rollups.ts monthsThroughAt): with the day rows
 * from it on, they account for every folded event once.
 */
export async function derived(db: DbOrTrx, orgId: string) {
  return {
    rolledUp: await count(
      db,
      sql`SELECT COALESCE(SUM(events), 0) AS n FROM report_rollups WHERE org_id = ${orgId} AND grain = 'all'`,
    ),
    rolledUpMonths: await count(
      db,
      sql`SELECT COALESCE(SUM(events), 0) AS n FROM report_rollups
        WHERE org_id = ${orgId} AND (grain = 'agent+task_type+client/month'
          OR (grain = 'agent+task_type+client' AND day >= (SELECT months_through FROM fold_state WHERE id = ${foldPartOf('agent+task_type+client')})))`,
    ),
    usage: await count(
      db,
      sql`SELECT COALESCE(SUM(events), 0) AS n FROM usage_monthly WHERE org_id = ${orgId}`,
    ),
    created: await count(
      db,
      sql`SELECT COUNT(*) AS n FROM webhook_messages WHERE org_id = ${orgId} AND type = 'event.created'`,
    ),
    createdEvents: await count(
      db,
      sql`SELECT COUNT(DISTINCT payload) AS n FROM webhook_messages WHERE org_id = ${orgId} AND type = 'event.created'`,
    ),
    firsts: await count(
      db,
      sql`SELECT COUNT(*) AS n FROM webhook_messages WHERE org_id = ${orgId} AND type = 'agent.first_event'`,
    ),
  };
}

/** Every sum column of a rollup row, with the outcome it is restricted to and what it sums. */
const SUM_SOURCES = [undefined, ...OUTCOMES].flatMap((outcome) =>
  SUMS.map((sum) => ({ column: sumColumn(sum, outcome), outcome, sum })),
);

/** A grain's rows as `day|agent` → sums in SUM_SOURCES order, sorted by key. */
type GrainRows = Array<[key: string, ...sums: number[]]>;

function sorted(rows: Map<string, number[]>): GrainRows {
  return [...rows.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, sums]) => [key, ...sums]);
}

/**
 * The day rows of the `all` or `agent` grain of an organisation (summed over shards), next to
 * the same figures by a plain GROUP BY over its events: equal when every event is folded once.
 */
export async function rollupsAndEvents(
  db: DbOrTrx,
  orgId: string,
  grain: 'all' | 'agent',
): Promise<{ rollups: GrainRows; events: GrainRows }> {
  const stored = await db
    .selectFrom('report_rollups')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('grain', '=', grain)
    .execute();
  const rollups = new Map<string, number[]>();
  for (const row of stored) {
    const key = `${Number(row.day)}|${row.agent_id}`;
    const sums = rollups.get(key) ?? SUM_SOURCES.map(() => 0);
    SUM_SOURCES.forEach(({ column }, i) => (sums[i] = (sums[i] ?? 0) + Number(row[column])));
    rollups.set(key, sums);
  }

  // Column names from the fixed lists above, never input.
  const sums = SUM_SOURCES.map(({ column, outcome, sum }) => {
    // Events add nothing to the review sums (adjustments do: src/ledger/).
    const value = sum === 'events' ? '1' : sum.startsWith('review_') ? '0' : `COALESCE(${sum}, 0)`;
    const when = outcome === undefined ? value : `CASE WHEN outcome = '${outcome}' THEN ${value} ELSE 0 END`;
    return sql.raw(`SUM(${when}) AS ${column}`);
  });
  const agent = grain === 'agent' ? sql`agent_id` : sql`''`;
  const { rows } = await sql<Record<string, unknown>>`
    SELECT occurred_at / ${sql.lit(DAY_MS)} AS day, ${agent} AS agent, ${sql.join(sums)}
    FROM events WHERE org_id = ${orgId} GROUP BY 1, 2`.execute(db);
  const events = new Map<string, number[]>();
  for (const row of rows) {
    events.set(
      `${Number(row.day)}|${String(row.agent)}`,
      SUM_SOURCES.map(({ column }) => Number(row[column])),
    );
  }
  return { rollups: sorted(rollups), events: sorted(events) };
}

const CASES: Array<{ groupBy: Dim[]; period: ReportInput['period'] }> = [
  { groupBy: ['agent'], period: '30d' },
  { groupBy: ['agent', 'client'], period: '90d' },
  { groupBy: ['agent', 'task_type', 'client'], period: '7d' },
  { groupBy: ['task_type', 'week'], period: '90d' },
  // Weeks of two keys: closed weeks from their rows, the current one from its days.
  { groupBy: ['agent', 'client', 'week'], period: '30d' },
  { groupBy: ['client', 'day'], period: '24h' },
];

/** Every case's report equals the reference GROUP BY over the org's events. */
export async function expectExact(ctx: OrgCtx) {
  const rows = await ctx.db.selectFrom('events').selectAll().where('org_id', '=', ctx.org.id).execute();
  const events = rows.map((row) => eventView(row));
  const at = ctx.clock.now().getTime();
  for (const { groupBy, period } of CASES) {
    const input: ReportInput = {
      period,
      groupBy: groupBy as Dimension[],
      sort: 'events',
      top: null,
      filters: { metadata: [] },
    };
    const served = await buildReport({ ctx, input });
    const from = at - { '24h': 1, '7d': 7, '30d': 30, '90d': 90 }[period as '24h'] * DAY_MS;
    expect(served.rows, `${groupBy.join(',')} ${period}`).toEqual(
      expectedRows(events, { groupBy, from, to: at, sort: 'events' }).rows,
    );
  }
  const usage = await getUsage({ ctx });
  expect(usage.lifetime_events).toBe(events.length);
}

/**
 * Folds until the tail is empty. On PostgreSQL a pass folds only below the oldest running
 * transaction of the server, which another test's may hold back for a moment.
 */
export async function foldAll(ctx: ServiceCtx, sqlFrom?: number) {
  for (let i = 0; i < 500; i++) {
    const result = await foldOnce(ctx, sqlFrom === undefined ? {} : { sqlFrom });
    const tail = result.more ? null : await tailState(ctx.db, ctx.engine);
    // Both tails: the events' and the adjustments' (src/ledger/).
    if (tail !== null && tail.events === 0 && tail.adjustments === 0) return;
    if (!result.more) await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('the tail did not empty');
}

/** An organisation's rollup rows, next to the rows rollupDeltas builds for its events. */
export async function rowsAndDeltas(ctx: OrgCtx, coarseThrough: number, monthsThrough: number) {
  const key = (r: Record<string, unknown>) =>
    [r.grain, r.day, r.agent_id, r.task_type, r.client_key].map(String).join('|');
  const normal = (rows: Array<Record<string, unknown>>) =>
    rows
      .map((r) => [key(r), ...SUM_COLUMNS.map((c) => Number(r[c]))] as const)
      .sort((a, b) => (a[0] < b[0] ? -1 : 1));
  const events = await ctx.db.selectFrom('events').selectAll().where('org_id', '=', ctx.org.id).execute();
  const stored = await ctx.db
    .selectFrom('report_rollups')
    .selectAll()
    .where('org_id', '=', ctx.org.id)
    .execute();
  return {
    stored: normal(stored as never),
    built: normal(rollupDeltas(events, 0, coarseThrough, monthsThrough) as never),
  };
}
