const moneyFormats = new Map<string, Intl.NumberFormat>();

/** `€1,234.56`: English grouping, 2 decimals, the organisation currency (DESIGN §10). */
export function money(value: number, currency: string): string {
  let format = moneyFormats.get(currency);
  if (!format) {
    format = new Intl.NumberFormat('en-US', {
      style: 'currency',
      currency,
      minimumFractionDigits: 2,
      maximumFractionDigits: 2,
      // A value that rounds to zero shows no sign: `€0.00`, not `-€0.00`.
      signDisplay: 'negative',
    });
    moneyFormats.set(currency, format);
  }
  return format.format(value);
}

const compactMoneyFormats = new Map<string, Intl.NumberFormat>();

/** `€1.25K`: a chart axis's short form of money, where the width is scarce. */
export function moneyCompact(value: number, currency: string): string {
  let format = compactMoneyFormats.get(currency);
  if (!format) {
    format = new Intl.NumberFormat('en-US', {
      style: 'currency',
      currency,
      notation: 'compact',
      maximumSignificantDigits: 3,
      signDisplay: 'negative',
    });
    compactMoneyFormats.set(currency, format);
  }
  return format.format(value);
}

const compactFormat = new Intl.NumberFormat('en-US', {
  notation: 'compact',
  maximumSignificantDigits: 3,
  signDisplay: 'negative',
});

/** `12.5K`: a chart axis's short form of a count or of hours. */
export function compact(value: number): string {
  return compactFormat.format(value);
}

// Hours may be negative (a review that took longer than the work); one that rounds to zero shows
// `0.0`, not `-0.0`.
const hoursFormat = new Intl.NumberFormat('en-US', {
  minimumFractionDigits: 1,
  maximumFractionDigits: 1,
  signDisplay: 'negative',
});
const countFormat = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const decimalFormat = new Intl.NumberFormat('en-US', { maximumFractionDigits: 6 });

/** Hours with one decimal: `1,234.5`, `-0.3`. */
export function hours(value: number): string {
  return hoursFormat.format(value);
}

/** Whole counts: `12,345`. */
export function count(value: number): string {
  return countFormat.format(value);
}

/** A setting or input as entered (up to 6 decimals, grouped): `0.5`, `1,440`. */
export function decimal(value: number): string {
  return decimalFormat.format(value);
}

/** Cost saved ÷ agent cost as `12.3×`; `—` when there is no agent cost. */
export function roi(costSaved: number, agentCost: number): string {
  if (agentCost <= 0) return '—';
  return `${hoursFormat.format(costSaved / agentCost)}×`;
}

/** `2026-11-20 12:00 UTC`: one unambiguous time for every reader. */
export function dateTime(iso: string | null): string {
  if (iso === null) return '—';
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}

/** The change against the previous period: `+12.5%`, `−3.0%`, `new` or `no change`. */
export function change(
  current: number,
  previous: number,
): { text: string; direction: 'up' | 'down' | 'flat' } {
  if (previous === 0 && current === 0) return { text: 'no change', direction: 'flat' };
  if (previous === 0) return { text: 'new this period', direction: 'up' };
  const pct = ((current - previous) / Math.abs(previous)) * 100;
  if (Math.abs(pct) < 0.05) return { text: 'no change', direction: 'flat' };
  const text = `${pct > 0 ? '+' : '−'}${hoursFormat.format(Math.abs(pct))}%`;
  return { text, direction: pct > 0 ? 'up' : 'down' };
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/**
 * A chart's date labels from report bucket keys (`2026-10-21`, or `2026-10` for months): `Oct 21`,
 * `Oct`; with the year when the keys span more than one year, as words read faster than ISO dates.
 */
export function bucketLabels(keys: readonly string[]): string[] {
  const years = new Set(keys.map((k) => k.slice(0, 4)));
  const withYear = years.size > 1;
  return keys.map((key) => {
    const month = MONTHS[Number(key.slice(5, 7)) - 1];
    if (month === undefined) return key;
    if (key.length === 7) return withYear ? `${month} ${key.slice(0, 4)}` : month;
    const day = String(Number(key.slice(8, 10)));
    return withYear ? `${month} ${day}, ${key.slice(0, 4)}` : `${month} ${day}`;
  });
}

const LONG_MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

/** `2026-11` → `November 2026`. */
export function monthName(month: string): string {
  const name = LONG_MONTHS[Number(month.slice(5, 7)) - 1];
  return name === undefined ? month : `${name} ${month.slice(0, 4)}`;
}
