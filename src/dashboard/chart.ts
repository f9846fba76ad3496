import { html, raw, type SafeHtml } from './html.js';

export interface Series {
  name: string;
  /** CSS class giving the colour and the dash pattern (colour is never the only signal). */
  className: string;
  values: number[];
}

const W = 720;
const H = 260;
const PAD = { top: 16, right: 16, bottom: 36, left: 72 };

function niceMax(max: number): number {
  if (max <= 0) return 1;
  const exp = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * exp >= max) return step * exp;
  return 10 * exp;
}

/**
 * A line chart drawn on the server: no script, no inline style (the CSP allows neither), sized
 * by its viewBox so it scales with its container. Its text alternative is the table beside it.
 */
export function lineChart(input: {
  labels: string[];
  series: Series[];
  formatValue: (n: number) => string;
  title: string;
  tableId: string;
}): SafeHtml {
  const n = input.labels.length;
  const max = niceMax(Math.max(0, ...input.series.flatMap((s) => s.values)));
  const innerW = W - PAD.left - PAD.right;
  const innerH = H - PAD.top - PAD.bottom;
  const x = (i: number) => PAD.left + (n <= 1 ? innerW / 2 : (i * innerW) / (n - 1));
  const y = (v: number) => PAD.top + innerH - (v / max) * innerH;
  const grid = [0, 0.25, 0.5, 0.75, 1].map((f) => {
    const v = max * f;
    return html`<line class="grid" x1="${PAD.left}" x2="${W - PAD.right}" y1="${y(v)}" y2="${y(v)}" />
      <text class="axis" x="${PAD.left - 8}" y="${y(v) + 4}" text-anchor="end"
        >${input.formatValue(v)}</text
      >`;
  });
  const every = Math.max(1, Math.ceil(n / 8));
  // The last label is always shown; the regular one before it only when they cannot touch.
  const ticks = input.labels.map((label, i) =>
    (i % every === 0 && (i === n - 1 || n - 1 - i >= every / 2 + 0.5)) || i === n - 1
      ? html`<text
          class="axis"
          x="${x(i)}"
          y="${H - 12}"
          text-anchor="${i === 0 && n > 1 ? 'start' : i === n - 1 && n > 1 ? 'end' : 'middle'}"
          >${label}</text
        >`
      : '',
  );
  const lines = input.series.map((s) => {
    const points = s.values.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
    const dots = s.values.map(
      (v, i) =>
        html`<circle class="${s.className}" cx="${x(i).toFixed(1)}" cy="${y(v).toFixed(1)}" r="3">
          <title>${input.labels[i]}: ${s.name} ${input.formatValue(v)}</title>
        </circle>`,
    );
    return html`<polyline class="${s.className}" points="${points}" />${dots}`;
  });
  const legend = input.series.map(
    (s) => html`<li><span class="key ${s.className}" aria-hidden="true"></span>${s.name}</li>`,
  );
  return html`<figure class="chart">
    <svg
      viewBox="0 0 ${W} ${H}"
      role="img"
      aria-labelledby="${input.tableId}-title"
      aria-describedby="${input.tableId}"
    >
      <title id="${input.tableId}-title">${input.title}</title>
      ${grid}${ticks}${lines}
    </svg>
    <figcaption>
      <ul class="legend">
        ${legend}
      </ul>
    </figcaption>
  </figure>`;
}

/** Horizontal bars for a ranked report (one metric), labels escaped. */
export function barChart(input: {
  labels: string[];
  values: number[];
  formatValue: (n: number) => string;
  title: string;
  tableId: string;
}): SafeHtml {
  const rows = input.labels.slice(0, 20);
  const values = input.values.slice(0, 20);
  // Narrower than the line chart: it sits beside its table, so its text must stay legible there.
  const width = 420;
  const barH = 20;
  const gap = 8;
  const labelW = 140;
  const valueW = 90;
  const height = Math.max(1, rows.length) * (barH + gap) + gap;
  const maxAbs = Math.max(1e-9, ...values.map((v) => Math.abs(v)));
  const span = width - labelW - valueW;
  const bars = rows.map((label, i) => {
    const v = values[i] ?? 0;
    const w = Math.max(1, (Math.abs(v) / maxAbs) * span);
    const top = gap + i * (barH + gap);
    const shown = label.length > 20 ? `${label.slice(0, 19)}…` : label;
    return html`<g>
      <text class="axis" x="${labelW - 8}" y="${top + barH / 2 + 4}" text-anchor="end">${shown}</text>
      <rect
        class="${v < 0 ? 'bar negative' : 'bar'}"
        x="${labelW}"
        y="${top}"
        width="${w.toFixed(1)}"
        height="${barH}"
        rx="3"
      >
        <title>${label}: ${input.formatValue(v)}</title>
      </rect>
      <text class="value" x="${labelW + w + 6}" y="${top + barH / 2 + 4}">${input.formatValue(v)}</text>
    </g>`;
  });
  return html`<figure class="chart">
    <svg
      viewBox="0 0 ${width} ${height}"
      role="img"
      aria-labelledby="${input.tableId}-title"
      aria-describedby="${input.tableId}"
    >
      <title id="${input.tableId}-title">${input.title}</title>
      ${bars}
    </svg>
    ${input.labels.length > 20 ? html`<figcaption class="muted">The first 20 rows of the table.</figcaption>` : raw('')}
  </figure>`;
}
