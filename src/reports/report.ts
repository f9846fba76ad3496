import type { OrgCtx } from '../context.js';
import { fromMicros } from '../money.js';
import { readDb, selectArrays, writeDb } from '../storage/db.js';
import { inSnapshot, readFoldState, type FoldState, type IngestSeq } from '../storage/snapshot.js';
import { aggregateQuery } from './aggregate-sql.js';
import { GROUP_KEY, periodRange, type Dimension, type ReportInput } from './params.js';
import { sortReportRows } from './order.js';
import { chooseGrain, clientFromMetadata, planSources } from './plan.js';
import { DAY_MS, foldPartOf } from './rollups.js';
import { streamRows } from './stream-rows.js';

export type GroupValue = string | null;

export interface ReportRow {
  group: Record<string, GroupValue>;
  events: number;
  hours_saved: number;
  cost_saved: number;
  agent_cost: number;
  net_saved: number;
  /** Review time and its cost, from the adjustments of reviews (src/ledger/). */
  review_hours: number;
  review_cost: number;
}

export interface ReportMeta {
  period: string;
  range: { from: string; to: string };
  group_by: string[];
  sort: string;
  total_groups: number;
}

// YYYY-MM-DD of epoch days already seen: an export repeats each day on many rows. A few
// thousand entries cover decades.
const DAY_TEXT = new Map<number, string>();

function dayText(epochDay: number): string {
  let text = DAY_TEXT.get(epochDay);
  if (text === undefined) {
    text = new Date(epochDay * DAY_MS).toISOString().slice(0, 10);
    DAY_TEXT.set(epochDay, text);
  }
  return text;
}

function groupValue(dim: Dimension, value: string | number | null | undefined): GroupValue {
  if (value === null || value === undefined) return null;
  // Day and week buckets arrive as epoch-day numbers.
  if (dim === 'day' || dim === 'week') return dayText(Number(value));
  return String(value);
}

/**
 * One aggregated row as the database returns it (aggregate-sql.ts): the group values in
 * group_by order, then events, hours, cost saved, agent cost, review hours and review cost in
 * micro-units. Money and hours
 * are exact micro-unit sums, shown with at most 6 decimals; net is computed in micros.
 */
export function toReportRow(groupBy: readonly Dimension[], row: readonly unknown[]): ReportRow {
  const n = groupBy.length;
  const group: Record<string, GroupValue> = {};
  for (let i = 0; i < n; i++) {
    const dim = groupBy[i] as Dimension;
    group[GROUP_KEY[dim]] = groupValue(dim, row[i] as string | number | null);
  }
  const cost = Number(row[n + 2]);
  const agentCost = Number(row[n + 3]);
  return {
    group,
    events: Number(row[n]),
    hours_saved: fromMicros(Number(row[n + 1])),
    cost_saved: fromMicros(cost),
    agent_cost: fromMicros(agentCost),
    net_saved: fromMicros(cost - agentCost),
    review_hours: fromMicros(Number(row[n + 4])),
    review_cost: fromMicros(Number(row[n + 5])),
  };
}

/**
 * The organisation's first event's occurred_at: the first row of its index, not MIN(), which
 * PostgreSQL may plan as an aggregate over all of them when its statistics are older than a
 * backfill (fold/rollups.ts firstDayRow).
 */
async function earliestEvent(ctx: OrgCtx): Promise<number | null> {
  const row = await ctx.db
    .selectFrom('events')
    .select('occurred_at')
    .where('org_id', '=', ctx.org.id)
    .orderBy('occurred_at')
    .limit(1)
    .executeTakeFirst();
  return row === undefined ? null : Number(row.occurred_at);
}

/**
 * Organisations known to have adjustments (src/ledger/). The ledger only grows, so once seen they
 * are not asked again; an organisation without any is asked in each report's snapshot, in the
 * round trip that reads the folding stage's state (snapshot.ts adjustmentsOf): a restatement
 * publishes all its entries in one transaction, so the report reads all of them or none.
 */
const ADJUSTED = new Set<string>();

/** Whether the organisation has adjustments, from the snapshot's answer (`adjusted`) or the set. */
function hasAdjustments(orgId: string, adjusted: boolean | undefined): boolean {
  if (adjusted === true) ADJUSTED.add(orgId);
  return adjusted ?? ADJUSTED.has(orgId);
}

/** Whether the snapshot must ask if `orgId` has adjustments (hasAdjustments). */
function adjustmentsOf(orgId: string): string | undefined {
  return ADJUSTED.has(orgId) ? undefined : orgId;
}

export interface ReportOptions {
  /** Answer from raw events only: the plain GROUP BY, for benchmarks and cross-checks. */
  forceRaw?: boolean;
  /** The window [from, to) in epoch ms instead of the input's period (forecasts, report e-mails). */
  range?: { from: number; to: number };
}

/** The folding stage's state a report is planned with (snapshot.ts readFoldState). */
type FoldView = Omit<FoldState, 'watermark' | 'adjustWatermark'> & {
  /** Read in the snapshot the query will run in, or null for the query to read it itself. */
  watermark: IngestSeq | null;
  /** The adjustments' watermark likewise (null with a null `watermark`). */
  adjustWatermark: IngestSeq | null;
  /** With a null watermark: one read before, which the query's is never below (storage/tail.ts). */
  floor?: IngestSeq;
};

