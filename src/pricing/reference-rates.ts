/**
 * Reference USD exchange rates, used to convert a computed agent cost into the organisation
 * currency when the organisation has not set its own `usd_exchange_rate`.
 *
 * These are approximate reference values (mid-market, rounded) as of REFERENCE_RATES_DATE,
 * shipped with the code so pricing never depends on a network call. They are meant to be
 * refreshed with each release; an organisation that needs its own rate sets
 * `usd_exchange_rate`, which always wins. The date is stored with every event priced with
 * this table, so an audit can tell which table was used.
 */
export const REFERENCE_RATES_DATE = '2025-06-30';

/** Units of the currency per 1 USD. */
export const REFERENCE_USD_RATES: Readonly<Record<string, number>> = Object.freeze({
  USD: 1,
  EUR: 0.853,
  GBP: 0.729,
  CHF: 0.796,
  JPY: 144.0,
  CAD: 1.363,
  AUD: 1.524,
  SEK: 9.52,
  NOK: 10.12,
  DKK: 6.36,
  PLN: 3.62,
  INR: 85.7,
  BRL: 5.46,
});

/** The reference rate for an ISO 4217 code, or null when the table has none. */
export function referenceUsdRate(currency: string): number | null {
  // hasOwn: a code like 'constructor' must not reach Object.prototype.
  return Object.hasOwn(REFERENCE_USD_RATES, currency) ? (REFERENCE_USD_RATES[currency] ?? null) : null;
}
