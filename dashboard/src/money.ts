/**
 * Money for display. Amounts arrive as exact decimal strings (up to 18 decimals); they are rounded
 * here as scaled BigInts, never through a JS number, so the figure shown is the API's value rounded
 * half away from zero, and the exact string stays beside it (a tooltip, data-exact).
 *
 * An amount is only as meaningful as its asset. The API's sums add amounts of every asset as they
 * are (src/analytics/routes.ts, /analytics/by-asset), so a figure carries a Denomination: the one
 * asset it is in, several (a sum of different assets, said so, never converted), or none known.
 */

const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?$/;

export type Denomination = { kind: 'asset'; asset: string } | { kind: 'mixed'; assets: string[] } | { kind: 'currency'; currency: string } | { kind: 'unknown' };

/** A value in a currency: the team's, what records are valued in (GET /rates). */
export const inCurrency = (currency: string): Denomination => ({ kind: 'currency', currency });

export const UNKNOWN: Denomination = { kind: 'unknown' };

/** What a figure summing records of these assets is in ('' is a record sent without an asset). */
export function denominationOf(assets: readonly string[]): Denomination {
  const distinct = [...new Set(assets)].sort();
  if (distinct.length === 0 || (distinct.length === 1 && distinct[0] === '')) return UNKNOWN;
  if (distinct.length === 1) return { kind: 'asset', asset: distinct[0]! };
  return { kind: 'mixed', assets: distinct };
}

/** The asset name as a person reads it: an empty one is a record that named none. */
export const assetName = (asset: string) => asset || 'no asset';

/** The short label after an amount: "USDC", "USDC+EURC", "3 assets", or nothing when unknown. */
export function denominationLabel(d: Denomination): string {
  if (d.kind === 'asset') return d.asset;
  if (d.kind === 'currency') return d.currency;
  if (d.kind === 'mixed') return d.assets.length === 2 ? d.assets.map(assetName).join('+') : `${d.assets.length} assets`;
  return '';
}

/** A sentence for a tooltip: what the figure adds up. */
export function denominationNote(d: Denomination): string {
  if (d.kind === 'asset') return `in ${d.asset}`;
  if (d.kind === 'currency') return `value in ${d.currency}, the team's currency`;
  if (d.kind === 'mixed') return `a sum of amounts in ${d.assets.map(assetName).join(', ')}, added as they are (not converted)`;
  return 'asset not known';
}

interface Scaled {
  negative: boolean;
  units: bigint;
  scale: number;
}

function parse(value: string): Scaled | undefined {
  const match = DECIMAL.exec(value);
  if (!match) return undefined;
  const [, sign, whole, fraction = ''] = match;
  return { negative: sign === '-', units: BigInt(whole! + fraction), scale: fraction.length };
}

/** units / 10^scale as a decimal string with exactly `places` fraction digits (no sign). */
function render(units: bigint, places: number): string {
  const digits = units.toString().padStart(places + 1, '0');
  const whole = digits.slice(0, digits.length - places);
  const fraction = digits.slice(digits.length - places);
  return places > 0 ? `${whole}.${fraction}` : whole;
}

/** The value rounded half away from zero to `places` fraction digits, as a decimal string. */
export function roundDecimal(value: string, places: number): string {
  const parsed = parse(value);
  if (!parsed) return value;
  const { negative, units, scale } = parsed;
  let rounded: bigint;
  if (scale <= places) rounded = units * 10n ** BigInt(places - scale);
  else {
    const divisor = 10n ** BigInt(scale - places);
    rounded = units / divisor + ((units % divisor) * 2n >= divisor ? 1n : 0n);
  }
  return (negative && rounded !== 0n ? '-' : '') + render(rounded, places);
}

/** Most fraction digits shown; anything smaller reads as "< 0.00000001". */
const MAX_PLACES = 8;

/**
 * Fraction digits that suit the magnitude: 2 from 1 up (cents), and below 1 enough for two
 * significant digits (0.18, 0.0030 -> 0.003, 0.00012), at most 8.
 */
function placesFor(value: string): number {
  const parsed = parse(value);
  if (!parsed || parsed.units === 0n) return 2;
  const [whole = '0', fraction = ''] = value.replace('-', '').split('.');
  if (/[1-9]/.test(whole)) return 2;
  const firstSignificant = fraction.search(/[1-9]/) + 1;
  return Math.min(MAX_PLACES, Math.max(2, firstSignificant + 1));
}

const group = (whole: string) => whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');

export interface ShownAmount {
  /** "1,234.57", "0.003": rounded by magnitude and grouped. */
  text: string;
  /** The API's string, whole. */
  exact: string;
  /** Whether text leaves digits out. */
  rounded: boolean;
}

/** An amount as shown: precision by magnitude, digits grouped, trailing zeros past the cents dropped. */
export function shownAmount(value: string): ShownAmount {
  const parsed = parse(value);
  if (!parsed) return { text: value, exact: value, rounded: false };
  const places = placesFor(value);
  let text = roundDecimal(value, places);
  if (places > 2) text = text.replace(/(\.\d{2}\d*?)0+$/, '$1');
  const [whole = '0', fraction] = text.replace('-', '').split('.');
  const sign = text.startsWith('-') ? '-' : '';
  if (parsed.units !== 0n && !/[1-9]/.test(text)) {
    return { text: `< ${sign}0.${'0'.repeat(MAX_PLACES - 1)}1`, exact: value, rounded: true };
  }
  text = `${sign}${group(whole)}${fraction !== undefined ? `.${fraction}` : ''}`;
  // Rounded when the API's digits, without trailing zeros, say more than the text does.
  const significant = value.replace(/(\.\d*?)0+$/, '$1').replace(/\.$/, '');
  const rounded = significant.split('.')[1]?.length ? significant.split('.')[1]!.length > (fraction?.length ?? 0) : false;
  return { text, exact: value, rounded };
}

/** The exact amount, grouped, every digit the API gave (for details and tooltips). */
export function exactAmount(value: string): string {
  const parsed = parse(value);
  if (!parsed) return value;
  const [whole = '0', fraction] = value.replace('-', '').split('.');
  return `${value.startsWith('-') ? '-' : ''}${group(whole)}${fraction ? `.${fraction}` : ''}`;
}

/** "12.35 USDC" (or "12.35" with no asset known): the one way an amount is written as text. */
export function formatMoney(value: string | null | undefined, denomination: Denomination = UNKNOWN): string {
  if (value === null || value === undefined) return '–';
  const label = denominationLabel(denomination);
  return label ? `${shownAmount(value).text} ${label}` : shownAmount(value).text;
}

/**
 * part / whole as a number, for drawing only (a bar's length, a marker's place), never shown as
 * money: the division is exact on scaled BigInts, to a millionth, before it becomes a number.
 * Undefined when either is not a decimal string, or the whole is 0.
 */
export function ratioOf(part: string, whole: string): number | undefined {
  const a = parse(part);
  const b = parse(whole);
  if (!a || !b || b.units === 0n) return undefined;
  const scale = Math.max(a.scale, b.scale);
  const top = (a.negative ? -1n : 1n) * a.units * 10n ** BigInt(scale - a.scale);
  const bottom = (b.negative ? -1n : 1n) * b.units * 10n ** BigInt(scale - b.scale);
  return Number((top * 1_000_000n) / bottom) / 1_000_000;
}
