import { SqliteAdapter } from 'kysely';
import { OUTCOMES, type Outcome } from '../orgs/organizations.js';
import type { DbOrTrx } from '../storage/db.js';
import { insertRows, runEachRow, type PgType } from '../storage/insert-rows.js';
import type { EventRow, ReportRollupsTable } from '../storage/schema.js';

export const DAY_MS = 86_400_000;

/** The dimensions a rollup grain can keep. */
export type Keyed = 'agent' | 'task_type' | 'client';

/**
 * The grains, each with the dimensions its rows are by: one for every combination of agent,
 * task type and client. A report uses the grain whose dimensions are exactly the ones its
 * group_by and filters touch; only `metadata.*` filters (other than client_id) run on raw events.
 */
export const GRAINS = {
  all: [],
  agent: ['agent'],
  task_type: ['task_type'],
  client: ['client'],
  'agent+task_type': ['agent', 'task_type'],
  'agent+client': ['agent', 'client'],
  'task_type+client': ['task_type', 'client'],
  'agent+task_type+client': ['agent', 'task_type', 'client'],
} as const satisfies Record<string, readonly Keyed[]>;
export type Grain = keyof typeof GRAINS;

/** Every grain. */
export const ALL_GRAINS = Object.keys(GRAINS) as readonly Grain[];

/**
 * The time buckets of rollup rows. Every grain has day rows. Grains of two or three dimensions
 * have many rows a day (thousands for agent × client), so they also keep coarser rows, so that a
 * long window reads a few coarse buckets instead of every day (see plan.ts):
 * - `month`: a calendar month;
 * - `week`: an ISO week (Monday to Sunday) cut at month ends, so a week running over two months
 *   has two rows, one per month, and a month is exactly its weeks.
 * Each bucket lies inside one bucket of every coarser kind, and a bucket row's `day` is its first
 * day, so a row's ISO week and month are those of its `day`. (Half weeks were dropped by
 * migration 0012: they cost the folding stage a quarter of its writes and saved reports only a
 * few rows at a window's edges.)
 */
export type Bucket = 'day' | 'week' | 'month';

/**
 * The parts of the folding stage (DESIGN §11): each folds the rollups of its grains behind a
 * watermark of its own (its row of `fold_state`), under an advisory lock of its own, so that on
 * PostgreSQL a backlog folds on two connections at once (fold/backlog.ts foldBacklog), while a report
 * reads the part of its one grain. The first part also writes usage and the webhook messages,
 * and its row is the one usage reads. The split balances a random backfill (200,000 events over
 * 89 days, on PostgreSQL: part 1's rollups took 10.8–11.0 s, part 2's 10.6–11.3 s, all of them
 * in one transaction 18.6–22.5 s and the two parts side by side 12.2–12.8 s; the three-key
 * grain's day, week and month rows alone took 8.4 s).
 */
export const FOLD_PARTS = [
  { id: 1, grains: ['all', 'agent', 'task_type', 'client', 'agent+task_type', 'agent+client'] },
  { id: 2, grains: ['task_type+client', 'agent+task_type+client'] },
] as const satisfies ReadonlyArray<{ id: number; grains: readonly Grain[] }>;

/** The id of a fold part (its row of `fold_state`). */
export type FoldPartId = (typeof FOLD_PARTS)[number]['id'];

/** Every part's id, in the order a pass of several parts folds them (and takes their locks). */
export const FOLD_PART_IDS: readonly FoldPartId[] = FOLD_PARTS.map((p) => p.id);

/** The part whose rows of `fold_state` and of the rollups hold a grain's rows. */
export function foldPartOf(grain: Grain): FoldPartId {
  const part = FOLD_PARTS.find((p) => (p.grains as readonly Grain[]).includes(grain));
  if (part === undefined) throw new Error(`grain ${grain} is in no fold part`);
  return part.id;
}

/** The grains of a part. */
export function partGrains(part: FoldPartId): readonly Grain[] {
  return FOLD_PARTS.find((p) => p.id === part)?.grains ?? [];
}

/** Whether a grain keeps week and month rows besides its day rows. */
export function hasCoarseBuckets(grain: Grain): boolean {
  return GRAINS[grain].length >= 2;
}

/** The `grain` column of a grain's rows of one bucket: day rows carry the bare name. */
export function grainColumn(grain: Grain, bucket: Bucket): string {
  return bucket === 'day' ? grain : `${grain}/${bucket}`;
}

/** The epoch day of the Monday of the ISO week of epoch day `day` (day 0 was a Thursday). */
function weekStart(day: number): number {
  return day - ((((day + 3) % 7) + 7) % 7);
}

