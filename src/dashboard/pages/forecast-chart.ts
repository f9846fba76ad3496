import { placeLabels, textWidth, valueAxis } from '../chart-text.js';
import type { Variant } from '../chart.js';
import { html, type SafeHtml } from '../html.js';

/** One series of a month chart: its figures that happened, then its projection (null where none). */
export interface MonthSeries {
  name: string;
  /** CSS class of its colour and dash pattern (colour is never the only signal). */
  className: string;
  actual: Array<number | null>;
  forecast: Array<number | null>;
  /** The band around the projection, when shown. */
  low?: Array<number | null>;
  high?: Array<number | null>;
}

export interface MonthChartInput {
  labels: string[];
  series: MonthSeries[];
  formatValue: (n: number) => string;
  /** The short form of a value for the axis of a narrow drawing (`€1.2K`). */
  formatCompact: (n: number) => string;
  title: string;
  tableId: string;
  wholeNumbers?: boolean;
}

/**
 * The widths a month chart is drawn at, as the report charts are (chart.ts): the container
 * query of `.month-chart` in dashboard.css shows the drawing laid out for the width it gets.
 */
const VARIANTS: Variant[] = [
  { ranges: 'c-narrow', width: 340, height: 230, fontSize: 12, compact: true, maxTicks: 5 },
  { ranges: 'c-medium', width: 600, height: 270, fontSize: 12, compact: false, maxTicks: 5 },
  { ranges: 'c-wide', width: 900, height: 310, fontSize: 12, compact: false, maxTicks: 6 },
];

function monthSvg(input: MonthChartInput, v: Variant): SafeHtml {
  const fs = v.fontSize;
  const n = input.labels.length;
  const numbers = input.series
    .flatMap((s) => [...s.actual, ...s.forecast, ...(s.low ?? []), ...(s.high ?? [])])
    .filter((x): x is number => x !== null);
  const { ticks } = valueAxis(
    Math.min(0, ...numbers),
    Math.max(0, ...numbers),
    v.maxTicks,
    input.wholeNumbers ? 1 : 0,
  );
  const low = ticks[0] ?? 0;
  const high = ticks[ticks.length - 1] ?? 1;
  const tickLabels = ticks.map(v.compact ? input.formatCompact : input.formatValue);
  // The left margin is the widest value label and its gap: no currency sign is cut off.
  const left = Math.ceil(Math.max(...tickLabels.map((t) => textWidth(t, fs)))) + 12;
  const right = 12;
  const top = fs;
  const bottom = 2 * fs + 10;
  const innerW = v.width - left - right;
  const innerH = v.height - top - bottom;
  const x = (i: number) => left + (n <= 1 ? innerW / 2 : (i * innerW) / (n - 1));
  const y = (value: number) => top + innerH - ((value - low) / (high - low)) * innerH;
  const point = (value: number | null, i: number) =>
    value === null ? null : `${x(i).toFixed(1)},${y(value).toFixed(1)}`;
  const line = (list: Array<number | null>) =>
    list
      .map(point)
      .filter((p): p is string => p !== null)
      .join(' ');
  const grid = ticks.map(
    (t, i) =>
      html`<line class="grid" x1="${left}" x2="${v.width - right}" y1="${y(t)}" y2="${y(t)}" />
        <text class="axis y" x="${left - 8}" y="${(y(t) + fs * 0.35).toFixed(1)}" text-anchor="end"
          >${tickLabels[i]}</text
        >`,
  );
  const placed = placeLabels({
    labels: input.labels,
    xs: input.labels.map((_, i) => x(i)),
    width: v.width,
    fontSize: fs,
    gap: fs,
  });
  const xLabels = placed.map(
    (p) =>
      html`<text class="axis x" x="${p.x.toFixed(1)}" y="${v.height - fs * 0.5}" text-anchor="middle"
        >${p.text}</text
      >`,
  );
  const drawn = input.series.map((s) => {
    const upper = (s.high ?? []).map(point);
    const lower = (s.low ?? []).map(point).reverse();
    const band = [...upper, ...lower].filter((p): p is string => p !== null);
    return html`${band.length > 2 ? html`<polygon class="band ${s.className}" points="${band.join(' ')}" />` : ''}
      <polyline class="${s.className}" points="${line(s.actual)}" />
      <polyline class="${s.className} projected" points="${line(s.forecast)}" />`;
  });
  const titleId = `${input.tableId}-title-${v.width}`;
  return html`<svg
    class="${v.ranges}"
    viewBox="0 0 ${v.width} ${v.height}"
    font-size="${fs}"
    role="img"
    aria-labelledby="${titleId}"
    aria-describedby="${input.tableId}"
  >
    <title id="${titleId}">${input.title}</title>
    ${grid}${xLabels}${drawn}
  </svg>`;
}

/**
 * A month's figures and their forecast, drawn on the server (no script, no inline style) at a
 * few widths like the report charts: solid lines for what happened, dotted lines for the
 * projection, a shaded band between its low and high figures. Its text alternative is the table
 * `tableId`, which callers render beside it.
 */
export function monthChart(input: MonthChartInput): SafeHtml {
  const legend = input.series.map(
    (s) =>
      html`<li><span class="key ${s.className}" aria-hidden="true"></span>${s.name}</li>
        <li><span class="key ${s.className} projected" aria-hidden="true"></span>${s.name}, forecast</li>`,
  );
  return html`<figure class="month-chart">
    ${VARIANTS.map((v) => monthSvg(input, v))}
    <figcaption>
      <ul class="legend">
        ${legend}
      </ul>
    </figcaption>
  </figure>`;
}
