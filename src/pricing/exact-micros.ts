/**
 * usd × rate → integer micro-units, multiplied exactly in decimal and rounded half up.
 *
 * Why not `Math.round(usd * rate * 1e6)`: genai-prices sums per-unit prices in binary floating
 * point, so a cost of exactly $0.0105 arrives as 0.010499999999999999, and multiplying by a
 * rate such as 0.853 adds more error; a value sitting on a half micro-unit could then round
 * the wrong way. We snap the USD amount to 15 significant digits (below the noise, above any
 * real digit a catalogue price × an integer token count can have), read the rate as the
 * decimal it was written as (shortest round-trip string), and multiply as BigInt. Only values
 * near a half micro-unit (or huge) take that path; the rest round the float product.
 */

interface Scaled {
  digits: bigint; // value = digits × 10^-scale
  scale: number;
}

const DECIMAL = /^(\d+)(?:\.(\d*))?(?:e([+-]?\d+))?$/;

/** A finite non-negative number's decimal string (plain or exponent form) as an exact scaled integer. */
function parseDecimal(text: string): Scaled | null {
  const m = DECIMAL.exec(text);
  if (!m) return null;
  const whole = m[1] ?? '0';
  const fraction = m[2] ?? '';
  const exponent = Number(m[3] ?? '0');
  return { digits: BigInt(whole + fraction), scale: fraction.length - exponent };
}

/** The USD amount with binary floating-point noise removed, e.g. 0.010499999999999999 → 0.0105. */
export function snapUsd(usd: number): number {
  return Number(usd.toPrecision(15));
}

/** round_half_up(usd × rate × 1e6), or null when inputs are not finite, non-negative, or the result is not a safe integer. */
export function toMicrosExact(usd: number, rate: number): number | null {
  if (!Number.isFinite(usd) || !Number.isFinite(rate) || usd < 0 || rate < 0) return null;
  // Fast path: the float product is within ~1e-15 relative of the exact one, i.e. below 1e-6
  // micro-units absolute under 1e9 micro-units, so away from a half it rounds the same way.
  const approx = usd * rate * 1e6;
  if (approx < 1e9 && Math.abs(approx - Math.floor(approx) - 0.5) > 1e-6) return Math.round(approx);
  const a = parseDecimal(usd.toPrecision(15));
  const b = parseDecimal(String(rate));
  if (!a || !b) return null;
  const product = a.digits * b.digits;
  const shift = a.scale + b.scale - 6; // decimal places beyond the micro-unit
  let micros: bigint;
  if (shift <= 0) {
    micros = product * 10n ** BigInt(-shift);
  } else {
    const divisor = 10n ** BigInt(shift);
    micros = (product + divisor / 2n) / divisor; // non-negative, so this is half up
  }
  const result = Number(micros);
  return Number.isSafeInteger(result) ? result : null;
}
