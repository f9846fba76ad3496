import { sql, type RawBuilder } from 'kysely';
import type { DbOrTrx, Engine } from '../storage/db.js';
import type { IngestSeq } from '../storage/snapshot.js';
import { orgEventsBySeq, tailCondition, type TailMark } from '../storage/tail.js';
import { NUMBER_TEXT, type Dimension, type Metric, type ReportFilters } from './params.js';
import { KEYED, type Source } from './plan.js';
import { DAY_MS, SUMS, clientKey, grainColumn, sumColumn } from './rollups.js';

export interface AggregateSpec {
  engine: Engine;
  orgId: string;
  groupBy: readonly Dimension[];
  filters: ReportFilters;
  sources: readonly Source[];
  /**
   * Whether the organisation has entries in the adjustments ledger (hasAdjustments). Without
   * any, the query reads no adjustments and sums no review columns: reports of organisations
   * that never reviewed or restated cost what they did before the ledger.
   */
  adjustments: boolean;
  sort: Metric;
  top: number | null;
  /** Whether rows carry `total_groups`, the number of groups before `top` (exports do without). */
  totalGroups: boolean;
  /**
   * Whether the database sorts the rows (ORDER BY). Without it the caller sorts them
   * (order.ts); `top` needs it.
   */
  ordered: boolean;
}

type Side = Source['kind'];

function dayNumber(side: Side): RawBuilder<number> {
  return side === 'rollup' ? sql<number>`day` : sql<number>`(occurred_at / ${sql.lit(DAY_MS)})`;
}

/**
 * Whether the union carries clients as rollup keys ('' for none, 'c' + the id), turned into ids
 * only after the merge: one conversion per group instead of one per row. A report on raw
 * events only (the plain GROUP BY) groups by client_id as stored.
 */
function clientsAsKeys(spec: AggregateSpec): boolean {
  return spec.sources.some((s) => s.kind === 'rollup');
}

/** The group value of client key `key` (an expression): the client id, or null for none. */
function clientOfKey(key: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`CASE WHEN ${key} = '' THEN NULL ELSE substr(${key}, 2) END`;
}

/** A dimension's value on one side of the union; time buckets are epoch-day numbers or 'YYYY-MM'. */
function dimension(dim: Dimension, side: Side, spec: AggregateSpec): RawBuilder<unknown> {
  const day = dayNumber(side);
  switch (dim) {
    // Rollup rows name agents and task types in columns of the same name as events do.
    case 'agent':
      return sql`agent_id`;
    case 'task_type':
      return sql`task_type`;
    case 'client':
      if (!clientsAsKeys(spec)) return sql`client_id`;
      // As clientKey (rollups.ts) writes it: '' || NULL is NULL on both engines.
      return side === 'rollup' ? sql`client_key` : sql`COALESCE('c' || client_id, '')`;
    case 'day':
      return day;
    case 'week':
      // Epoch day 0 was a Thursday: day − (day + 3) mod 7 is the Monday of its ISO week.
      return sql`(${day} - ((${day} + 3) % 7))`;
    case 'month':
      return spec.engine === 'sqlite'
        ? sql`strftime('%Y-%m', ${day} * 86400, 'unixepoch')`
        : sql`to_char(to_timestamp(${day} * 86400) AT TIME ZONE 'UTC', 'YYYY-MM')`;
  }
}

/**
 * `metadata.KEY=VALUE`: a string equal to VALUE, the boolean VALUE names, or a number equal to
 * VALUE's. Numbers compare as numbers on both engines (1e-7, 0.0000001 and 1E-7 are one value),
 * never as their JSON text, which each engine writes its own way.
 */