/**
 * The report's query and meta, planned with the folding stage's state, read in the query's
 * snapshot: the month rows hold the days before `monthsThrough` only, and a pass that closes a
 * day adds its rows to them (rollups.ts monthsThroughAt).
 */
async function prepare(ctx: OrgCtx, input: ReportInput, options: ReportOptions, fold: FoldView) {
  const now = ctx.clock.now().getTime();
  const range = options.range
    ? { ...options.range, endExclusive: options.range.to }
    : periodRange(input.period, now, input.period === 'all' ? await earliestEvent(ctx) : null);
  // The plain GROUP BY keeps the filters as given; they select the same events either way.
  const filters = options.forceRaw ? input.filters : clientFromMetadata(input.filters);
  const sources = planSources(range, input.groupBy, filters, { forceRaw: options.forceRaw, ...fold });
  const adjustments = hasAdjustments(ctx.org.id, fold.adjusted);
  const query = (totalGroups: boolean, ordered: boolean) =>
    aggregateQuery(ctx.db, {
      engine: ctx.engine,
      orgId: ctx.org.id,
      groupBy: input.groupBy,
      filters,
      sources,
      adjustments,
      sort: input.sort,
      top: input.top,
      totalGroups,
      ordered,
    });
  const meta = (totalGroups: number): ReportMeta => ({
    period: input.period,
    range: { from: new Date(range.from).toISOString(), to: new Date(range.to).toISOString() },
    group_by: [...input.groupBy],
    sort: input.sort,
    total_groups: totalGroups,
  });
  return { query, meta };
}

/**
 * A grouped report (spec §2.6, DESIGN §7), answered from the rollups up to the folding stage's
 * watermark, the tail after it and raw edge events, all read in one snapshot (DESIGN §11).
 */
export async function buildReport({
  ctx,
  input,
  options = {},
}: {
  ctx: OrgCtx;
  input: ReportInput;
  options?: ReportOptions;
}) {
  // PostgreSQL: a report that reads rollups runs without parallel workers (SnapshotOptions). It
  // reads the state of its grain's fold part (rollups.ts FOLD_PARTS).
  const grain = options.forceRaw ? null : chooseGrain(input.groupBy, clientFromMetadata(input.filters));
  return inSnapshot(
    readDb(ctx),
    ctx.engine,
    (db, fold) => buildReportIn({ ...ctx, db }, input, options, fold),
    {
      serial: grain !== null,
      part: grain === null ? undefined : foldPartOf(grain),
      adjustmentsOf: adjustmentsOf(ctx.org.id),
    },
  );
}

async function buildReportIn(ctx: OrgCtx, input: ReportInput, options: ReportOptions, fold: FoldView) {
  const { query, meta } = await prepare(ctx, input, options, fold);
  // Without `top` every group is a row: the query need not count them. On PostgreSQL they are
  // also sorted here (order.ts), which costs less than a Sort over the aggregate's wide rows;
  // SQLite sorts them more cheaply itself.
  const cut = input.top !== null;
  const ordered = cut || ctx.engine === 'sqlite';
  const rows = await selectArrays(ctx.db, query(cut, ordered).compile());
  if (!ordered) sortReportRows(rows, input.groupBy, input.sort);
  // With `top`, every row carries the number of groups last (aggregate-sql.ts).
  const first = rows[0];
  const totalGroups = !cut ? rows.length : first === undefined ? 0 : Number(first[first.length - 1]);
  return {
    meta: meta(totalGroups),
    currency: ctx.org.currency,
    rows: rows.map((row) => toReportRow(input.groupBy, row)),
  };
}

export type Report = Awaited<ReturnType<typeof buildReport>>;

/** The same rows as `buildReport`, one at a time, for exports of any size. */
export async function* streamReport({
  ctx,
  input,
}: {
  ctx: OrgCtx;
  input: ReportInput;
}): AsyncGenerator<ReportRow> {
  // Planned in the statement's own snapshot (SQLite: a statement into a temporary table;
  // PostgreSQL: a cursor), which reads the watermark itself: the month rows then hold exactly the
  // days before the monthsThrough the plan was made with (rollups.ts monthsThroughAt). The one
  // read here is the floor its tail is planned from (storage/tail.ts TailMark).
  const rows = streamRows(writeDb(ctx), ctx.engine, async (db) => {
    const grain = chooseGrain(input.groupBy, clientFromMetadata(input.filters));
    const part = grain === null ? undefined : foldPartOf(grain);
    const { watermark, coarseThrough, monthsThrough, adjusted } = await readFoldState(
      db,
      part,
      adjustmentsOf(ctx.org.id),
    );
    const { query } = await prepare(
      { ...ctx, db },
      input,
      {},
      { watermark: null, adjustWatermark: null, floor: watermark, coarseThrough, monthsThrough, adjusted },
    );
    return query(false, true);
  });
  for await (const row of rows) yield toReportRow(input.groupBy, row);
}
