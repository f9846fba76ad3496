import { placeLabels, textWidth, valueAxis } from './chart-text.js';
import { html, type SafeHtml } from './html.js';

export interface Series {
  name: string;
  /** CSS class giving the colour and the dash pattern (colour is never the only signal). */
  className: string;
  values: number[];
}

/**
 * One drawing of a chart for a range of container widths. An SVG scales its text with its
 * viewBox, so a single drawing is either unreadable on a phone or oversized on a desktop, and
 * a font size changed by CSS no longer matches the layout: the server draws each chart at a few
 * widths, each laid out for its own text, and a container query shows the one that fits
 * (`.chart` in dashboard.css). `ranges` are the CSS classes of the container widths it serves.
 */
export interface Variant {
  ranges: string;
  width: number;
  height: number;
  fontSize: number;
  /** Axis values in the short form (€1.2K) where the width is scarce. */
  compact: boolean;
  maxTicks: number;
}

const LINE_VARIANTS: Variant[] = [
  { ranges: 'c-narrow', width: 340, height: 230, fontSize: 12, compact: true, maxTicks: 5 },
  { ranges: 'c-medium', width: 600, height: 270, fontSize: 12, compact: false, maxTicks: 5 },
  { ranges: 'c-wide', width: 900, height: 310, fontSize: 12, compact: false, maxTicks: 6 },
];

export interface LineChartInput {
  labels: string[];
  series: Series[];
  formatValue: (n: number) => string;
  /** The short form of a value for the axis of a narrow chart (`€1.2K`). */
  formatCompact: (n: number) => string;
  title: string;
  tableId: string;
  /** A count: whole ticks only. */
  wholeNumbers?: boolean;
  /** The first or last point stands for a bucket only partly in the period: drawn dotted. */
  partial?: { first: boolean; last: boolean; note: string };
}

function lineSvg(input: LineChartInput, v: Variant): SafeHtml {
  const fs = v.fontSize;
  const n = input.labels.length;
  const values = input.series.flatMap((s) => s.values);
  const { ticks } = valueAxis(
    Math.min(0, ...values),
    Math.max(0, ...values),
    v.maxTicks,
    input.wholeNumbers ? 1 : 0,
  );
  const low = ticks[0] ?? 0;
  const high = ticks[ticks.length - 1] ?? 1;
  const format = v.compact ? input.formatCompact : input.formatValue;
  const tickLabels = ticks.map(format);
  // The left margin is the widest value label and its gap: no currency sign is cut off.
  const left = Math.ceil(Math.max(...tickLabels.map((t) => textWidth(t, fs)))) + 12;
  const right = 12;
  const top = fs;
  const bottom = 2 * fs + 10;
  const innerW = v.width - left - right;
  const innerH = v.height - top - bottom;
  const x = (i: number) => left + (n <= 1 ? innerW / 2 : (i * innerW) / (n - 1));
  const y = (value: number) => top + innerH - ((value - low) / (high - low)) * innerH;
  const grid = ticks.map(
    (t, i) =>
      html`<line
          class="${t === 0 ? 'grid zero' : 'grid'}"
          x1="${left}"
          x2="${v.width - right}"
          y1="${y(t)}"
          y2="${y(t)}"
        />
        <text class="axis y" x="${left - 8}" y="${(y(t) + fs * 0.35).toFixed(1)}" text-anchor="end"
          >${tickLabels[i]}</text
        >`,
  );
  const xs = input.labels.map((_, i) => x(i));
  const placed = placeLabels({ labels: input.labels, xs, width: v.width, fontSize: fs, gap: fs });
  const xLabels = placed.map(
    (p) =>
      html`<text class="axis x" x="${p.x.toFixed(1)}" y="${v.height - fs * 0.5}" text-anchor="middle"
        >${p.text}</text
      >`,
  );
  // Dots as far apart as their size allows: closer than that they only blur the line.
  const spacing = n <= 1 ? innerW : innerW / (n - 1);
  const radius = spacing >= 12 ? 3 : spacing >= 6 ? 2 : 0;
  const partialFirst = n >= 2 && (input.partial?.first ?? false);
  const partialLast = n >= 2 && (input.partial?.last ?? false);
  const isPartial = (i: number) => (partialFirst && i === 0) || (partialLast && i === n - 1);
  const lines = input.series.map((s) => {
    const path = (from: number, to: number) =>
      s.values
        .slice(from, to + 1)
        .map((value, k) => `${x(from + k).toFixed(1)},${y(value).toFixed(1)}`)
        .join(' ');
    const whole = html`<polyline
      class="${s.className}"
      points="${path(partialFirst ? 1 : 0, partialLast ? n - 2 : n - 1)}"
    />`;
    const ends = [
      partialFirst ? html`<polyline class="${s.className} partial" points="${path(0, 1)}" />` : '',
      partialLast ? html`<polyline class="${s.className} partial" points="${path(n - 2, n - 1)}" />` : '',
    ];
    const dots = s.values.map((value, i) =>
      radius === 0
        ? ''
        : html`<circle
            class="${isPartial(i) ? `${s.className} partial` : s.className}"
            cx="${x(i).toFixed(1)}"
            cy="${y(value).toFixed(1)}"
            r="${radius}"
          >
            <title>
              ${input.labels[i]}${isPartial(i) ? ' (partial)' : ''}: ${s.name} ${input.formatValue(value)}
            </title>
          </circle>`,
    );
    return html`${whole}${ends}${dots}`;
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
    ${grid}${xLabels}${lines}
  </svg>`;
}

/**
 * A line chart drawn on the server: no script, no inline style (the CSP allows neither). Its
 * text alternative is the table beside it.
 */
export function lineChart(input: LineChartInput): SafeHtml {
  const legend = input.series.map(
    (s) => html`<li><span class="key ${s.className}" aria-hidden="true"></span>${s.name}</li>`,
  );
  return html`<figure class="chart">
    ${LINE_VARIANTS.map((v) => lineSvg(input, v))}
    <figcaption>
      <ul class="legend">
        ${legend}
      </ul>
      ${input.partial && (input.partial.first || input.partial.last) ? html`<p class="muted partial-note">${input.partial.note}</p>` : ''}
    </figcaption>
  </figure>`;
}
