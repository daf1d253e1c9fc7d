import { DEFAULT_CURRENCY, isCurrency } from './currencies.js';
import { STABLECOINS } from './assets.js';
import { formatUnits, productUnits, toUnits } from './money.js';

/** What one unit of an asset (or of a currency) is worth in a currency, from a time on. */
export interface Rate {
  /** The asset as rates key it (assetKey): a symbol in upper case, an EVM address in lower case, a currency code. */
  asset: string;
  /** A positive decimal string; null: the team ended its rate at `validFrom`. */
  value: string | null;
  currency: string | null;
  /** Unix ms; the built-in pegs hold from 0. */
  validFrom: number;
  /** Decimals of the asset's smallest unit (amount_raw), when the rate says them. */
  decimals: number | null;
  source: 'built-in' | 'team';
}

/** An EVM address: 0x and 40 hex digits, compared in lower case as the asset table keys them. */
const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/**
 * The key rates use for an asset as a record or a path names it: an EVM address in lower case, a
 * symbol (at most 20 characters) in upper case, anything longer (a Solana mint) as written.
 */
export function assetKey(asset: string): string {
  if (EVM_ADDRESS.test(asset)) return asset.toLowerCase();
  return asset.length <= 20 ? asset.toUpperCase() : asset;
}

/** The pegs every team has: each stablecoin at 1 of its currency (a team's own rate of it wins). */
export const BUILT_IN_RATES: ReadonlyMap<string, Rate> = new Map(
  Object.entries(STABLECOINS).map(([asset, coin]) => [asset, { asset, value: '1', currency: coin.peg, validFrom: 0, decimals: coin.decimals, source: 'built-in' }]),
);

/** A team's rate versions of one asset, newest validFrom first. */
export type RateHistory = readonly Rate[];

/** The rate of an asset at `at`: the team's latest version from before it (an ended one: none of the team's), else the built-in peg. */
export function rateAt(history: RateHistory | undefined, asset: string, at: number): Rate | undefined {
  const own = history?.find((r) => r.validFrom <= at);
  if (own && own.value !== null) return own;
  return BUILT_IN_RATES.get(asset);
}

/** How an amount was valued: the rate of its asset and, when its currency is not the valuing one, the rate of that currency. */
export interface Valuation {
  /** In the valuing currency, a decimal string rounded half-even to 18 places. */
  value: string;
  rate: Rate;
  conversion: Rate | undefined;
}

/** An amount in a currency values as itself: one of these per currency, so a valuation's text is remembered per rate. */
const identities = new Map<string, Rate>();
function identity(currency: string): Rate {
  let rate = identities.get(currency);
  if (!rate) identities.set(currency, (rate = { asset: currency, value: '1', currency, validFrom: 0, decimals: null, source: 'built-in' }));
  return rate;
}

/** Values of Decimal(38, 18) stay below 10^20: as units of 10^-18, below 10^38. */
const MAX_VALUE_UNITS = 10n ** 38n;

/** Why an amount has no value. */
export type Unvalued = 'no-rate' | 'too-large';

/**
 * The value of `amount` of `asset` at `at` in `currency`: the asset's rate, then at most one more
 * step through the rate of the rate's currency into `currency`. A string: why no value (no rate
 * converts it, or the value is past what Decimal(38, 18) holds).
 */
export function valueAt(rates: (asset: string) => RateHistory | undefined, asset: string, amount: string, at: number, currency: string): Valuation | Unvalued {
  const key = assetKey(asset);
  const rate = key === currency ? identity(currency) : rateAt(rates(key), key, at);
  if (!rate || rate.value === null || rate.currency === null) return 'no-rate';
  let conversion: Rate | undefined;
  if (rate.currency !== currency) {
    conversion = rateAt(rates(rate.currency), rate.currency, at);
    if (!conversion || conversion.value === null || conversion.currency !== currency) return 'no-rate';
  }
  // One rounding of the whole product: rounding after each step could lose what the next one scales up.
  // A peg one for one values an amount as itself (validated: below 10^20): no arithmetic.
  if (rate.value === '1' && !conversion) return { value: amount, rate, conversion };
  const units = productUnits(conversion ? [toUnits(amount), toUnits(rate.value), toUnits(conversion.value!)] : [toUnits(amount), toUnits(rate.value)]);
  if (units >= MAX_VALUE_UNITS) return 'too-large';
  return { value: formatUnits(units), rate, conversion };
}

