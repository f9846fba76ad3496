import type { Dimension, Metric } from './params.js';

/**
 * UTF-16 code units compare like code points, and so like UTF-8 bytes (the order SQLite's
 * BINARY and PostgreSQL's "C" collation give), once surrogates (U+D800–DFFF, halves of code
 * points above U+FFFF) are moved above U+E000–FFFF.
 */
function codePointKey(unit: number): number {
  if (unit < 0xd800) return unit;
  return unit < 0xe000 ? unit + 0x2000 : unit - 0x800;
}

/** Code units from the surrogates up: below them, UTF-16 order is already byte order. */
const HIGH_UNITS = /[\uD800-\uFFFF]/;

/** Byte order of the UTF-8 texts of two strings. */
export function compareText(a: string, b: string): number {
  if (!HIGH_UNITS.test(a) && !HIGH_UNITS.test(b)) return a < b ? -1 : a > b ? 1 : 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointKey(x) - codePointKey(y);
  }
  return a.length - b.length;
}

/** Where each summed metric sits after the group values; net_saved is cost saved − agent cost. */
const METRIC_COLUMN: Record<Exclude<Metric, 'net_saved'>, number> = {
  events: 0,
  hours_saved: 1,
  cost_saved: 2,
  agent_cost: 3,
};

/** Longest run of tied rows sorted by insertion; longer ones go through Array.prototype.sort. */
const INSERTION_RUN = 16;

type Cell = string | number | null | undefined;

function compareValues(x: Cell, y: Cell): number {
  if (x === y) return 0;
  if (x === null || x === undefined) return 1;
  if (y === null || y === undefined) return -1;
  if (typeof x === 'number' && typeof y === 'number') return x - y;
  return compareText(String(x), String(y));
}

/**
 * Sorts aggregated rows (aggregate-sql.ts: group values g0…gN, then events, hours, cost saved and
 * agent cost) in place the way the query's ORDER BY would: the metric descending, then the group
 * values ascending (time buckets as numbers or 'YYYY-MM', text in byte order, no client last).
 * PostgreSQL reports without `top` are sorted here instead of by the database (report.ts).
 */
export function sortReportRows(rows: unknown[][], groupBy: readonly Dimension[], sort: Metric): unknown[][] {
  const n = groupBy.length;
  const column = sort === 'net_saved' ? -1 : n + METRIC_COLUMN[sort];
  const metric = (row: unknown[]) =>
    column === -1 ? Number(row[n + 2]) - Number(row[n + 3]) : Number(row[column]);
  const byGroupValues = (a: unknown[], b: unknown[]) => {
    for (let i = 0; i < n; i++) {
      const byGroup = compareValues(a[i] as Cell, b[i] as Cell);
      if (byGroup !== 0) return byGroup;
    }
    return 0;
  };
  // The metric values go through the native numeric sort, then each row to its place by binary
  // search; rows of one value are then sorted by their group values. This takes about half the
  // time of Array.prototype.sort with a comparator over the rows.
  const count = rows.length;
  const values = new Float64Array(count);
  for (let i = 0; i < count; i++) values[i] = -metric(rows[i] as unknown[]);
  const sorted = values.slice().sort();
  const taken = new Int32Array(count);
  const placed = new Array<unknown[]>(count);
  for (let i = 0; i < count; i++) {
    const value = values[i] as number;
    let lo = 0;
    let hi = count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((sorted[mid] as number) < value) lo = mid + 1;
      else hi = mid;
    }
    placed[lo + (taken[lo] as number)++] = rows[i] as unknown[];
  }
  for (let start = 0; start < count;) {
    let end = start + 1;
    while (end < count && sorted[end] === sorted[start]) end++;
    if (end - start > INSERTION_RUN) {
      const run = placed.slice(start, end).sort(byGroupValues);
      for (let i = 0; i < run.length; i++) rows[start + i] = run[i] as unknown[];
    } else {
      // Short runs of ties are common (groups of one event of one task type): by insertion.
      for (let i = start; i < end; i++) {
        const row = placed[i] as unknown[];
        let j = i;
        for (; j > start && byGroupValues(rows[j - 1] as unknown[], row) > 0; j--)
          rows[j] = rows[j - 1] as unknown[];
        rows[j] = row;
      }
    }
    start = end;
  }
  return rows;
}
