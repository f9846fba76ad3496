import type { Variant } from './chart.js';
import { fitText, textWidth } from './chart-text.js';
import { html, raw, type SafeHtml } from './html.js';

// It sits beside its table on a desktop, so it needs no drawing wider than the medium one.
const BAR_VARIANTS: Variant[] = [
  { ranges: 'c-narrow', width: 340, height: 0, fontSize: 12, compact: true, maxTicks: 0 },
  { ranges: 'c-medium c-wide', width: 600, height: 0, fontSize: 12, compact: false, maxTicks: 0 },
];
const ROWS = 20;

export interface BarChartInput {
  labels: string[];
  values: number[];
  formatValue: (n: number) => string;
  formatCompact: (n: number) => string;
  title: string;
  tableId: string;
}

/**
 * Each row's label sits on its own line above the bar, over the whole width: task type names
 * and combined groups are long, and a label column would leave a phone almost no room for them.
 */
function barSvg(input: BarChartInput, v: Variant): SafeHtml {
  const fs = v.fontSize;
  const labels = input.labels.slice(0, ROWS);
  const values = input.values.slice(0, ROWS);
  const format = v.compact ? input.formatCompact : input.formatValue;
  const valueTexts = values.map(format);
  const valueW = Math.ceil(Math.max(0, ...valueTexts.map((t) => textWidth(t, fs)))) + 8;
  const barH = 14;
  const labelH = fs + 4;
  const rowH = labelH + barH + 10;
  const height = Math.max(1, labels.length) * rowH + 4;
  const span = v.width - valueW - 2;
  const maxAbs = Math.max(1e-9, ...values.map((n) => Math.abs(n)));
  const rows = labels.map((label, i) => {
    const value = values[i] ?? 0;
    const w = Math.max(1, (Math.abs(value) / maxAbs) * span);
    const top = 4 + i * rowH;
    return html`<g>
      <text class="label" x="0" y="${top + fs}">${fitText(label, v.width, fs)}</text>
      <rect
        class="${value < 0 ? 'bar negative' : 'bar'}"
        x="0"
        y="${top + labelH}"
        width="${w.toFixed(1)}"
        height="${barH}"
        rx="2"
      >
        <title>${label}: ${input.formatValue(value)}</title>
      </rect>
      <text class="value" x="${(w + 6).toFixed(1)}" y="${top + labelH + barH / 2 + fs * 0.35}"
        >${valueTexts[i]}</text
      >
    </g>`;
  });
  const titleId = `${input.tableId}-title-${v.width}`;
  return html`<svg
    class="${v.ranges}"
    viewBox="0 0 ${v.width} ${height}"
    font-size="${fs}"
    role="img"
    aria-labelledby="${titleId}"
    aria-describedby="${input.tableId}"
  >
    <title id="${titleId}">${input.title}</title>
    ${rows}
  </svg>`;
}

/** Horizontal bars for a ranked report (one metric), labels escaped. */
export function barChart(input: BarChartInput): SafeHtml {
  return html`<figure class="chart">
    ${BAR_VARIANTS.map((v) => barSvg(input, v))}
    ${
      input.labels.length > ROWS
        ? html`<figcaption class="muted">The first ${ROWS} rows of the table.</figcaption>`
        : raw('')
    }
  </figure>`;
}
