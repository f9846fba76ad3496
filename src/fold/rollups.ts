import { sql, type RawBuilder } from 'kysely';
import type { DbOrTrx, Engine } from '../storage/db.js';
import type { IngestSeq } from '../storage/snapshot.js';
import { OUTCOMES } from '../orgs/organizations.js';
import {
  ALL_GRAINS,
  DAY_MS,
  GRAINS,
  EVENT_SUM_COLUMNS,
  SUM_COLUMNS,
  grainColumn,
  hasCoarseBuckets,
  type Bucket,
  type Grain,
} from '../reports/rollups.js';

/**
 * The folding stage's rollup step (DESIGN §11): adds the events with `from <= ingest_seq < to`
 * to the report rollups in the database itself, one INSERT … SELECT … GROUP BY … ON CONFLICT
 * per grain and bucket, instead of building each event's rollup rows in the service and sending
 * them back (a backfill's events rarely share their two- and three-key rows, ~14 per event).
 * The rows are the ones rollupDeltas (reports/rollups.ts) builds with the same `coarseThrough` and
 * `monthsThrough`: day rows, week rows of closed weeks and month rows of closed days only; the
 * rollup tests compare the two. `grains`: those of one fold part (reports/rollups.ts FOLD_PARTS), or all.
 * `firstDay`, when known, is the earliest day of the events: a week or month statement that no
 * event of it reaches (a pass whose weeks and days are left to their day rows, plan.ts
 * planPart) is not run.
 */
export async function foldRollups(
  db: DbOrTrx,
  engine: Engine,
  from: IngestSeq,
  to: IngestSeq,
  coarseThrough = Infinity,
  monthsThrough = Infinity,
  grains: readonly Grain[] = ALL_GRAINS,
  firstDay = -Infinity,
  source: FoldSource = 'events',
): Promise<void> {
  // Events add nothing to the review columns: their statement leaves them out (EVENT_SUM_COLUMNS).
  const { columns, values, updates } = source === 'events' ? EVENT_SUMS[engine] : ADJUSTMENT_SUMS[engine];
  for (const grain of grains) {
    const kept: readonly string[] = GRAINS[grain];
    const buckets: Bucket[] = hasCoarseBuckets(grain) ? ['day', 'week', 'month'] : ['day'];
    for (const bucket of buckets) {
      const agent = kept.includes('agent') ? sql`agent_id` : sql`''`;
      const taskType = kept.includes('task_type') ? sql`task_type` : sql`''`;
      const client = kept.includes('client') ? sql`COALESCE('c' || client_id, '')` : sql`''`;
      const start = bucketStart(engine, bucket);
      // Closed weeks and days only: `coarseThrough` is the first day of a week, so an event is in
      // a closed week exactly when its day is before it.
      const through = bucket === 'week' ? coarseThrough : bucket === 'month' ? monthsThrough : Infinity;
      if (firstDay >= through) continue;
      const closed = Number.isFinite(through) ? sql`AND occurred_at < ${through * DAY_MS}` : sql``;
      await sql`
        INSERT INTO report_rollups (org_id, grain, day, agent_id, task_type, client_key, shard, ${columns})
        SELECT org_id, ${grainColumn(grain, bucket)}, ${start}, ${agent}, ${taskType}, ${client}, 0, ${values}
        FROM ${sql.table(source)}
        WHERE ${seqRange(engine, from, to)} ${closed}
        GROUP BY org_id, 3, 4, 5, 6
        ON CONFLICT (org_id, grain, day, agent_id, task_type, client_key, shard) DO UPDATE SET ${updates}`.execute(
        db,
      );
    }
  }
}

/**
 * Closes the weeks that end between two values of `coarseThrough` (reports/rollups.ts coarseThroughAt),
 * in the folding stage's transaction before it folds with the new value: their rows are built
 * from their days' rows, replacing any row they had (written before weeks were kept this way:
 * migration 0013).
 */
