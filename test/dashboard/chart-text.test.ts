import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fitText, placeLabels, textWidth, valueAxis } from '../../src/dashboard/chart-text.js';
import { bucketLabels } from '../../src/dashboard/format.js';
import { isPartialBucket, partialEnds } from '../../src/dashboard/pages/figures.js';

describe('chart text layout', () => {
  it('puts round steps on the value axis, through 0, covering every value', () => {
    expect(valueAxis(0, 118.4, 5).ticks).toEqual([0, 50, 100, 150]);
    expect(valueAxis(0, 0.27, 5).ticks).toEqual([0, 0.1, 0.2, 0.3]);
    expect(valueAxis(-28.98, 1970.36, 5).ticks).toEqual([-500, 0, 500, 1000, 1500, 2000]);
    expect(valueAxis(0, 0, 5).ticks).toEqual([0, 0.5, 1]);
    // Counts: no half events on the axis.
    expect(valueAxis(0, 3, 5, 1).ticks).toEqual([0, 1, 2, 3]);
    expect(valueAxis(0, 9, 5, 1).ticks).toEqual([0, 5, 10]);
    fc.assert(
      fc.property(
        // Figures in millionths, as they are stored.
        fc.integer({ min: -1e15, max: 0 }),
        fc.integer({ min: 0, max: 1e15 }),
        fc.integer({ min: 3, max: 8 }),
        (minMicros, maxMicros, maxTicks) => {
          const min = minMicros / 1e6;
          const max = maxMicros / 1e6;
          const { ticks } = valueAxis(min, max, maxTicks);
          // Within a billionth of the span: float error, not a point off the chart.
          const slack = (max - min) * 1e-9;
          expect(ticks[0]).toBeLessThanOrEqual(min + slack);
          expect(ticks.at(-1)).toBeGreaterThanOrEqual(max - slack);
          expect(ticks).toContain(0);
          expect(ticks.length).toBeLessThanOrEqual(maxTicks + 2);
        },
      ),
    );
  });

  it('places date labels that never touch and stay inside the chart, the last one always', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 120 }),
        fc.integer({ min: 200, max: 1200 }),
        fc.integer({ min: 8, max: 16 }),
        (n, width, fontSize) => {
          const labels = Array.from({ length: n }, (_, i) =>
            i % 3 === 0 ? `Sep ${i + 1}, 2026` : `Oct ${i}`,
          );
          const xs = labels.map((_, i) => 40 + (n <= 1 ? (width - 52) / 2 : (i * (width - 52)) / (n - 1)));
          const placed = placeLabels({ labels, xs, width, fontSize, gap: fontSize });
          expect(placed.at(-1)?.index).toBe(n - 1);
          const boxes = placed.map((p) => {
            const half = textWidth(p.text, fontSize) / 2;
            return [p.x - half, p.x + half] as const;
          });
          for (const [left, right] of boxes) {
            expect(left).toBeGreaterThanOrEqual(-1e-9);
            expect(right).toBeLessThanOrEqual(width + 1e-9);
          }
          for (let i = 1; i < boxes.length; i++)
            expect((boxes[i]?.[0] ?? 0) - (boxes[i - 1]?.[1] ?? 0)).toBeGreaterThanOrEqual(fontSize - 1e-9);
        },
      ),
    );
  });

  it('cuts a long label with an ellipsis to the width it has', () => {
    expect(fitText('Resolve a ticket end to end', 1000, 12)).toBe('Resolve a ticket end to end');
    const cut = fitText('Prepare a data subject access response · globex', 150, 12);
    expect(cut.endsWith('…')).toBe(true);
    expect(textWidth(cut, 12)).toBeLessThanOrEqual(150);
  });

  it('labels report buckets in words, with the year only when the span needs it', () => {
    expect(bucketLabels(['2026-10-21', '2026-11-02'])).toEqual(['Oct 21', 'Nov 2']);
    expect(bucketLabels(['2025-12-29', '2026-01-05'])).toEqual(['Dec 29, 2025', 'Jan 5, 2026']);
    expect(bucketLabels(['2026-09', '2026-10'])).toEqual(['Sep', 'Oct']);
    expect(bucketLabels(['2025-12', '2026-01'])).toEqual(['Dec 2025', 'Jan 2026']);
  });

  it('tells the buckets only partly inside a report range', () => {
    const range = { from: '2026-10-21T12:00:00.000Z', to: '2026-11-20T12:00:00.000Z' };
    expect(isPartialBucket('2026-10-21', 'day', range)).toBe(true);
    expect(isPartialBucket('2026-10-22', 'day', range)).toBe(false);
    expect(isPartialBucket('2026-11-19', 'day', range)).toBe(false);
    expect(isPartialBucket('2026-11-20', 'day', range)).toBe(true);
    expect(isPartialBucket('2026-10-19', 'week', range)).toBe(true);
    expect(isPartialBucket('2026-10-26', 'week', range)).toBe(false);
    expect(isPartialBucket('2026-11-16', 'week', range)).toBe(true);
    expect(isPartialBucket('2026-10', 'month', range)).toBe(true);
    const ytd = { from: '2026-01-01T00:00:00.000Z', to: '2026-11-20T12:00:00.000Z' };
    expect(isPartialBucket('2026-01', 'month', ytd)).toBe(false);
    expect(isPartialBucket('2026-11', 'month', ytd)).toBe(true);
    expect(partialEnds(['2026-01', '2026-11'], 'month', ytd)).toEqual({
      first: false,
      last: true,
      note: 'Dotted line: the last month is only partly in the period.',
    });
  });
});
