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

const W = 720;
const H = 260;
// Wide enough on the left for a whole-number amount at the phone's larger axis text.
const PAD = { top: 16, right: 16, bottom: 36, left: 96 };

function niceMax(max: number): number {
  if (max <= 0) return 1;
  const exp = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (step * exp >= max) return step * exp;
  return 10 * exp;
}

/**
 * A month's figures and their forecast, drawn on the server (no script, no inline style): solid
 * lines for what happened, dashed lines for the projection, a shaded band between its low and
 * high figures, and an optional horizontal limit (a budget). Its text alternative is the table
 * `tableId`, which callers render beside it.
 */
export function monthChart(input: {
  labels: string[];
  series: MonthSeries[];
  limit?: { value: number; label: string };
  formatValue: (n: number) => string;
  /** The axis's labels (default formatValue): whole amounts keep them short. */
  formatAxis?: (n: number) => string;
  title: string;
  tableId: string;
}): SafeHtml {
  const axis = input.formatAxis ?? input.formatValue;
  const n = input.labels.length;
  const values = input.series.flatMap((s) => [...s.actual, ...s.forecast, ...(s.high ?? [])]);
  const numbers = values.filter((v): v is number => v !== null);
  const min = Math.min(0, ...numbers);
  const max = niceMax(Math.max(0, input.limit?.value ?? 0, ...numbers) - min) + min;
  const innerW = W - PAD.left - PAD.right;
  const innerH = H - PAD.top - PAD.bottom;
  const x = (i: number) => PAD.left + (n <= 1 ? innerW / 2 : (i * innerW) / (n - 1));
  const y = (v: number) => PAD.top + innerH - ((v - min) / (max - min || 1)) * innerH;
  const line = (list: Array<number | null>) =>
    list
      .map((v, i) => (v === null ? null : `${x(i).toFixed(1)},${y(v).toFixed(1)}`))
      .filter((p): p is string => p !== null)
      .join(' ');
  const grid = [0, 0.25, 0.5, 0.75, 1].map((f) => {
    const v = min + (max - min) * f;
    return html`<line class="grid" x1="${PAD.left}" x2="${W - PAD.right}" y1="${y(v)}" y2="${y(v)}" />
      <text class="axis" x="${PAD.left - 8}" y="${y(v) + 4}" text-anchor="end">${axis(v)}</text>`;
  });
  const every = Math.max(1, Math.ceil(n / 8));
  const ticks = input.labels.map((label, i) =>
    (i % every === 0 && n - 1 - i >= every / 2) || i === n - 1
      ? html`<text
          class="axis"
          x="${x(i)}"
          y="${H - 12}"
          text-anchor="${i === 0 ? 'start' : i === n - 1 ? 'end' : 'middle'}"
          >${label}</text
        >`
      : '',
  );
  const drawn = input.series.map((s) => {
    const low = s.low ?? [];
    const high = s.high ?? [];
    const upper = high.map((v, i) => (v === null ? null : `${x(i).toFixed(1)},${y(v).toFixed(1)}`));
    const lower = low.map((v, i) => (v === null ? null : `${x(i).toFixed(1)},${y(v).toFixed(1)}`));
    const band = [...upper, ...lower.reverse()].filter((p): p is string => p !== null);
    return html`${band.length > 2 ? html`<polygon class="band ${s.className}" points="${band.join(' ')}" />` : ''}
      <polyline class="${s.className}" points="${line(s.actual)}" />
      <polyline class="${s.className} projected" points="${line(s.forecast)}" />`;
  });
  const limit = input.limit
    ? html`<line
          class="limit"
          x1="${PAD.left}"
          x2="${W - PAD.right}"
          y1="${y(input.limit.value)}"
          y2="${y(input.limit.value)}"
        />
        <text class="axis" x="${W - PAD.right}" y="${y(input.limit.value) - 6}" text-anchor="end"
          >${input.limit.label}</text
        >`
    : '';
  const legend = input.series.map(
    (s) =>
      html`<li><span class="key ${s.className}" aria-hidden="true"></span>${s.name}</li>
        <li><span class="key ${s.className} projected" aria-hidden="true"></span>${s.name}, forecast</li>`,
  );
  return html`<figure class="month-chart">
    <svg
      viewBox="0 0 ${W} ${H}"
      role="img"
      aria-labelledby="${input.tableId}-title"
      aria-describedby="${input.tableId}"
    >
      <title id="${input.tableId}-title">${input.title}</title>
      ${grid}${ticks}${drawn}${limit}
    </svg>
    <figcaption>
      <ul class="legend">
        ${legend}
      </ul>
    </figcaption>
  </figure>`;
}
