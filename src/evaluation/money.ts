/**
 * Money in evaluation: integers of 10^-18 asset units (BigInt), exact like the Decimal(38, 18)
 * column and much cheaper to add and compare per record than decimal objects.
 */
const SCALE = 18;
const ONE = 10n ** BigInt(SCALE);

/** "12.5" -> 12500000000000000000n. Accepts what ingest and policy validation accept. */
export function toUnits(decimal: string): bigint {
  const [whole = '0', fraction = ''] = decimal.split('.');
  return BigInt(whole || '0') * ONE + BigInt((fraction + '0'.repeat(SCALE)).slice(0, SCALE) || '0');
}

/** 12500000000000000000n -> "12.5" */
export function formatUnits(units: bigint): string {
  const negative = units < 0n;
  const abs = negative ? -units : units;
  const whole = abs / ONE;
  const fraction = (abs % ONE).toString().padStart(SCALE, '0').replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${fraction ? `.${fraction}` : ''}`;
}
