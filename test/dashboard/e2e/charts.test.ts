/// <reference lib="dom" />
// Code passed to page.evaluate runs in the browser.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { startE2E, tableRows, type E2E } from './browser.js';
import { seedEvents } from './seed.js';

interface ChartCheck {
  /** Drawings of the chart on screen (exactly one is expected). */
  shown: number;
  xLabels: number;
  yLabels: number;
  /** Rendered font sizes of the chart's text, in CSS pixels. */
  fontSizes: number[];
  problems: string[];
}

/** Every chart of the page: its text inside its SVG, no two axis labels on top of each other. */
async function checkCharts(page: Page): Promise<ChartCheck[]> {
  return page.evaluate(() => {
    const slack = 0.5;
    const overlaps = (rects: DOMRect[], axis: 'x' | 'y') => {
      const sorted = [...rects].sort((a, b) => (axis === 'x' ? a.left - b.left : a.top - b.top));
      const found: string[] = [];
      for (let i = 1; i < sorted.length; i++) {
        const a = sorted[i - 1];
        const b = sorted[i];
        if (!a || !b) continue;
        const apart = axis === 'x' ? b.left >= a.right - slack : b.top >= a.bottom - slack;
        if (!apart) found.push(`${axis} labels overlap at ${Math.round(axis === 'x' ? b.left : b.top)}px`);
      }
      return found;
    };
    return Array.from(document.querySelectorAll('figure.chart')).map((figure) => {
      const shown = Array.from(figure.querySelectorAll('svg')).filter(
        (svg) => getComputedStyle(svg).display !== 'none',
      );
      const problems: string[] = [];
      const fontSizes: number[] = [];
      let xLabels = 0;
      let yLabels = 0;
      for (const svg of shown) {
        const box = svg.getBoundingClientRect();
        const scale = box.width / svg.viewBox.baseVal.width;
        const texts = Array.from(svg.querySelectorAll('text'));
        for (const text of texts) {
          const r = text.getBoundingClientRect();
          fontSizes.push(Number.parseFloat(getComputedStyle(text).fontSize) * scale);
          if (
            r.left < box.left - slack ||
            r.right > box.right + slack ||
            r.top < box.top - slack ||
            r.bottom > box.bottom + slack
          ) {
            problems.push(
              `"${text.textContent ?? ''}" at ${Math.round(r.left - box.left)}..${Math.round(r.right - box.left)} of ${Math.round(box.width)}px`,
            );
          }
        }
        const rects = (selector: string) =>
          Array.from(svg.querySelectorAll(selector)).map((t) => t.getBoundingClientRect());
        const xs = rects('text.axis.x');
        const ys = rects('text.axis.y');
        xLabels += xs.length;
        yLabels += ys.length;
        problems.push(...overlaps(xs, 'x'), ...overlaps(ys, 'y'));
        // Two value ticks with one label (half an event rounded) would mislabel the axis.
        const yTexts = Array.from(svg.querySelectorAll('text.axis.y')).map((t) => t.textContent ?? '');
        if (new Set(yTexts).size !== yTexts.length)
          problems.push(`repeated value labels ${yTexts.join(' ')}`);
        // A bar chart's row labels and values, one row under the other.
        problems.push(...overlaps(rects('text.label'), 'y'), ...overlaps(rects('text.value'), 'y'));
      }
      return { shown: shown.length, xLabels, yLabels, fontSizes, problems };
    });
  });
}

describe('dashboard charts at phone and desktop widths in Chromium', { timeout: 120_000 }, () => {
  let e: E2E;
  let bigApiKey = '';
  beforeAll(async () => {
    e = await startE2E();
    await seedEvents(e.h);
    // An organisation whose figures run to hundreds of thousands: the longest money labels.
    const big = await e.h.createOrg({ hourlyRate: 40_000 });
    bigApiKey = big.apiKey;
    await seedEvents(e.h, big.apiKey, 200);
  });
  afterAll(async () => e?.close());

  const pages = [
    '/dashboard?period=30d',
    '/dashboard?period=90d',
    '/dashboard?period=all',
    '/dashboard/reports?period=90d&group_by=day&sort=cost_saved',
    '/dashboard/reports?period=90d&group_by=day&sort=net_saved&outcome=failure',
    '/dashboard/reports?period=90d&group_by=week&sort=events',
    '/dashboard/reports?period=90d&group_by=week&sort=events&agent_id=support-bot',
    '/dashboard/reports?period=90d&group_by=agent&sort=net_saved',
    '/dashboard/reports?period=90d&group_by=task_type,client&sort=hours_saved',
  ];

  for (const viewport of [
    { width: 390, height: 844 },
    { width: 1280, height: 800 },
  ]) {
    for (const org of ['small', 'big'] as const) {
      it(`keeps every label inside its chart and apart at ${viewport.width}×${viewport.height} (${org} figures)`, async () => {
        const { page } = await e.open(viewport);
        await e.signIn(page, org === 'big' ? bigApiKey : e.h.org.apiKey);
        for (const url of pages) {
          await page.goto(url);
          const charts = await checkCharts(page);
          expect(charts.length, url).toBeGreaterThan(0);
          for (const chart of charts) {
            expect(chart.problems, url).toEqual([]);
            expect(chart.shown, url).toBe(1);
            // Text stays legible: neither shrunk to a speck on a phone nor blown up on a desktop.
            expect(Math.min(...chart.fontSizes), url).toBeGreaterThanOrEqual(10);
            expect(Math.max(...chart.fontSizes), url).toBeLessThanOrEqual(18);
          }
          const line = charts.find((c) => c.xLabels > 0);
          if (!url.includes('group_by=agent') && !url.includes('group_by=task_type')) {
            // A time chart labels at least its ends' neighbourhood and three values.
            expect(line?.xLabels, url).toBeGreaterThanOrEqual(2);
            expect(line?.yLabels, url).toBeGreaterThanOrEqual(3);
          }
        }
        expect(e.problems).toEqual([]);
      });
    }
  }

  it('marks the partial first and last days of a rolling period, in the chart and its table', async () => {
    const { page } = await e.open();
    await e.signIn(page);
    await page.goto('/dashboard?period=30d');
    const chart = page.locator('figure.chart svg:visible');
    // Each series: its full days solid, its two partial ends dotted.
    expect(await chart.locator('polyline:not(.partial)').count()).toBe(2);
    expect(await chart.locator('polyline.partial').count()).toBe(4);
    expect(await page.locator('.partial-note').textContent()).toBe(
      'Dotted line: the first and last days are only partly in the period.',
    );
    const days = await tableRows(page, '#trend-table');
    const marked = days.flatMap((r, i) => (r[0]?.endsWith('(partial)') ? [i] : []));
    expect(marked).toEqual([0, days.length - 1]);
  });

  it('shortens axis money on a phone and keeps the full form on a desktop', async () => {
    const labels = async (viewport: { width: number; height: number }) => {
      const { page } = await e.open(viewport);
      await e.signIn(page, bigApiKey);
      await page.goto('/dashboard?period=30d');
      return page
        .locator('figure.chart svg:visible text.axis.y')
        .evaluateAll((texts) => texts.map((t) => t.textContent ?? ''));
    };
    const phone = await labels({ width: 390, height: 844 });
    const desktop = await labels({ width: 1280, height: 800 });
    expect(phone.at(-1)).toMatch(/^€\d+(\.\d+)?K$/);
    expect(desktop.at(-1)).toMatch(/^€\d{1,3}(,\d{3})+\.00$/);
  });
});
