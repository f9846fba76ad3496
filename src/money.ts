/**
 * Hours and money live as integer micro-units (1e-6). Arithmetic that can exceed 2^53 goes
 * through BigInt; every rounding is half away from zero, in one place.
 */
export const MICROS = 1_000_000;

export function toMicros(value: number): number {
  return Math.round(value * MICROS);
}

export function fromMicros(micros: number): number {
  // Division of an integer by 1e6 gives the nearest double to the 6-decimal value, which
  // JSON prints with at most 6 decimals.
  return micros / MICROS;
}

/** round(a × b / divisor) for non-negative integers, exact. */
export function mulDivRound(a: number, b: number, divisor: number): number {
  const product = BigInt(a) * BigInt(b);
  const d = BigInt(divisor);
  return Number((product + d / 2n) / d);
}
