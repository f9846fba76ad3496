import {
  DAY_MS,
  GRAINS,
  bucketAround,
  foldPartOf,
  hasCoarseBuckets,
  monthStart,
  type Bucket,
  type FoldPartId,
  type Grain,
  type Keyed,
} from './rollups.js';
import { NUMBER_TEXT, type Dimension, type ReportFilters, type ReportRange } from './params.js';
import type { IngestSeq } from '../storage/snapshot.js';

/**
 * One piece of a report's window, added (sign 1) or taken away (sign −1): rollup buckets whose
 * first day is in [fromDay, toDay), raw events of a time span [from, to), or the tail: the
 * events of a time span not folded into the rollups yet (`ingest_seq >= watermark`; a null
 * watermark is read in the report's own statement, at or above `floor`).
 */
export type Source =
  | { kind: 'rollup'; grain: Grain; bucket: Bucket; fromDay: number; toDay: number; sign: 1 | -1 }
  | { kind: 'raw'; from: number; to: number; sign: 1 | -1 }
  | {
      kind: 'tail';
      from: number;
      to: number;
      sign: 1;
      watermark: IngestSeq | null;
      part: FoldPartId;
      /** With a null watermark: one of the part read earlier, or null (storage/tail.ts TailMark). */
      floor: IngestSeq | null;
      /**
       * The adjustments' watermark of the part (src/ledger/): the adjustments at or after it are
       * their tail; null: read in the report's own statement, as `watermark`.
       */
      adjustWatermark: IngestSeq | null;
    };

/** The dimensions the rollups key by; the others are time. */
export const KEYED: readonly Dimension[] = ['agent', 'task_type', 'client'];

/** The keyed dimensions a report touches through its group_by or its filters. */
function keyedDimensions(groupBy: readonly Dimension[], filters: ReportFilters): Set<Keyed> {
  const dims = new Set<Keyed>();
  for (const d of groupBy) if (KEYED.includes(d)) dims.add(d as Keyed);
  if (filters.agentId !== undefined) dims.add('agent');
  if (filters.taskType !== undefined) dims.add('task_type');
  if (filters.clientId !== undefined) dims.add('client');
  return dims;
}

/**
 * `metadata.client_id=V` as the client filter, so that the rollups can answer it: the client of
 * an event is its metadata.client_id (a string as is, a number as JavaScript writes it). The two
 * select the same events unless V names a boolean (the metadata filter also matches true/false)
 * or is a number written another way than JavaScript writes it ("1.0", "007", "1E3": the metadata
 * filter compares numbers by value); those stay metadata filters.
 */
export function clientFromMetadata(filters: ReportFilters): ReportFilters {
  const entry = filters.metadata.find(([key]) => key === 'client_id');
  if (entry === undefined) return filters;
  const value = entry[1];
  if (value === 'true' || value === 'false') return filters;
  if (NUMBER_TEXT.test(value) && String(Number(value)) !== value) return filters;
  if (filters.clientId !== undefined && filters.clientId !== value) return filters;
  return { ...filters, clientId: value, metadata: filters.metadata.filter((e) => e !== entry) };
}

/** The grain that keeps exactly the dimensions the report touches, or null when only raw events can answer. */
export function chooseGrain(groupBy: readonly Dimension[], filters: ReportFilters): Grain | null {
  if (filters.metadata.length > 0) return null;
  const dims = keyedDimensions(groupBy, filters);
  for (const [grain, kept] of Object.entries(GRAINS) as Array<[Grain, readonly Keyed[]]>) {
    if (kept.length === dims.size && kept.every((d) => dims.has(d))) return grain;
  }
  return null;
}

/**
 * The buckets a report may read, coarsest first. Coarse rows cannot be split into days. Weeks
 * lie inside one ISO week and one month, so they serve reports by week, by month or both; a
 * month holds parts of several weeks. Every row keeps each outcome's sums, so an `outcome`
 * filter reads the same buckets.
 */
export function usableBuckets(grain: Grain, groupBy: readonly Dimension[]): Bucket[] {
  if (!hasCoarseBuckets(grain) || groupBy.includes('day')) return ['day'];
  if (groupBy.includes('week')) return ['week', 'day'];
  return ['month', 'week', 'day'];
}

/**
 * Estimated rows of one bucket, in days' worth: keys recur from day to day, so coarser buckets
 * hold far fewer than their days' rows (all three keys in the benchmark: a day 5,100 rows, a
 * week 9,800, a month 10,400; agent × client: 3,200, 4,200, 4,200).
 */
const COST: Record<Bucket, number> = { day: 1, week: 2, month: 2.5 };

interface Cover {
  cost: number;
  pieces: Array<{ bucket: Bucket; fromDay: number; toDay: number; sign: 1 | -1 }>;
}

const EMPTY: Cover = { cost: 0, pieces: [] };