export async function closeWeeks(
  db: DbOrTrx,
  engine: Engine,
  from: number,
  to: number,
  grains: readonly Grain[] = ALL_GRAINS,
): Promise<void> {
  await eachCoarseGrain(db, from, to, grains, async (orgId, grain, adjusted) => {
    const week = grainColumn(grain, 'week');
    await sql`DELETE FROM report_rollups
      WHERE org_id = ${orgId} AND grain = ${week} AND day >= ${from} AND day < ${to}`.execute(db);
    await sql`${daysInto(engine, orgId, grain, 'week', from, to, RESUMS[adjusted ? 'all' : 'events'])}`.execute(
      db,
    );
  });
}

/**
 * Closes the days between two values of `monthsThrough` (reports/rollups.ts monthsThroughAt), in the
 * folding stage's transaction before it folds with the new value: their rows, which hold the
 * events folded so far, are added to their months' rows.
 */
export async function closeMonthDays(
  db: DbOrTrx,
  engine: Engine,
  from: number,
  to: number,
  grains: readonly Grain[] = ALL_GRAINS,
): Promise<void> {
  await eachCoarseGrain(db, from, to, grains, async (orgId, grain, adjusted) => {
    const resums = RESUMS[adjusted ? 'all' : 'events'];
    await sql`${daysInto(engine, orgId, grain, 'month', from, to, resums)}
      ON CONFLICT (org_id, grain, day, agent_id, task_type, client_key, shard) DO UPDATE SET ${resums.updates}`.execute(
      db,
    );
  });
}

/**
 * Takes the month rows of the months from `monthsFrom` (a month's first day) on out of the
 * rollups of `grains`, so that `months_through` can be set back to it: a pass then leaves the
 * days from there on to their day rows (plan.ts planPart), and closeMonthDays builds the months
 * again from their days as the stage closes them.
 */
export async function reopenMonths(db: DbOrTrx, monthsFrom: number, grains: readonly Grain[]): Promise<void> {
  await eachCoarseGrain(db, monthsFrom, Infinity, grains, async (orgId, grain) => {
    await sql`DELETE FROM report_rollups
      WHERE org_id = ${orgId} AND grain = ${grainColumn(grain, 'month')} AND day >= ${monthsFrom}`.execute(
      db,
    );
  });
}

/**
 * The day rows of `grains` in [from, to), of every organisation, counted up to `most` (past it,
 * `most + 1`): what closing the weeks and days of that range reads.
 */
export async function dayRowsUpTo(
  db: DbOrTrx,
  from: number,
  to: number,
  grains: readonly Grain[],
  most: number,
): Promise<number> {
  let counted = 0;
  await eachCoarseGrain(db, from, to, grains, async (orgId, grain) => {
    if (counted > most) return;
    const { rows } = await sql<{ n: unknown }>`
      SELECT COUNT(*) AS n FROM (
        SELECT 1 FROM report_rollups
        WHERE org_id = ${orgId} AND grain = ${grain} AND day >= ${from} AND day < ${to}
        LIMIT ${most - counted + 1}) AS kept`.execute(db);
    counted += Number(rows[0]?.n ?? 0);
  });
  return counted;
}

/**
 * The earliest day from `from` on that has day rows of `grains`, of any organisation (Infinity:
 * none): the days before it have no rows to close. The first row in the primary key's order, not
 * MIN(day): with statistics taken while the rollups were small (a backfill's), PostgreSQL
 * planned MIN(day) as an aggregate over every row from `from` on, 100,000–170,000 of them and
 * 0.3–0.9 s in bench:ingest (auto_explain), at every pass that closed a step.
 */
export async function firstDayRow(db: DbOrTrx, from: number, grains: readonly Grain[]): Promise<number> {
  let first = Infinity;
  await eachCoarseGrain(db, from, Infinity, grains, async (orgId, grain) => {
    const { rows } = await sql<{ day: unknown }>`
      SELECT day FROM report_rollups
      WHERE org_id = ${orgId} AND grain = ${grain} AND day >= ${from}
      ORDER BY day LIMIT 1`.execute(db);
    const day = rows[0]?.day;
    if (day !== null && day !== undefined) first = Math.min(first, Number(day));
  });
  return first;
}