function metadataMatch(engine: Engine, key: string, value: string): RawBuilder<unknown> {
  const number = NUMBER_TEXT.test(value) ? Number(value) : null;
  const finite = number !== null && Number.isFinite(number) ? number : null;
  if (engine === 'sqlite') {
    const type = sql`json_type(metadata -> ${key})`;
    const field = sql`(metadata ->> ${key})`;
    const matches = [sql`(${type} = 'text' AND ${field} = ${value})`];
    if (value === 'true' || value === 'false') matches.push(sql`${type} = ${value}`);
    // Bound as a double: SQLite compares it with an integer or a real by value.
    if (finite !== null) matches.push(sql`(${type} IN ('integer', 'real') AND ${field} = ${finite})`);
    return sql`(${sql.join(matches, sql` OR `)})`;
  }
  // jsonb equality compares numbers by value and never raises on a type mismatch.
  const candidates = [sql`to_jsonb(${value}::text)`];
  if (value === 'true' || value === 'false') candidates.push(sql`${value}::jsonb`);
  // The shortest text of the double, as stored numbers are (JavaScript wrote them).
  if (finite !== null) candidates.push(sql`to_jsonb(${String(finite)}::numeric)`);
  return sql`(metadata::jsonb -> ${key}::text) IN (${sql.join(candidates)})`;
}

/**
 * Where the tail starts: the watermark of the report's fold part (rollups.ts FOLD_PARTS), read
 * in the report's snapshot, or by the statement itself above a floor (exports; storage/tail.ts).
 */
function tailMark(source: Extract<Source, { kind: 'tail' }>): TailMark {
  return source.watermark === null
    ? { part: source.part, floor: source.floor }
    : { watermark: source.watermark };
}

function rawConditions(
  spec: AggregateSpec,
  source: Exclude<Source, { kind: 'rollup' }>,
  table: RawTable = 'events',
): RawBuilder<unknown>[] {
  const { filters } = spec;
  const where: RawBuilder<unknown>[] = [
    sql`org_id = ${spec.orgId}`,
    sql`occurred_at >= ${source.from}`,
    sql`occurred_at < ${source.to}`,
  ];
  if (filters.agentId !== undefined) where.push(sql`agent_id = ${filters.agentId}`);
  if (filters.taskType !== undefined) where.push(sql`task_type = ${filters.taskType}`);
  if (filters.clientId !== undefined) where.push(sql`client_id = ${filters.clientId}`);
  if (filters.outcome !== undefined) where.push(sql`outcome = ${filters.outcome}`);
  if (table === 'events') {
    for (const [key, value] of filters.metadata) where.push(metadataMatch(spec.engine, key, value));
  } else if (filters.metadata.length > 0) {
    // An adjustment carries its event's dimensions but not its metadata: the event is read.
    const matches = filters.metadata.map(([key, value]) => metadataMatch(spec.engine, key, value));
    where.push(
      sql`EXISTS (SELECT 1 FROM events AS adjusted WHERE adjusted.org_id = ${spec.orgId} AND adjusted.id = adjustments.event_id AND ${sql.join(matches, sql` AND `)})`,
    );
  }
  return where;
}

/** The tables a raw piece reads: the events, and the adjustments ledger's entries (src/ledger/). */
type RawTable = 'events' | 'adjustments';

/**
 * The events a raw piece reads, and through which index.
 * - The tail (events not folded yet) is short while the stage keeps up and may span the whole
 *   window: it is read from the watermark on, through events_ingest_seq (storage/tail.ts).
 * - SQLite reads a window by time (events_org_occurred): left to itself, its planner may walk
 *   the organisation's events by id to save a sort, reading all of them. (The events have no
 *   index by agent or task type since migration 0014: a filter by either narrows inside the
 *   window.)
 * The adjustments are read the same way, through their own indexes: the tail by organisation
 * and `ingest_seq` from their own watermark, a window by organisation and time.
 */