function join(...covers: Cover[]): Cover {
  return { cost: covers.reduce((s, c) => s + c.cost, 0), pieces: covers.flatMap((c) => c.pieces) };
}

function cheaper(a: Cover, b: Cover): Cover {
  return b.cost < a.cost ? b : a;
}

function negate(cover: Cover): Cover {
  return { cost: cover.cost, pieces: cover.pieces.map((p) => ({ ...p, sign: p.sign === 1 ? -1 : 1 })) };
}

/**
 * The estimated cost of the buckets of a kind that start in [from, to) (`from` being the first
 * day of one): a bucket cut short at a month's end, or whose later days are known to be empty,
 * costs no more than its days.
 */
function bucketsCost(bucket: Bucket, from: number, to: number, emptyFrom: number): number {
  let cost = 0;
  for (let d = from; d < to && d < emptyFrom;) {
    const end = bucketAround(bucket, d)[1];
    cost += Math.min(COST[bucket], (Math.min(end, emptyFrom) - d) * COST.day);
    d = end;
  }
  return cost;
}

/**
 * The cheapest signed cover of the whole days [a, b) by buckets of `levels` (coarsest first; the
 * last is always 'day'): whole buckets inside the range, and at each edge either finer buckets
 * or the whole bucket around the edge minus its part outside the range (a week minus one day
 * reads fewer rows than six days). Days from `emptyFrom` on are known to hold no rows and cost
 * nothing (this month minus its days still to come is one month's rows).
 */
export function coverDays(a: number, b: number, levels: readonly Bucket[], emptyFrom = Infinity): Cover {
  if (a >= b) return EMPTY;
  const [level, ...finer] = levels;
  if (level === undefined || level === 'day') {
    const cost = Math.max(0, Math.min(b, emptyFrom) - a) * COST.day;
    return { cost, pieces: [{ bucket: 'day', fromDay: a, toDay: b, sign: 1 }] };
  }
  const sub = (from: number, to: number) => coverDays(from, to, finer, emptyFrom);
  let best = sub(a, b);
  const [firstStart, firstEnd] = bucketAround(level, a);
  const [lastStart, lastEnd] = bucketAround(level, b - 1);
  const whole = (from: number, to: number): Cover => ({
    cost: bucketsCost(level, from, to, emptyFrom),
    pieces: [{ bucket: level, fromDay: from, toDay: to, sign: 1 }],
  });
  if (firstStart === lastStart) {
    // The range lies inside one bucket: that bucket minus what is outside on either side.
    best = cheaper(
      best,
      join(whole(firstStart, firstEnd), negate(sub(firstStart, a)), negate(sub(b, firstEnd))),
    );
    return best;
  }
  // Whole buckets between the edges, then each edge its cheapest way.
  const innerFrom = firstStart === a ? a : firstEnd;
  const innerTo = lastEnd === b ? b : lastStart;
  const inner = innerFrom < innerTo ? whole(innerFrom, innerTo) : EMPTY;
  const left =
    innerFrom === a
      ? EMPTY
      : cheaper(sub(a, innerFrom), join(whole(firstStart, firstEnd), negate(sub(firstStart, a))));
  const right =
    innerTo === b
      ? EMPTY
      : cheaper(sub(innerTo, b), join(whole(lastStart, lastEnd), negate(sub(b, lastEnd))));
  return cheaper(best, join(left, inner, right));
}

/**
 * The cover of the whole days [a, b) of the month starting on `monthFrom` whose rows hold its
 * days before `monthsThrough` only (rollups.ts monthsThroughAt), for monthFrom ≤ a and
 * b ≤ monthsThrough: its days, or its month rows minus the days outside [a, b) that they hold.
 */
function coverOpenMonth(
  a: number,
  b: number,
  monthFrom: number,
  monthsThrough: number,
  emptyFrom: number,
): Cover {
  if (a >= b) return EMPTY;
  const days = coverDays(a, b, ['day'], emptyFrom);
  const month: Cover = {
    cost: Math.min(COST.month, (monthsThrough - monthFrom) * COST.day),
    pieces: [{ bucket: 'month', fromDay: monthFrom, toDay: monthFrom + 1, sign: 1 }],
  };
  const outside = join(
    coverDays(monthFrom, a, ['day'], emptyFrom),
    coverDays(b, monthsThrough, ['day'], emptyFrom),
  );
  return cheaper(days, join(month, negate(outside)));
}

/**
 * The cover of the whole days [a, b) by rollup rows that exist: week rows only of the weeks
 * closed by `coarseThrough` (rollups.ts coarseThroughAt), month rows only of the days before
 * `monthsThrough` (rollups.ts monthsThroughAt). From the month whose weeks are not all closed
 * on, a report that may read months reads months and days, one that may not (by week) reads
 * closed weeks and days; the month of `monthsThrough` is its rows and its days from
 * `monthsThrough` on. Each part is covered on its own, so that no piece, not even one taken
 * away at an edge, reaches past its part.
 */
