import { validationError } from '../errors.js';

/** The longest reason a close or a reopening keeps. */
export const MAX_REASON = 1000;

/** YYYY-MM: a calendar month in UTC. */
export const MONTH_PATTERN = '^[0-9]{4}-(0[1-9]|1[0-2])$';
const MONTH = new RegExp(MONTH_PATTERN);

export interface MonthRange {
  month: string;
  /** The month's first instant, epoch ms (inclusive). */
  from: number;
  /** The next month's first instant, epoch ms (exclusive). */
  to: number;
}

/** `2026-10` → its UTC window; anything else is `validation_error` at `path`. */
export function monthRange(month: string, path = '/params/month'): MonthRange {
  if (!MONTH.test(month)) throw validationError(path, 'must be a month as YYYY-MM, e.g. 2026-10');
  const year = Number(month.slice(0, 4));
  const index = Number(month.slice(5, 7)) - 1;
  if (year < 2000) throw validationError(path, 'must be a month from 2000-01 on');
  return { month, from: Date.UTC(year, index, 1), to: Date.UTC(year, index + 1, 1) };
}

/** The month (YYYY-MM, UTC) an instant falls in. */
export function monthOf(at: number): string {
  return new Date(at).toISOString().slice(0, 7);
}

/** The months whose windows meet [from, to): oldest first. */
export function monthsBetween(from: number, to: number): string[] {
  const months: string[] = [];
  const start = new Date(from);
  let year = start.getUTCFullYear();
  let index = start.getUTCMonth();
  for (;;) {
    const first = Date.UTC(year, index, 1);
    if (first >= to && months.length > 0) break;
    months.push(monthOf(first));
    index += 1;
    if (index === 12) {
      index = 0;
      year += 1;
    }
    if (months.length > 1200) break;
  }
  return months;
}