/** An amount's value in `currency` by a book, in 10^-18 units; null when no rate values it (or no asset is given). */
export function valueUnitsIn(book: RateBook, asset: string | null | undefined, amount: string, at: number, currency: string): bigint | null {
  if (!asset) return null;
  const valued = valueAt((a) => book.histories.get(a), asset, amount, at, currency);
  return typeof valued === 'object' ? toUnits(valued.value) : null;
}

/** What one unit of an asset is worth in `currency` at `at`: the product of its rate and conversion, exact (up to 36 places). */
export interface RateFactor {
  /** A decimal string, exact: no rounding (values round once, the amount times this). */
  factor: string;
  rate: Rate;
  conversion: Rate | undefined;
}

/** The factor valueAt multiplies an amount by at `at`, or undefined when no rate converts the asset into `currency`. */
export function rateFactor(rates: (asset: string) => RateHistory | undefined, asset: string, at: number, currency: string): RateFactor | undefined {
  const key = assetKey(asset);
  const rate = key === currency ? identity(currency) : rateAt(rates(key), key, at);
  if (!rate || rate.value === null || rate.currency === null) return undefined;
  if (rate.currency === currency) return { factor: rate.value, rate, conversion: undefined };
  const conversion = rateAt(rates(rate.currency), rate.currency, at);
  if (!conversion || conversion.value === null || conversion.currency !== currency) return undefined;
  const units = toUnits(rate.value) * toUnits(conversion.value);
  const digits = units.toString().padStart(37, '0');
  const whole = digits.slice(0, -36).replace(/^0+(?=\d)/, '');
  const fraction = digits.slice(-36).replace(/0+$/, '');
  return { factor: fraction ? `${whole}.${fraction}` : whole, rate, conversion };
}

/** The rate versions in memory are kept and shared: their text is built once per pair. */
const texts = new WeakMap<Rate, Map<Rate | undefined, string>>();

const shownRate = (rate: Rate) => ({
  asset: rate.asset,
  value: rate.value,
  currency: rate.currency,
  valid_from: new Date(rate.validFrom).toISOString(),
  source: rate.source,
});

/** What the `valuation` column keeps of a value: the rate used and the conversion, as JSON. */
export function valuationText(valuation: Pick<Valuation, 'rate' | 'conversion'>): string {
  let byConversion = texts.get(valuation.rate);
  if (!byConversion) texts.set(valuation.rate, (byConversion = new Map()));
  let text = byConversion.get(valuation.conversion);
  if (text === undefined) {
    text = JSON.stringify(valuation.conversion ? { rate: shownRate(valuation.rate), conversion: shownRate(valuation.conversion) } : { rate: shownRate(valuation.rate) });
    byConversion.set(valuation.conversion, text);
  }
  return text;
}

/**
 * The value of another amount by the rates a valuation used (its `valuation` JSON): what a record
 * whose amount changes after it was valued (a zero-amount record capturing a held amount) is worth.
 * Null: no rate valued it, or past what Decimal(38, 18) holds.
 */
export function revalued(valuation: string, amount: string): string | null {
  if (!valuation) return /^0*(\.0*)?$/.test(amount) ? '0' : null;
  const used = JSON.parse(valuation) as { rate: { value: string }; conversion?: { value: string } };
  const factors = [toUnits(amount), toUnits(used.rate.value), ...(used.conversion ? [toUnits(used.conversion.value)] : [])];
  const units = productUnits(factors);
  return units >= MAX_VALUE_UNITS ? null : formatUnits(units);
}

/** A team's currency and its own rate versions, as held in memory: the versions from `horizon` on, and the one in effect at it. */
export interface RateBook {
  currency: string;
  /** Each asset's versions (rates keys), newest valid_from first. */
  histories: ReadonlyMap<string, RateHistory>;
  /** Unix ms: a time before it may need versions the book does not hold. */
  horizon: number;
}

/** The book of a team with no rates of its own in the default currency: the built-in pegs. */
export const BUILT_IN_BOOK: RateBook = { currency: DEFAULT_CURRENCY, histories: new Map(), horizon: 0 };

/** The decimals of an asset's smallest unit that the team's own rates give (the latest version saying any). */
export function bookDecimals(book: RateBook, asset: string): number | undefined {
  const history = book.histories.get(assetKey(asset));
  if (!history) return undefined;
  // Amounts keep 18 places: a rate that says more (set before that bound) does not make amounts.
  for (const version of history) if (version.decimals !== null) return version.decimals <= 18 ? version.decimals : undefined;
  return undefined;
}