/** The epoch day of the first of the UTC month of epoch day `day`. */
export function monthStart(day: number): number {
  const date = new Date(day * DAY_MS);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1) / DAY_MS;
}

/** The first epoch day of the month after the one of epoch day `day`. */
function nextMonthStart(day: number): number {
  const date = new Date(day * DAY_MS);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1) / DAY_MS;
}

/** The bucket of kind `bucket` that holds epoch day `day`: its first day and the next bucket's. */
export function bucketAround(bucket: Bucket, day: number): [number, number] {
  if (bucket === 'day') return [day, day + 1];
  const monthFrom = monthStart(day);
  const monthTo = nextMonthStart(day);
  if (bucket === 'month') return [monthFrom, monthTo];
  const monday = weekStart(day);
  return [Math.max(monday, monthFrom), Math.min(monday + 7, monthTo)];
}

/**
 * The sums a rollup row keeps, each over every outcome and over each outcome's events. Review
 * hours and review cost come from adjustments only (src/ledger/): events add 0 to them.
 */
export const SUMS = [
  'events',
  'hours_saved_micros',
  'cost_saved_micros',
  'agent_cost_micros',
  'review_hours_micros',
  'review_cost_micros',
] as const;
type Sum = (typeof SUMS)[number];

type SumColumn = Sum | `${Outcome}_${Sum}`;

/** The column of a sum over every event (no outcome) or over the events of one outcome. */
export function sumColumn(sum: Sum, outcome?: Outcome): SumColumn {
  return outcome === undefined ? sum : `${outcome}_${sum}`;
}

/** Every sum column: one row holds all outcomes together and each outcome apart. */
export const SUM_COLUMNS: readonly SumColumn[] = [undefined, ...OUTCOMES].flatMap((outcome) =>
  SUMS.map((sum) => sumColumn(sum, outcome)),
);

/**
 * The sum columns events add to (SUM_COLUMNS without the review ones, which only adjustments
 * fill): an event's upsert leaves those to their default, 0, and does not touch them.
 */
export const EVENT_SUM_COLUMNS: readonly SumColumn[] = SUM_COLUMNS.filter(
  (column) => !column.endsWith('review_hours_micros') && !column.endsWith('review_cost_micros'),
);

/** Rollup key of a client: a prefix keeps "no client" ('') apart from an empty client id ('c'). */
export function clientKey(clientId: string | null): string {
  return clientId === null ? '' : `c${clientId}`;
}

export type RollupDelta = Omit<ReportRollupsTable, 'shard'> & { shard: number };

const GRAIN_ENTRIES = (Object.entries(GRAINS) as Array<[Grain, readonly Keyed[]]>).map(([grain, dims]) => ({
  grain,
  agent: dims.includes('agent'),
  taskType: dims.includes('task_type'),
  client: dims.includes('client'),
  coarse: hasCoarseBuckets(grain)
    ? {
        week: grainColumn(grain, 'week'),
        month: grainColumn(grain, 'month'),
      }
    : null,
}));

/**
 * The weeks the folding stage keeps rows of (DESIGN §11): a week row is written only once its
 * week has ended. Until then its days' rows answer for it, so an event of the current week writes
 * no week rows (they were a quarter of the stage's writes); month rows are left to the days
 * likewise until each day ends (monthsThroughAt). `coarseThrough`, kept in `fold_state`, is the
 * first day of the week (cut at month ends) that the stage last saw begin: every week that ends
 * by then has complete rows; the stage builds a week's rows from its days' when it passes its end
 * (fold/rollups.ts closeWeeks), and back-dated events fold into closed weeks as they come, except
 * a backlog's, which moves `coarseThrough` back before its days until it is folded (fold/plan.ts
 * planPart). Reports read a week row only when its week is closed (plan.ts).
 */
export function coarseThroughAt(nowMs: number): number {
  return bucketAround('week', Math.floor(nowMs / DAY_MS))[0];
}

/**
 * The days the folding stage keeps month rows of (DESIGN §11): every day before today. An event
 * of today writes its eight day rows only, not the four month rows beside them: under live
 * traffic, whose events are of today and rarely share a two- or three-key row within a pass,
 * those were about half of the stage's upserts (bench:track: the README's figures). Keeping month
 * rows from the first event on was measured against leaving the current month to its weeks and
 * days, which made reports by two or three keys up to 2.3× slower; leaving only today to its day
 * rows costs a report reading this month one day of rows more. `monthsThrough`, kept in
 * `fold_state`, is the first day whose events the month rows do not hold: when the stage sees a
 * day end it adds that day's rows to its month's (fold/rollups.ts closeMonthDays), and
 * back-dated events fold into the month rows of the days before it as they come (a backlog moves
 * it back instead, fold/plan.ts planPart). Reports read
 * the month of `monthsThrough` as its rows plus the day rows from `monthsThrough` on (plan.ts).
 */