function rawFrom(
  spec: AggregateSpec,
  source: Exclude<Source, { kind: 'rollup' }>,
  table: RawTable,
): RawBuilder<unknown> {
  if (table === 'adjustments') {
    const indexed = (index: string) =>
      spec.engine === 'sqlite' ? sql` INDEXED BY ${sql.raw(index)}` : sql``;
    if (source.kind !== 'tail') return sql`adjustments${indexed('adjustments_org_occurred')}`;
    const seq = (value: IngestSeq) =>
      spec.engine === 'postgres' ? sql`${String(value)}::xid8` : sql`${value}`;
    const mark =
      source.adjustWatermark === null
        ? sql`(SELECT adjust_watermark FROM fold_state WHERE id = ${source.part})`
        : seq(source.adjustWatermark);
    return sql`(SELECT * FROM adjustments${indexed('adjustments_org_seq')} WHERE org_id = ${spec.orgId} AND ingest_seq >= ${mark}) AS adjustments`;
  }
  if (source.kind === 'tail')
    return orgEventsBySeq(spec.engine, spec.orgId, tailCondition(spec.engine, tailMark(source)));
  return spec.engine === 'sqlite' ? sql`events INDEXED BY events_org_occurred` : sql`events`;
}

/** A raw piece of one table: its rows one by one (`each`) or aggregated by group. */
function rawSide(
  spec: AggregateSpec,
  source: Exclude<Source, { kind: 'rollup' }>,
  table: RawTable,
  groups: RawBuilder<unknown>[],
  each: boolean,
): RawBuilder<unknown> {
  // Pieces taken away (a week minus its days outside the window, today minus the events
  // stamped after the window's end) count negatively.
  const minus = source.sign === -1 ? sql`-` : sql``;
  const where = sql.join(rawConditions(spec, source, table), sql` AND `);
  const from = sql`FROM ${rawFrom(spec, source, table)} WHERE ${where}`;
  const adjustment = table === 'adjustments';
  // An adjustment counts no event; an event has no review time (adjustments carry it).
  const values = {
    events: adjustment ? sql`0` : sql`1`,
    h: sql`hours_saved_micros`,
    c: sql`cost_saved_micros`,
    a: adjustment ? sql`agent_cost_micros` : sql`COALESCE(agent_cost_micros, 0)`,
    rh: adjustment ? sql`review_hours_micros` : sql`0`,
    rc: adjustment ? sql`review_cost_micros` : sql`0`,
  };
  const review = spec.adjustments;
  if (each) {
    const metrics = sql`${minus}${values.events} AS events, ${minus}${values.h} AS h, ${minus}${values.c} AS c, ${minus}${values.a} AS a`;
    const reviews = review ? [sql`${minus}${values.rh} AS rh, ${minus}${values.rc} AS rc`] : [];
    return sql`SELECT ${sql.join([...groups, metrics, ...reviews])} ${from}`;
  }
  const positions = spec.groupBy.map((_, i) => sql.lit(i + 1));
  // group_by is never empty (parseGroupBy), so there is always something to group by.
  const groupBy = sql` GROUP BY ${sql.join(positions)}`;
  // Sums of micro-units can pass 2^63 (README "Limits"): PostgreSQL sums bigints into numeric
  // (as the rollup sums are stored), SQLite through total() (microSum).
  const sum = (value: RawBuilder<unknown>) => sql`${minus}${microSum(spec.engine, value)}`;
  const count = adjustment ? sql`0` : sql`${minus}COUNT(*)`;
  const metrics = sql`${count} AS events, ${sum(values.h)} AS h, ${sum(values.c)} AS c, ${sum(values.a)} AS a`;
  const reviews = review ? [sql`${sum(values.rh)} AS rh, ${sum(values.rc)} AS rc`] : [];
  return sql`SELECT ${sql.join([...groups, metrics, ...reviews])} ${from}${groupBy}`;
}

