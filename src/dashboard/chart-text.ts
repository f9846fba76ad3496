/**
 * Text layout for the server-drawn charts. The server cannot ask the browser how wide a label
 * will be, so it estimates from the advance widths of DejaVu Sans, one of the widest common sans
 * fonts (and what Linux browsers fall back to): a label laid out with these widths fits in
 * system-ui, Segoe UI, Roboto, Helvetica or SF, which all draw narrower.
 */

const NARROW = new Set([..." .,:;'|!iljtfrI()[]"]);
const WIDE = new Set([...'mwMW%—−@']);
const UPPER = /[A-Z]/;
const DIGITS = /[0-9€$£¥₹]/;

/** The estimated width of `text` in user units at `fontSize`. */
export function textWidth(text: string, fontSize: number): number {
  let em = 0;
  for (const c of text) {
    if (NARROW.has(c)) em += 0.36;
    else if (WIDE.has(c)) em += 0.98;
    else if (DIGITS.test(c)) em += 0.64;
    else if (UPPER.test(c)) em += 0.74;
    else if (c.charCodeAt(0) > 0x2e7f)
      em += 1.0; // CJK and other full-width scripts
    else em += 0.62;
  }
  return em * fontSize;
}

/** `text` cut with an ellipsis so it fits in `width` (the whole text when it already does). */
export function fitText(text: string, width: number, fontSize: number): string {
  if (textWidth(text, fontSize) <= width) return text;
  const chars = [...text];
  while (chars.length > 1 && textWidth(`${chars.join('')}…`, fontSize) > width) chars.pop();
  return `${chars.join('').trimEnd()}…`;
}

/**
 * A value axis through 0 with round steps (1, 2, 2.5 or 5 × 10ⁿ) and at most `maxTicks` ticks,
 * so its labels read €50, €100… rather than quarters of an odd maximum. `min` is 0 unless some
 * value is negative (a net saving can be). `minStep` 1 keeps the ticks of a count whole.
 */
export function valueAxis(min: number, max: number, maxTicks: number, minStep = 0): { ticks: number[] } {
  const lo = Math.min(0, min);
  const hi = Math.max(0, max);
  // Figures are kept to the millionth (DESIGN §2): a smaller span is a flat line at 0.
  if (!(hi - lo >= 1e-6)) return { ticks: [0, 0.5, 1] };
  const rough = (hi - lo) / Math.max(1, maxTicks - 1);
  const exp = 10 ** Math.floor(Math.log10(rough));
  const nice = ([1, 2, 2.5, 5, 10].find((m) => m * exp >= rough * (1 - 1e-9)) ?? 10) * exp;
  // A count's axis has no half events: its steps are whole, 2.5 rounded up to 5.
  const step = minStep > 0 ? Math.max(minStep, nice === 2.5 ? 5 : nice) : nice;
  const from = Math.floor(lo / step + 1e-9);
  const to = Math.ceil(hi / step - 1e-9);
  // Rounded to the step's precision so a tick reads 0.3, not 0.30000000000000004.
  const ticks = Array.from({ length: to - from + 1 }, (_, i) => Number(((from + i) * step).toPrecision(12)));
  return { ticks };
}

export interface PlacedLabel {
  index: number;
  /** The centre of the label, moved inwards where it would cross an edge of the chart. */
  x: number;
  text: string;
}

/**
 * The x-axis labels to draw: every k-th one counted back from the last (the latest date is
 * always labelled), with the smallest k for which no two labels come within `gap` of each other
 * and none crosses the edges [0, width].
 */
export function placeLabels(input: {
  labels: string[];
  xs: number[];
  width: number;
  fontSize: number;
  gap: number;
}): PlacedLabel[] {
  const n = input.labels.length;
  const widths = input.labels.map((l) => textWidth(l, input.fontSize));
  const centre = (i: number) => {
    const half = (widths[i] ?? 0) / 2;
    const x = input.xs[i] ?? 0;
    return Math.min(Math.max(x, half), input.width - half);
  };
  for (let k = 1; k <= Math.max(1, n); k++) {
    const chosen: number[] = [];
    for (let i = n - 1; i >= 0; i -= k) chosen.unshift(i);
    let fits = true;
    for (let j = 1; j < chosen.length && fits; j++) {
      const a = chosen[j - 1] ?? 0;
      const b = chosen[j] ?? 0;
      const right = centre(a) + (widths[a] ?? 0) / 2;
      const left = centre(b) - (widths[b] ?? 0) / 2;
      fits = left - right >= input.gap;
    }
    if (fits) return chosen.map((i) => ({ index: i, x: centre(i), text: input.labels[i] ?? '' }));
  }
  return [];
}