export function monthsThroughAt(nowMs: number): number {
  return Math.floor(nowMs / DAY_MS);
}

/** The first days of the week and month of a day, for the last days seen (a batch has few). */
const COARSE_STARTS = new Map<number, { week: number; month: number }>();

function coarseStarts(day: number): { week: number; month: number } {
  let starts = COARSE_STARTS.get(day);
  if (starts === undefined) {
    starts = {
      week: bucketAround('week', day)[0],
      month: monthStart(day),
    };
    if (COARSE_STARTS.size >= 1000) COARSE_STARTS.clear();
    COARSE_STARTS.set(day, starts);
  }
  return starts;
}

interface Sums {
  events: number;
  hours: number;
  cost: number;
  agentCost: number;
}

const OUTCOME_COLUMNS = Object.fromEntries(
  OUTCOMES.map((outcome) => [outcome, SUMS.map((sum) => sumColumn(sum, outcome))]),
) as Record<Outcome, SumColumn[]>;

const ZERO_SUMS = Object.fromEntries(SUM_COLUMNS.map((column) => [column, 0])) as Record<SumColumn, number>;

function outcomeOf(row: EventRow): Outcome {
  const outcome = row.outcome as Outcome;
  if (!OUTCOMES.includes(outcome)) throw new Error(`unknown outcome ${row.outcome}`);
  return outcome;
}

/**
 * Whether rollupDeltas adds these events' micro-units exactly: its sums are JavaScript numbers,
 * exact while every partial sum stays within 2^53 (about 1,000 events at the maxima of README
 * "Limits" pass it). Beyond, the database adds them (foldRollups: numeric on PostgreSQL).
 */
export function deltasExact(rows: readonly EventRow[]): boolean {
  let total = 0;
  for (const row of rows) {
    total +=
      Math.abs(Number(row.hours_saved_micros)) +
      Math.abs(Number(row.cost_saved_micros)) +
      Math.abs(Number(row.agent_cost_micros ?? 0));
  }
  return total <= Number.MAX_SAFE_INTEGER;
}

/**
 * The rollup increments of some events, merged by rollup key (one delta per key): day rows, week
 * rows of the weeks closed by `coarseThrough` (coarseThroughAt) and month rows of the days before
 * `monthsThrough` (monthsThroughAt); by default every week and every day.
 */
export function rollupDeltas(
  rows: readonly EventRow[],
  shard = 0,
  coarseThrough = Infinity,
  monthsThrough = Infinity,
  grains: readonly Grain[] = ALL_GRAINS,
): RollupDelta[] {
  const entries =
    grains === ALL_GRAINS ? GRAIN_ENTRIES : GRAIN_ENTRIES.filter((g) => grains.includes(g.grain));
  // Events with the same keys first (one map entry per event), then each distinct event key
  // into its 16 rollup rows: a batch of similar events builds few rollup keys.
  const events = new Map<
    string,
    { row: EventRow; outcome: Outcome; day: number; client: string; sums: Sums }
  >();
  for (const row of rows) {
    const day = Math.floor(Number(row.occurred_at) / DAY_MS);
    // A batch can hold several organisations' events (group commit): the org is part of the
    // key. Agent and task type are free text: their lengths keep two keys from running
    // together (the client key comes last).
    const client = clientKey(row.client_id);
    const id = `${row.org_id} ${row.outcome} ${day} ${row.agent_id.length}:${row.agent_id}${row.task_type.length}:${row.task_type}${client}`;
    let entry = events.get(id);
    if (!entry) {
      const sums = { events: 0, hours: 0, cost: 0, agentCost: 0 };
      entry = { row, outcome: outcomeOf(row), day, client, sums };
      events.set(id, entry);
    }
    entry.sums.events += 1;
    entry.sums.hours += Number(row.hours_saved_micros);
    entry.sums.cost += Number(row.cost_saved_micros);
    entry.sums.agentCost += Number(row.agent_cost_micros ?? 0);
  }

  const byKey = new Map<string, RollupDelta>();
  const add = (
    orgId: string,
    grain: string,
    day: number,
    agentId: string,
    taskType: string,
    client: string,
    outcome: Outcome,
    sums: Sums,
  ) => {
    const id = `${orgId} ${grain} ${day} ${agentId.length}:${agentId}${taskType.length}:${taskType}${client}`;
    let delta = byKey.get(id);
    if (!delta) {
      const keys = {
        org_id: orgId,
        grain,
        day,
        agent_id: agentId,
        task_type: taskType,
        client_key: client,
        shard,
      };
      delta = Object.assign(keys, ZERO_SUMS);
      byKey.set(id, delta);
    }
    delta.events += sums.events;
    delta.hours_saved_micros += sums.hours;
    delta.cost_saved_micros += sums.cost;
    delta.agent_cost_micros += sums.agentCost;
    const [events, hours, cost, agentCost] = OUTCOME_COLUMNS[outcome] as [
      SumColumn,
      SumColumn,
      SumColumn,
      SumColumn,
    ];
    delta[events] += sums.events;
    delta[hours] += sums.hours;
    delta[cost] += sums.cost;
    delta[agentCost] += sums.agentCost;
  };
  for (const { row, outcome, day, client: eventClient, sums } of events.values()) {
    const starts = coarseStarts(day);
    for (const g of entries) {
      const agentId = g.agent ? row.agent_id : '';
      const taskType = g.taskType ? row.task_type : '';
      const client = g.client ? eventClient : '';
      add(row.org_id, g.grain, day, agentId, taskType, client, outcome, sums);
      if (g.coarse !== null) {
        if (day < coarseThrough)
          add(row.org_id, g.coarse.week, starts.week, agentId, taskType, client, outcome, sums);
        if (day < monthsThrough)
          add(row.org_id, g.coarse.month, starts.month, agentId, taskType, client, outcome, sums);
      }
    }
  }
  // Sorted so that concurrent transactions lock the rows they share in the same order.
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, delta]) => delta);
}