function sideQuery(spec: AggregateSpec, source: Source): RawBuilder<unknown> {
  const groups = spec.groupBy.map((d, i) => sql`${dimension(d, source.kind, spec)} AS ${sql.ref(`g${i}`)}`);
  // Pieces taken away (a week minus its days outside the window, today minus the events
  // stamped after the window's end) count negatively.
  const minus = source.sign === -1 ? sql`-` : sql``;
  if (source.kind !== 'rollup') {
    const keyed = spec.groupBy.filter((d) => KEYED.includes(d)).length;
    // An edge of a window the rollups answer, grouped by two or three keys: its few thousand
    // events rarely share a group, so they go into the outer GROUP BY one by one, like rollup
    // rows, instead of through an aggregate of their own. By one key they fall into a few
    // hundred groups, and aggregating them first is cheaper.
    const each = keyed >= 2 && spec.sources.some((s) => s.kind === 'rollup');
    const events = rawSide(spec, source, 'events', groups, each);
    // The events, then the adjustments of the same piece: rollup rows hold both.
    if (!spec.adjustments) return events;
    return sql`${events} UNION ALL ${rawSide(spec, source, 'adjustments', groups, each)}`;
  }
  // The key's order: the grain's rows of one bucket are one range of days.
  const { filters } = spec;
  const where = [
    sql`org_id = ${spec.orgId}`,
    sql`grain = ${grainColumn(source.grain, source.bucket)}`,
    sql`day >= ${source.fromDay}`,
    sql`day < ${source.toDay}`,
  ];
  // The grain keeps every filtered dimension (chooseGrain), so filters apply to its columns.
  if (filters.agentId !== undefined) where.push(sql`agent_id = ${filters.agentId}`);
  if (filters.taskType !== undefined) where.push(sql`task_type = ${filters.taskType}`);
  if (filters.clientId !== undefined) where.push(sql`client_key = ${clientKey(filters.clientId)}`);
  // Rollup rows go into the outer GROUP BY as they are: one merge of all rows instead of an
  // aggregate per piece and another of their groups.
  // Every row holds the sums of all its events and of each outcome's (rollups.ts).
  const [events, h, c, a, rh, rc] = SUMS.map((sum) => sql.ref(sumColumn(sum, filters.outcome)));
  // A row without an event of the filtered outcome adds nothing: it stays out of the merge.
  if (filters.outcome !== undefined) where.push(sql`${events} <> 0`);
  const values = sql`${minus}${events} AS events, ${minus}${h} AS h, ${minus}${c} AS c, ${minus}${a} AS a`;
  const reviews = spec.adjustments ? [sql`${minus}${rh} AS rh, ${minus}${rc} AS rc`] : [];
  return sql`SELECT ${sql.join([...groups, values, ...reviews])} FROM report_rollups WHERE ${sql.join(where, sql` AND `)}`;
}

/** Each metric from the columns events, h, c and a, each read through `column`; net is c − a. */
function metrics(column: (name: string) => RawBuilder<number>): Record<Metric, RawBuilder<number>> {
  return {
    events: column('events'),
    hours_saved: column('h'),
    cost_saved: column('c'),
    agent_cost: column('a'),
    net_saved: sql<number>`(${column('c')} - ${column('a')})`,
  };
}

/**
 * A sum of micro-units, which can pass 2^63 (README "Limits"). PostgreSQL: SUM, exact (bigints
 * and numerics add into numeric). SQLite: total(), which adds integers exactly until they would
 * overflow and goes on in floating point instead of raising "integer overflow" as SUM() does;
 * its result is a REAL, the same number below 2^53.
 */
export function microSum(engine: Engine, value: RawBuilder<unknown>): RawBuilder<number> {
  return engine === 'postgres' ? sql<number>`SUM(${value})` : sql<number>`total(${value})`;
}

/**
 * The merged sums: micro-units through microSum, which PostgreSQL sorts and sends as numeric;
 * counts cannot reach 2^63, and PostgreSQL casts theirs back to bigint.
 */
function metricSql(engine: Engine): Record<Metric, RawBuilder<number>> {
  return metrics((column) =>
    column !== 'events'
      ? microSum(engine, sql.ref(`u.${column}`))
      : engine === 'postgres'
        ? sql<number>`CAST(SUM(${sql.ref(`u.${column}`)}) AS bigint)`
        : sql<number>`SUM(${sql.ref(`u.${column}`)})`,
  );
}

