import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { coverDays, coverKept, planSources, usableBuckets } from '../../src/reports/plan.js';
import { coarseThroughAt, type Bucket } from '../../src/reports/rollups.js';

const DAY = 86_400_000;
const day = (iso: string) => Date.parse(`${iso}T00:00:00Z`) / DAY;

/**
 * Whether a bucket row can start on `day` and, if so, the days it holds, computed from calendar
 * dates (not from the code under test): weeks start on Mondays and on the first of a month;
 * every bucket ends where its kind's next one starts.
 */
function startsOn(bucket: Bucket, day: number): boolean {
  const date = new Date(day * DAY);
  const first = date.getUTCDate() === 1;
  if (bucket === 'day') return true;
  if (bucket === 'month') return first;
  const weekday = date.getUTCDay();
  return first || weekday === 1;
}

function daysOf(bucket: Bucket, start: number): number[] {
  expect(startsOn(bucket, start)).toBe(true);
  if (bucket === 'day') return [start];
  const days = [start];
  while (!startsOn(bucket, start + days.length)) days.push(start + days.length);
  return days;
}

/** How often each day is counted by a cover: +1 per bucket added, −1 per bucket taken away. */
function multiplicity(pieces: ReturnType<typeof coverDays>['pieces']): Map<number, number> {
  const counts = new Map<number, number>();
  for (const p of pieces) {
    // A piece names the bucket rows whose first day lies in [fromDay, toDay).
    for (let start = p.fromDay; start < p.toDay; start++) {
      if (!startsOn(p.bucket, start)) continue;
      for (const d of daysOf(p.bucket, start)) counts.set(d, (counts.get(d) ?? 0) + p.sign);
    }
  }
  for (const [d, n] of counts) if (n === 0) counts.delete(d);
  return counts;
}

const LEVELS: Bucket[][] = [['day'], ['week', 'day'], ['month', 'day'], ['month', 'week', 'day']];

describe('the signed bucket cover of a range of days', () => {
  it('counts every day of the range once and no other day', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: day('2024-01-01'), max: day('2027-01-01') }),
        fc.integer({ min: 1, max: 800 }),
        fc.constantFrom(...LEVELS),
        fc.integer({ min: -5, max: 900 }),
        (a, length, levels, empty) => {
          const b = a + length;
          // Where the days known to be empty begin changes the cost, never what is counted.
          const { pieces } = coverDays(a, b, levels, a + empty);
          const expected = new Map(Array.from({ length }, (_, i) => [a + i, 1] as [number, number]));
          expect(multiplicity(pieces)).toEqual(expected);
          for (const p of pieces) expect(levels).toContain(p.bucket);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('reads whole weeks and months where they fit, and never costs more than the days', () => {
    // Sat 24 Oct … Sat 21 Nov 2026: two days, the week cut at October's end, November minus
    // Sunday 22 Nov and the weeks after it.
    const thirty = coverDays(day('2026-10-24'), day('2026-11-22'), ['month', 'week', 'day']);
    expect(thirty.cost).toBe(2 + 2 + 2.5 + 1 + 3);
    expect(thirty.pieces).toEqual([
      { bucket: 'day', fromDay: day('2026-10-24'), toDay: day('2026-10-26'), sign: 1 },
      { bucket: 'week', fromDay: day('2026-10-26'), toDay: day('2026-11-01'), sign: 1 },
      { bucket: 'month', fromDay: day('2026-11-01'), toDay: day('2026-12-01'), sign: 1 },
      { bucket: 'day', fromDay: day('2026-11-22'), toDay: day('2026-11-23'), sign: -1 },
      // Mon 23 … Sun 29 and Mon 30, the week cut at November's end (one day: costs a day).
      { bucket: 'week', fromDay: day('2026-11-23'), toDay: day('2026-12-01'), sign: -1 },
    ]);
    // The benchmark's 30 days, asked on Friday 20 Nov: Thu 22 … Sun 25 Oct are four days (their
    // week minus Mon 19 … Wed 21 would cost five); November minus the 21st, the last day that
    // can hold rows yet.
    const bench = coverDays(
      day('2026-10-22'),
      day('2026-11-21'),
      ['month', 'week', 'day'],
      day('2026-11-22'),
    );
    expect(bench.pieces).toEqual([
      { bucket: 'day', fromDay: day('2026-10-22'), toDay: day('2026-10-26'), sign: 1 },
      { bucket: 'week', fromDay: day('2026-10-26'), toDay: day('2026-11-01'), sign: 1 },
      { bucket: 'month', fromDay: day('2026-11-01'), toDay: day('2026-12-01'), sign: 1 },
      { bucket: 'day', fromDay: day('2026-11-21'), toDay: day('2026-12-01'), sign: -1 },
    ]);
    expect(bench.cost).toBe(4 + 2 + 2.5 + 1);
    // Mon 24 Aug … Sat 21 Nov: a week, a day, September to November, minus November's tail.
    const ninety = coverDays(day('2026-08-24'), day('2026-11-22'), ['month', 'week', 'day']);
    expect(ninety.pieces).toContainEqual({
      bucket: 'month',
      fromDay: day('2026-09-01'),
      toDay: day('2026-11-01'),
      sign: 1,
    });
    expect(ninety.cost).toBeLessThan(90);
    // Exactly one month: month rows.
    const november = coverDays(day('2026-11-01'), day('2026-12-01'), ['month', 'week', 'day']);
    expect(november.pieces).toEqual([
      { bucket: 'month', fromDay: day('2026-11-01'), toDay: day('2026-12-01'), sign: 1 },
    ]);
    // 1–19 November, asked on the 20th: the month minus the 20th and 21st (later days hold no
    // rows yet, so taking them away costs nothing).
    const soFar = coverDays(
      day('2026-11-01'),
      day('2026-11-20'),
      ['month', 'week', 'day'],
      day('2026-11-22'),
    );
    expect(soFar.pieces[0]).toEqual({
      bucket: 'month',
      fromDay: day('2026-11-01'),
      toDay: day('2026-12-01'),
      sign: 1,
    });
    expect(soFar.cost).toBe(2.5 + 2);
    // Days only when weeks and months cannot be used.
    expect(coverDays(10, 40, ['day']).pieces).toEqual([{ bucket: 'day', fromDay: 10, toDay: 40, sign: 1 }]);
  });
});

