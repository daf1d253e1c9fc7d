/**
 * Money in evaluation: integers of 10^-18 asset units (BigInt), exact like the Decimal(38, 18)
 * column and much cheaper to add and compare per record than decimal objects.
 */
const SCALE = 18;

/**
 * "12.5" -> 12500000000000000000n. Accepts what ingest and policy validation accept. One BigInt
 * parse of the digits with the fraction padded to 18 places: no multiplication of BigInts past 64
 * bits (a call into V8's runtime each), which made this a hot spot of every record's evaluation.
 */
export function toUnits(decimal: string): bigint {
  const dot = decimal.indexOf('.');
  if (dot < 0) return BigInt(`${decimal || '0'}${ZEROS}`);
  return BigInt(`${decimal.slice(0, dot)}${`${decimal.slice(dot + 1)}${ZEROS}`.slice(0, SCALE)}`);
}

const ZEROS = '0'.repeat(SCALE);

/**
 * 12500000000000000000n -> "12.5". Cut from the digits as text: dividing a BigInt past 64 bits
 * by 10^18 is a call into V8's runtime, twice the cost of the whole cut (every decision formats
 * several of these for its answer, every alert its figures).
 */
export function formatUnits(units: bigint): string {
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString();
  const cut = digits.length - SCALE;
  const whole = cut > 0 ? digits.slice(0, cut) : '0';
  const fraction = cut >= 0 ? digits.slice(cut) : ZEROS.slice(0, -cut) + digits;
  let end = SCALE;
  while (end > 0 && fraction.charCodeAt(end - 1) === 48 /* '0' */) end--;
  return `${negative ? '-' : ''}${whole}${end > 0 ? `.${fraction.slice(0, end)}` : ''}`;
}

const ONE = 10n ** BigInt(SCALE);

/** The product of amounts in units, rounded once, half-even, to 18 places (the Decimal(38, 18) of a value). */
export function productUnits(factors: readonly bigint[]): bigint {
  let product = 1n;
  for (const factor of factors) product *= factor;
  const scale = ONE ** BigInt(Math.max(0, factors.length - 1));
  const negative = product < 0n;
  const magnitude = negative ? -product : product;
  let quotient = magnitude / scale;
  const twice = (magnitude % scale) * 2n;
  if (twice > scale || (twice === scale && quotient % 2n === 1n)) quotient += 1n;
  return negative ? -quotient : quotient;
}