/**
 * Runs `fn` for every organisation and grain of `grains` with coarse buckets when the day range
 * [from, to) is not empty: one organisation at a time, so that each statement reads a range of
 * the primary key.
 */
async function eachCoarseGrain(
  db: DbOrTrx,
  from: number,
  to: number,
  grains: readonly Grain[],
  fn: (orgId: string, grain: Grain, adjusted: boolean) => Promise<void>,
): Promise<void> {
  const coarse = grains.filter(hasCoarseBuckets);
  if (!(to > from) || coarse.length === 0) return;
  // With each organisation, whether it has any entry in the adjustments ledger (src/ledger/),
  // one index probe each: without one, its day rows' review sums are all 0.
  const { rows: orgs } = await sql<{ id: string; adjusted: unknown }>`
    SELECT id, EXISTS (SELECT 1 FROM adjustments WHERE adjustments.org_id = organizations.id) AS adjusted
    FROM organizations ORDER BY id`.execute(db);
  for (const { id, adjusted } of orgs) {
    for (const grain of coarse) await fn(id, grain, adjusted === true || Number(adjusted) === 1);
  }
}

/**
 * The INSERT of the sums of an organisation's day rows of a grain in [from, to) as rows of
 * `bucket`, summing the columns of `resums`.
 */
function daysInto(
  engine: Engine,
  orgId: string,
  grain: Grain,
  bucket: 'week' | 'month',
  from: number,
  to: number,
  resums: Resums,
): RawBuilder<unknown> {
  return sql`
    INSERT INTO report_rollups (org_id, grain, day, agent_id, task_type, client_key, shard, ${resums.columns})
    SELECT org_id, ${grainColumn(grain, bucket)}, ${bucketStart(engine, bucket, sql`day`)}, agent_id, task_type, client_key, 0, ${resums[engine]}
    FROM report_rollups
    WHERE org_id = ${orgId} AND grain = ${grain} AND day >= ${from} AND day < ${to}
    GROUP BY org_id, 3, agent_id, task_type, client_key`;
}

/** Day rows' sums added up into week and month rows: the columns, their sums, what a row adds. */
interface Resums {
  columns: RawBuilder<unknown>;
  /** SQLite: total(), as sumValues says. */
  sqlite: RawBuilder<unknown>;
  postgres: RawBuilder<unknown>;
  updates: RawBuilder<unknown>;
}

function resums(columns: readonly string[]): Resums {
  return {
    columns: sql.raw(columns.join(', ')),
    sqlite: sql.raw(columns.map((c) => (c.endsWith('events') ? `SUM(${c})` : `total(${c})`)).join(', ')),
    postgres: sql.raw(columns.map((c) => `SUM(${c})`).join(', ')),
    updates: sql.raw(columns.map((c) => `${c} = report_rollups.${c} + excluded.${c}`).join(', ')),
  };
}

/**
 * Every sum column, for an organisation with adjustments; for one without, the columns events
 * add to (EVENT_SUM_COLUMNS): its review sums are 0 in every row and stay at their default.
 */
const RESUMS = { all: resums(SUM_COLUMNS), events: resums(EVENT_SUM_COLUMNS) };

/** `from <= ingest_seq < to` (xid8 on PostgreSQL). */
export function seqRange(engine: Engine, from: IngestSeq, to: IngestSeq): RawBuilder<unknown> {
  return engine === 'postgres'
    ? sql`ingest_seq >= ${String(from)}::xid8 AND ingest_seq < ${String(to)}::xid8`
    : sql`ingest_seq >= ${from} AND ingest_seq < ${to}`;
}

/** The columns a rollup step writes, their sums, and what an existing row adds. */
interface StepSums {
  columns: RawBuilder<unknown>;
  values: RawBuilder<unknown>;
  updates: RawBuilder<unknown>;
}