describe('the cover by the rollup rows the folding stage keeps', () => {
  /**
   * How often each day is counted by a cover of kept rows: a week row exists only for a week that
   * starts before `coarseThrough` (its end is then no later), and a month row holds only its days
   * before `monthsThrough`.
   */
  function keptMultiplicity(
    pieces: ReturnType<typeof coverDays>['pieces'],
    coarseThrough: number,
    monthsThrough: number,
  ): Map<number, number> {
    for (const p of pieces) if (p.bucket === 'week') expect(p.toDay).toBeLessThanOrEqual(coarseThrough);
    const held = pieces.flatMap((p) => {
      const counts = [...multiplicity([p]).entries()];
      return p.bucket === 'month' ? counts.filter(([d]) => d < monthsThrough) : counts;
    });
    const counts = new Map<number, number>();
    for (const [d, n] of held) counts.set(d, (counts.get(d) ?? 0) + n);
    for (const [d, n] of counts) if (n === 0) counts.delete(d);
    return counts;
  }

  it('counts every day of the range once, whatever weeks and days the stage has closed', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: day('2025-01-01'), max: day('2027-01-01') }),
        fc.integer({ min: 1, max: 400 }),
        fc.constantFrom(...LEVELS),
        fc.integer({ min: -400, max: 400 }),
        fc.integer({ min: -400, max: 400 }),
        (a, length, levels, weeksAt, monthsAt) => {
          const b = a + length;
          const coarseThrough = coarseThroughAt((a + weeksAt) * DAY);
          const monthsThrough = a + monthsAt;
          const { pieces } = coverKept(a, b, levels, b + 2, coarseThrough, monthsThrough);
          const expected = new Map(Array.from({ length }, (_, i) => [a + i, 1] as [number, number]));
          expect(keptMultiplicity(pieces, coarseThrough, monthsThrough)).toEqual(expected);
          for (const p of pieces) expect(levels).toContain(p.bucket);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('reads the month of monthsThrough as its rows plus the days from monthsThrough on', () => {
    // The benchmark's 30 days, asked on Friday 20 Nov: month rows hold 1–19 November; the 20th
    // is read from its day rows (the 21st can hold rows yet too).
    const { pieces } = coverKept(
      day('2026-10-22'),
      day('2026-11-21'),
      ['month', 'week', 'day'],
      day('2026-11-22'),
      day('2026-11-16'),
      day('2026-11-20'),
    );
    expect(pieces).toEqual([
      { bucket: 'day', fromDay: day('2026-10-22'), toDay: day('2026-10-26'), sign: 1 },
      { bucket: 'week', fromDay: day('2026-10-26'), toDay: day('2026-11-01'), sign: 1 },
      { bucket: 'month', fromDay: day('2026-11-01'), toDay: day('2026-11-02'), sign: 1 },
      { bucket: 'day', fromDay: day('2026-11-20'), toDay: day('2026-11-21'), sign: 1 },
    ]);
    // A window ending before monthsThrough: the month rows minus the days after it they hold.
    const { pieces: earlier } = coverKept(
      day('2026-11-01'),
      day('2026-11-18'),
      ['month', 'day'],
      day('2026-11-22'),
      day('2026-11-16'),
      day('2026-11-20'),
    );
    expect(earlier).toEqual([
      { bucket: 'month', fromDay: day('2026-11-01'), toDay: day('2026-11-02'), sign: 1 },
      { bucket: 'day', fromDay: day('2026-11-18'), toDay: day('2026-11-20'), sign: -1 },
    ]);
  });
});