export function coverKept(
  a: number,
  b: number,
  levels: readonly Bucket[],
  emptyFrom: number,
  coarseThrough: number,
  monthsThrough: number,
): Cover {
  const part = (from: number, to: number, kept: readonly Bucket[]) => coverDays(from, to, kept, emptyFrom);
  if (levels.includes('month')) {
    // The months before `open` hold all their days; the weeks before `weeks` are closed.
    const open = Number.isFinite(monthsThrough) ? monthStart(monthsThrough) : Infinity;
    const weeks = Number.isFinite(coarseThrough) ? Math.min(monthStart(coarseThrough), open) : open;
    return join(
      part(a, Math.min(b, weeks), levels),
      part(Math.max(a, weeks), Math.min(b, open), ['month', 'day']),
      coverOpenMonth(Math.max(a, open), Math.min(b, monthsThrough), open, monthsThrough, emptyFrom),
      part(Math.max(a, monthsThrough), b, ['day']),
    );
  }
  return join(part(a, Math.min(b, coarseThrough), levels), part(Math.max(a, coarseThrough), b, ['day']));
}

/**
 * A report's window from the rollups and the raw events. The rollups cover whole UTC days (day,
 * week and month buckets, see coverDays). The day the window ends in (today, for every period)
 * is read from the rollups whole, minus the raw events after the window's end (only events
 * stamped up to 24 hours ahead can be there). The day the window starts in is read either as raw
 * events from the start to midnight, or, when the part before the start is the shorter one, as
 * that day's rollup rows minus the raw events before the start. Reports no rollup keeps read
 * raw events for the whole window. With a `watermark` (the grain's fold part's, rollups.ts
 * FOLD_PARTS), the rollups' days also read the tail (DESIGN §11); without one, the rollups are
 * taken as holding every event (callers that fold first, and tests of the cover). Week rows are read only for the weeks closed by
 * `coarseThrough`, month rows as holding the days before `monthsThrough` only (fold_state's, read
 * in the same snapshot; by default all weeks and days).
 */
export function planSources(
  range: ReportRange,
  groupBy: readonly Dimension[],
  filters: ReportFilters,
  options: {
    forceRaw?: boolean;
    watermark?: IngestSeq | null;
    floor?: IngestSeq;
    adjustWatermark?: IngestSeq | null;
    coarseThrough?: number;
    monthsThrough?: number;
  } = {},
): Source[] {
  const { from, endExclusive: to } = range;
  const grain = options.forceRaw ? null : chooseGrain(groupBy, filters);
  if (grain === null) return [{ kind: 'raw', from, to, sign: 1 }];
  const startDay = Math.floor(from / DAY_MS);
  const midnight = (startDay + 1) * DAY_MS;
  const startWhole = from === startDay * DAY_MS || from - startDay * DAY_MS < midnight - from;
  const fromDay = startWhole ? startDay : startDay + 1;
  const toDay = Math.ceil(to / DAY_MS);
  if (fromDay >= toDay) return [{ kind: 'raw', from, to, sign: 1 }];
  // Tracking takes occurred_at at most 24 hours ahead (spec §4.1): later days hold no rows yet,
  // so the cover can take them away for free (an estimate only; every piece is still read).
  const emptyFrom = Math.floor((range.to + DAY_MS) / DAY_MS) + 1;
  const levels = usableBuckets(grain, groupBy);
  const coarseThrough = options.coarseThrough ?? Infinity;
  const monthsThrough = options.monthsThrough ?? Infinity;
  const cover =
    coarseThrough === Infinity && monthsThrough === Infinity
      ? coverDays(fromDay, toDay, levels, emptyFrom)
      : coverKept(fromDay, toDay, levels, emptyFrom, coarseThrough, monthsThrough);
  const sources: Source[] = cover.pieces.map((p) => ({ kind: 'rollup', grain, ...p }));
  // The rollups hold the events up to the watermark; the pieces of the cover add up to the
  // whole days [fromDay, toDay) once each, so the tail's events of those days are added once.
  if (options.watermark !== undefined) {
    sources.push({
      kind: 'tail',
      from: fromDay * DAY_MS,
      to: toDay * DAY_MS,
      sign: 1,
      watermark: options.watermark,
      part: foldPartOf(grain),
      floor: options.floor ?? null,
      adjustWatermark: options.adjustWatermark ?? null,
    });
  }
  if (fromDay * DAY_MS < from) sources.push({ kind: 'raw', from: fromDay * DAY_MS, to: from, sign: -1 });
  if (from < fromDay * DAY_MS) sources.push({ kind: 'raw', from, to: fromDay * DAY_MS, sign: 1 });
  if (to < toDay * DAY_MS) sources.push({ kind: 'raw', from: to, to: toDay * DAY_MS, sign: -1 });
  return sources;
}
