/**
 * Display formatting. Amounts arrive as exact decimal strings and are formatted as strings: digits
 * are grouped and the fraction kept whole, so what is shown is exactly what the API said (a float
 * would turn 0.1 + 0.2 style sums, or 18-decimal amounts, into something else).
 */

const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?$/;

/**
 * "1234567.5" -> "1,234,567.50": grouped, at least two fraction digits (`pad: false`: as given),
 * none dropped.
 */
export function formatAmount(value: string | null | undefined, { pad = true } = {}): string {
  if (value === null || value === undefined) return '–';
  const match = DECIMAL.exec(value);
  if (!match) return value;
  const [, sign, whole, fraction = ''] = match;
  const grouped = whole!.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const digits = pad ? fraction.padEnd(2, '0') : fraction;
  return digits ? `${sign}${grouped}.${digits}` : `${sign}${grouped}`;
}

export function formatCount(value: number | null | undefined): string {
  if (value === null || value === undefined) return '–';
  return value.toLocaleString('en-US');
}

/** A change in percent (the API's own rounding), with its sign; null when there was nothing before. */
export function formatChange(value: number | null | undefined): string {
  if (value === null || value === undefined) return 'no earlier data';
  const sign = value > 0 ? '+' : '';
  return `${sign}${value.toFixed(2)}% vs previous period`;
}

/** A share of 0..1 as a percentage. */
export function formatShare(value: number): string {
  return `${(value * 100).toFixed(1)}%`;
}

export function formatTime(iso: string | null | undefined, timeZone?: string): string {
  if (!iso) return '–';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return date.toLocaleString('en-GB', { timeZone, year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
}

/** "3 min ago", for last activity. */
export function formatAgo(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return 'never';
  const seconds = Math.round((now - new Date(iso).getTime()) / 1000);
  if (seconds < 60) return 'just now';
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 48) return `${hours} h ago`;
  return `${Math.round(hours / 24)} days ago`;
}