describe('the buckets a report may read', () => {
  const none = { metadata: [] };
  it('are days for one-key grains and reports by day', () => {
    expect(usableBuckets('agent', ['agent'])).toEqual(['day']);
    expect(usableBuckets('agent+client', ['agent', 'client', 'day'])).toEqual(['day']);
    expect(usableBuckets('agent+client', ['agent', 'day', 'month'])).toEqual(['day']);
  });
  it('are weeks by week (months hold parts of weeks), and every bucket otherwise', () => {
    const fine = ['week', 'day'];
    const all = ['month', 'week', 'day'];
    expect(usableBuckets('agent+client', ['agent', 'client', 'week'])).toEqual(fine);
    expect(usableBuckets('agent+client', ['agent', 'week', 'month'])).toEqual(fine);
    expect(usableBuckets('task_type+client', ['month', 'client', 'task_type'])).toEqual(all);
    expect(usableBuckets('agent+task_type+client', ['agent', 'task_type', 'client'])).toEqual(all);
  });
  it('reach the report through planSources, with raw events at the edges of the window', () => {
    // 16:30: the first day's 7.5 hours inside the window are read as events; today whole from
    // the rollups, minus the events stamped after now.
    const now = Date.parse('2026-11-22T16:30:00Z');
    const range = { from: now - 30 * DAY, to: now, endExclusive: now + 1 };
    const sources = planSources(range, ['agent', 'client'], none);
    expect(sources.filter((s) => s.kind === 'raw')).toEqual([
      { kind: 'raw', from: range.from, to: day('2026-10-24') * DAY, sign: 1 },
      { kind: 'raw', from: now + 1, to: day('2026-11-23') * DAY, sign: -1 },
    ]);
    expect(sources.some((s) => s.kind === 'rollup' && s.bucket !== 'day')).toBe(true);
    // 04:00: the first day is read from the rollups, minus its events before 04:00.
    const early = Date.parse('2026-11-22T04:00:00Z');
    const earlyRange = { from: early - 30 * DAY, to: early, endExclusive: early + 1 };
    expect(planSources(earlyRange, ['agent'], none).filter((s) => s.kind === 'raw')).toEqual([
      { kind: 'raw', from: day('2026-10-23') * DAY, to: earlyRange.from, sign: -1 },
      { kind: 'raw', from: early + 1, to: day('2026-11-23') * DAY, sign: -1 },
    ]);
    expect(planSources(range, ['agent', 'client'], none, { forceRaw: true })).toEqual([
      { kind: 'raw', from: range.from, to: now + 1, sign: 1 },
    ]);
    expect(planSources(range, ['agent'], { metadata: [['channel', 'chat']] })).toEqual([
      { kind: 'raw', from: range.from, to: now + 1, sign: 1 },
    ]);
  });
});