const TEXT_DIMENSIONS: readonly Dimension[] = ['agent', 'task_type', 'client', 'month'];

/**
 * The report as one SELECT: the sources' partial aggregates, merged by group, sorted (when
 * `ordered`) by the metric descending and then by the group values ascending (byte order, no
 * client last; order.ts sorts the same way), with
 * the number of groups before `top` alongside every row. Its columns, in this order: the group
 * values g0…gN in group_by order (time buckets as epoch-day numbers or 'YYYY-MM'), events, h, c,
 * a, rh, rc (micro-unit sums; rh and rc the review hours and cost), then total_groups when asked for. Callers read the rows as arrays.
 */
export function aggregateQuery(db: DbOrTrx, spec: AggregateSpec) {
  const union = sql.join(
    spec.sources.map((s) => sideQuery(spec, s)),
    sql` UNION ALL `,
  );
  const groups = spec.groupBy.map((_, i) => sql.ref(`u.g${i}`));
  const values = spec.groupBy.map((d, i) => {
    const ref = sql.ref(`u.g${i}`);
    return d === 'client' && clientsAsKeys(spec) ? clientOfKey(ref) : ref;
  });
  const metric = metricSql(spec.engine);
  const grouped = db
    .selectFrom(sql`(${union})`.as('u'))
    .groupBy(groups)
    .select(values.map((value, i) => sql`${value}`.as(`g${i}`)))
    .select([
      metric.events.as('events'),
      metric.hours_saved.as('h'),
      metric.cost_saved.as('c'),
      metric.agent_cost.as('a'),
      // Without adjustments there is no review time: no column to sum.
      (spec.adjustments ? microSum(spec.engine, sql.ref('u.rh')) : sql<number>`0`).as('rh'),
      (spec.adjustments ? microSum(spec.engine, sql.ref('u.rc')) : sql<number>`0`).as('rc'),
    ])
    // A group whose events were all taken away again (they lie outside the window), or whose
    // rollup rows hold no event of the filtered outcome, is no group.
    .having(metric.events, '>', 0);
  if (spec.top !== null && !spec.ordered) throw new Error('top needs the rows ordered by the database');
  if (!spec.totalGroups) {
    const order = orderBy(spec, metric[spec.sort], values);
    return grouped
      .$if(spec.ordered, (q) => q.orderBy(order))
      .$if(spec.top !== null, (q) => q.limit(spec.top as number));
  }
  // The groups once into a CTE, counted and cut from there: cheaper than COUNT(*) OVER () over
  // every group.
  const outputs = spec.groupBy.map((_, i) => sql.ref(`g.g${i}`));
  const sorted = metrics((column) => sql<number>`${sql.ref(`g.${column}`)}`)[spec.sort];
  return db
    .with(
      (cte) => cte('g').materialized(),
      () => grouped,
    )
    .selectFrom('g')
    .selectAll('g')
    .select(sql<number>`(SELECT COUNT(*) FROM g)`.as('total_groups'))
    .$if(spec.ordered, (q) => q.orderBy(orderBy(spec, sorted, outputs)))
    .$if(spec.top !== null, (q) => q.limit(spec.top as number));
}

/** The metric descending, then the group values ascending in byte order, no value last. */
function orderBy(
  spec: AggregateSpec,
  metric: RawBuilder<unknown>,
  values: readonly RawBuilder<unknown>[],
): RawBuilder<unknown> {
  const tieBreaks = spec.groupBy.map((d, i) => {
    const value = values[i] as RawBuilder<unknown>;
    const collated =
      spec.engine === 'postgres' && TEXT_DIMENSIONS.includes(d) ? sql`${value} COLLATE "C"` : value;
    return sql`${collated} ASC NULLS LAST`;
  });
  return sql`${metric} DESC, ${sql.join(tieBreaks)}`;
}
