import { DAY_MS } from '../reports/rollups.js';
import { FIGURE_KEYS, ZERO, addFigures, divRound, sumFigures, type Figures } from './figures.js';

/**
 * How a month is projected (docs/budgets-and-forecasts.md):
 * - `weekday_profile` with 4 weeks of history: each day left gets the average of the same
 *   weekday over the last 4 complete weeks;
 * - `run_rate` with 1 to 27 complete days: each day left gets the daily average of the last 7
 *   complete days (or of the complete days there are, when fewer);
 * - `none` before the first complete day: nothing is projected.
 * Either way the forecast is the month so far plus the days left, today's rest counting for the
 * share of the day still to come.
 */
export type Method = 'weekday_profile' | 'run_rate' | 'none';

export const PROFILE_DAYS = 28;
export const RUN_RATE_DAYS = 7;

/** Lowest or highest figures; net saved from the days' own net figures. */
export type Band = Figures & { net: number };

export interface DayProjection {
  day: number;
  /** The share of the day projected, in ms: the rest of today, or a whole day. */
  ms: number;
  figures: Figures;
  low: Band;
  high: Band;
}

export interface MonthForecast {
  method: Method;
  now: number;
  today: number;
  /** Epoch days: the month's first day and the next month's. */
  monthStart: number;
  monthEnd: number;
  /** The complete days the projection rests on, oldest first, with their figures. */
  basis: number[];
  basisFigures: Array<{ day: number; figures: Figures }>;
  /** The month's days up to today (today so far), actual figures. */
  actual: Array<{ day: number; figures: Figures }>;
  monthToDate: Figures;
  /** Today's rest, then each day left in the month. */
  rest: DayProjection[];
  forecast: Figures;
  low: Band;
  high: Band;
}

export interface ForecastInput {
  now: number;
  /** The epoch day of the organisation's first event; null when it has none. */
  firstDay: number | null;
  /** Figures by epoch day (days without events may be missing). */
  days: ReadonlyMap<number, Figures>;
}

function monthBoundsOf(today: number): [number, number] {
  const date = new Date(today * DAY_MS);
  const y = date.getUTCFullYear();
  const m = date.getUTCMonth();
  return [Date.UTC(y, m, 1) / DAY_MS, Date.UTC(y, m + 1, 1) / DAY_MS];
}

/** The method and its basis days for a day `today` and the first day with an event. */
export function chooseMethod(today: number, firstDay: number | null): { method: Method; basis: number[] } {
  const complete = firstDay === null ? 0 : Math.max(0, today - firstDay);
  const span = complete >= PROFILE_DAYS ? PROFILE_DAYS : Math.min(RUN_RATE_DAYS, complete);
  const basis = Array.from({ length: span }, (_, i) => today - span + i);
  const method: Method = complete >= PROFILE_DAYS ? 'weekday_profile' : complete > 0 ? 'run_rate' : 'none';
  return { method, basis };
}

function netOf(f: Figures): number {
  return f.cost - f.agentCost;
}

function bandOf(values: readonly Figures[], pick: (a: number, b: number) => number, ms: number): Band {
  const scaled = (v: number) => Number(divRound(BigInt(v) * BigInt(ms), BigInt(DAY_MS)));
  // Two arguments only: reduce also passes the index and the array.
  const extreme = (list: number[]) => scaled(list.reduce((a, b) => pick(a, b)));
  const band = { net: 0, ...ZERO };
  if (values.length === 0) return band;
  for (const key of FIGURE_KEYS) band[key] = extreme(values.map((f) => f[key]));
  band.net = extreme(values.map(netOf));
  return band;
}

/** One day's projection: the average of its peer days, for `ms` of the day. */
function project(day: number, ms: number, peers: readonly Figures[]): DayProjection {
  const figures = { ...ZERO };
  if (peers.length > 0) {
    const divisor = BigInt(peers.length) * BigInt(DAY_MS);
    for (const key of FIGURE_KEYS) {
      const total = peers.reduce((s, f) => s + BigInt(f[key]), 0n);
      figures[key] = Number(divRound(total * BigInt(ms), divisor));
    }
  }
  return { day, ms, figures, low: bandOf(peers, Math.min, ms), high: bandOf(peers, Math.max, ms) };
}

function addBand(a: Band, b: Band): Band {
  return { ...addFigures(a, b), net: a.net + b.net };
}

/** The month of `now` projected to its end (see Method). Exact: integer micro-units throughout. */
export function forecastMonth(input: ForecastInput): MonthForecast {
  const today = Math.floor(input.now / DAY_MS);
  const [monthStart, monthEnd] = monthBoundsOf(today);
  const { method, basis } = chooseMethod(today, input.firstDay);
  const figuresOn = (day: number) => input.days.get(day) ?? ZERO;
  const actual = [];
  for (let day = monthStart; day <= today; day++) actual.push({ day, figures: figuresOn(day) });
  const monthToDate = sumFigures(actual.map((a) => a.figures));
  const rest: DayProjection[] = [];
  for (let day = today; day < monthEnd; day++) {
    const ms = day === today ? (today + 1) * DAY_MS - input.now : DAY_MS;
    // The weekday profile averages the same weekday of the basis weeks; the run rate all its days.
    const peers = basis.filter((b) => method !== 'weekday_profile' || (day - b) % 7 === 0).map(figuresOn);
    rest.push(project(day, ms, method === 'none' ? [] : peers));
  }
  const toDate: Band = { ...monthToDate, net: netOf(monthToDate) };
  return {
    method,
    now: input.now,
    today,
    monthStart,
    monthEnd,
    basis,
    basisFigures: basis.map((day) => ({ day, figures: figuresOn(day) })),
    actual,
    monthToDate,
    rest,
    forecast: sumFigures([monthToDate, ...rest.map((r) => r.figures)]),
    low: rest.map((r) => r.low).reduce(addBand, toDate),
    high: rest.map((r) => r.high).reduce(addBand, toDate),
  };
}

/**
 * The day agent cost reaches `amountMicros` this month: from the actual days when the month so
 * far has reached it (`reached`), else from the projection (null when the forecast stays below).
 */
export function runOutDay(
  forecast: MonthForecast,
  amountMicros: number,
): { day: number; reached: boolean } | null {
  let spent = 0;
  for (const { day, figures } of forecast.actual) {
    spent += figures.agentCost;
    if (spent >= amountMicros) return { day, reached: true };
  }
  for (const { day, figures } of forecast.rest) {
    spent += figures.agentCost;
    if (spent >= amountMicros) return { day, reached: false };
  }
  return null;
}

/**
 * The whole days [fromDay, toDay) projected with the forecast's method and basis, each day as a
 * day left in the month would be (payback forecasts of the months ahead).
 */
export function projectDays(forecast: MonthForecast, fromDay: number, toDay: number): Figures {
  if (forecast.method === 'none') return ZERO;
  const byDay = new Map(forecast.basisFigures.map((b) => [b.day, b.figures]));
  let total = ZERO;
  for (let day = fromDay; day < toDay; day++) {
    const peers = forecast.basis
      .filter((b) => forecast.method !== 'weekday_profile' || (day - b) % 7 === 0)
      .map((b) => byDay.get(b) ?? ZERO);
    total = addFigures(total, project(day, DAY_MS, peers).figures);
  }
  return total;
}
