/**
 * Counts, shares and changes for display. Amounts are money.ts's, times time.ts's: one formatter
 * each, used everywhere.
 */

export function formatCount(value: number | null | undefined): string {
  if (value === null || value === undefined) return '–';
  return value.toLocaleString('en-US');
}

/** A change in percent (the API's own rounding), with its sign; null when there was nothing before. */
export function formatChange(value: number | null | undefined): string {
  if (value === null || value === undefined) return 'no earlier data';
  const sign = value > 0 ? '+' : '';
  return `${sign}${value.toFixed(1)}% vs previous period`;
}

/** A share of 0..1 as a percentage. */
export function formatShare(value: number): string {
  return `${(value * 100).toFixed(1)}%`;
}