function stepSums(engine: Engine, columns: readonly string[], values?: Record<string, string>): StepSums {
  return {
    columns: sql.raw(columns.join(', ')),
    values: sumValues(engine, values, columns),
    updates: sql.raw(columns.map((c) => `${c} = report_rollups.${c} + excluded.${c}`).join(', ')),
  };
}

/** What a rollup step folds: events, or the adjustments ledger's entries (src/ledger/). */
export type FoldSource = 'events' | 'adjustments';

const VALUES: Record<string, string> = {
  events: '1',
  hours_saved_micros: 'hours_saved_micros',
  cost_saved_micros: 'cost_saved_micros',
  agent_cost_micros: 'COALESCE(agent_cost_micros, 0)',
};

/** An adjustment counts no event; it adds its signed deltas, review time included. */
const ADJUSTMENT_COLUMN_VALUES: Record<string, string> = {
  events: '0',
  hours_saved_micros: 'hours_saved_micros',
  cost_saved_micros: 'cost_saved_micros',
  agent_cost_micros: 'agent_cost_micros',
  review_hours_micros: 'review_hours_micros',
  review_cost_micros: 'review_cost_micros',
};

/**
 * The sum of each SUM_COLUMNS column over the events: over all of them, and each outcome's.
 * Sums of micro-units can pass 2^63 (README "Limits"): PostgreSQL sums bigints into numeric, and
 * the rollup columns are numeric (migration 0011); SQLite's SUM() raises "integer overflow"
 * there, so they go through total(), which adds integers exactly until they overflow and goes
 * on in floating point after (the column keeps an integral REAL within 64 bits as an integer).
 */
function sumValues(
  engine: Engine,
  values: Record<string, string> = VALUES,
  columns: readonly string[] = SUM_COLUMNS,
): RawBuilder<unknown> {
  return sql.raw(
    columns
      .map((column) => {
        const outcome = OUTCOMES.find((o) => column.startsWith(`${o}_`));
        const name = outcome === undefined ? column : column.slice(outcome.length + 1);
        const value = values[name] ?? '0';
        const sum = engine === 'sqlite' && name !== 'events' ? 'total' : 'SUM';
        return outcome === undefined
          ? `${sum}(${value})`
          : `${sum}(CASE WHEN outcome = '${outcome}' THEN ${value} ELSE 0 END)`;
      })
      .join(', '),
  );
}

const EVENT_SUMS: Record<Engine, StepSums> = {
  sqlite: stepSums('sqlite', EVENT_SUM_COLUMNS),
  postgres: stepSums('postgres', EVENT_SUM_COLUMNS),
};

const ADJUSTMENT_SUMS: Record<Engine, StepSums> = {
  sqlite: stepSums('sqlite', SUM_COLUMNS, ADJUSTMENT_COLUMN_VALUES),
  postgres: stepSums('postgres', SUM_COLUMNS, ADJUSTMENT_COLUMN_VALUES),
};

/**
 * The first epoch day of the bucket of an epoch day, by default an event's (bucketAround in
 * reports/rollups.ts, in SQL); `day` may be a rollup row's, to build its week (closeWeeks).
 */
function bucketStart(
  engine: Engine,
  bucket: Bucket,
  day: RawBuilder<unknown> = sql`(occurred_at / 86400000)`,
): RawBuilder<unknown> {
  if (bucket === 'day') return day;
  const month =
    engine === 'sqlite'
      ? sql`CAST(julianday(date(${day} * 86400, 'unixepoch', 'start of month')) - 2440587.5 AS INTEGER)`
      : sql`CAST((date_trunc('month', (DATE '1970-01-01' + CAST(${day} AS integer))::timestamp)::date - DATE '1970-01-01') AS bigint)`;
  if (bucket === 'month') return month;
  // Epoch day 0 was a Thursday: day − (day + 3) mod 7 is the Monday of its ISO week, cut at the
  // month's first day.
  const monday = sql`(${day} - ((${day} + 3) % 7))`;
  return engine === 'sqlite' ? sql`max(${monday}, ${month})` : sql`GREATEST(${monday}, ${month})`;
}