// PostgreSQL: deltas per statement (each column goes in as one array parameter).
const CHUNK = 1000;

const ROLLUP_COLUMNS = {
  org_id: 'text',
  grain: 'text',
  day: 'bigint',
  agent_id: 'text',
  task_type: 'text',
  client_key: 'text',
  shard: 'bigint',
  // Sums of micro-units can pass 2^63 (migration 0011); counts cannot.
  // An event adds nothing to the review columns (EVENT_SUM_COLUMNS).
  ...Object.fromEntries(
    EVENT_SUM_COLUMNS.map((column) => [column, column.endsWith('events') ? 'bigint' : 'numeric']),
  ),
} as { readonly [K in keyof RollupDelta]: PgType };

/** The upsert that adds `deltas` to the rollups, unexecuted, so it can join a larger statement. */
export function upsertRollups(db: DbOrTrx, deltas: readonly RollupDelta[]) {
  return insertRows(db, 'report_rollups', ROLLUP_COLUMNS, deltas).onConflict((oc) =>
    oc
      .columns(['org_id', 'grain', 'day', 'agent_id', 'task_type', 'client_key', 'shard'])
      .doUpdateSet((eb) =>
        Object.fromEntries(
          EVENT_SUM_COLUMNS.map((column) => [
            column,
            eb(`report_rollups.${column}`, '+', eb.ref(`excluded.${column}`)),
          ]),
        ),
      ),
  );
}

/**
 * Adds deltas to the rollups. SQLite runs one prepared one-row upsert per delta (cheaper than
 * building and parsing a multi-row VALUES list of 23 columns per row on every batch, as for the
 * events); PostgreSQL one multi-row upsert per chunk.
 */
export async function applyRollupDeltas(db: DbOrTrx, deltas: readonly RollupDelta[]): Promise<void> {
  if (db.getExecutor().adapter instanceof SqliteAdapter) {
    await runEachRow(db, 'upsert report_rollups', ROLLUP_COLUMNS, deltas, (placeholders) =>
      upsertRollups(db, [placeholders]),
    );
    return;
  }
  for (let i = 0; i < deltas.length; i += CHUNK)
    await upsertRollups(db, deltas.slice(i, i + CHUNK)).execute();
}

/**
 * Adds events to the rollups in the open transaction `db`, as the folding stage would with
 * `coarseThrough` and `monthsThrough` (by default every coarse bucket: the migrations' and the
 * seeds' rows).
 */
export async function recordRollups(
  db: DbOrTrx,
  rows: readonly EventRow[],
  shard = 0,
  coarseThrough = Infinity,
  monthsThrough = Infinity,
): Promise<void> {
  await applyRollupDeltas(db, rollupDeltas(rows, shard, coarseThrough, monthsThrough));
}
