import { isCurrency } from './currencies.js';
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

/** How an amount was valued: the rate of its asset and, when its currency is not the team's, the rate of that currency. */
export interface Valuation {
  /** In the team currency, a decimal string rounded half-even to 18 places. */
  value: string;
  rate: Rate;
  conversion: Rate | undefined;
}

/**
 * The value of `amount` of `asset` at `at` in `currency`: the asset's rate, then at most one more
 * step through the rate of the rate's currency into `currency`. Undefined: no rate values it.
 */
export function valueAt(rates: (asset: string) => RateHistory | undefined, asset: string, amount: string, at: number, currency: string): Valuation | undefined {
  const key = assetKey(asset);
  const rate = key === currency ? { asset: key, value: '1', currency, validFrom: 0, decimals: null, source: 'built-in' as const } : rateAt(rates(key), key, at);
  if (!rate || rate.value === null || rate.currency === null) return undefined;
  const factors = [toUnits(amount), toUnits(rate.value)];
  let conversion: Rate | undefined;
  if (rate.currency !== currency) {
    conversion = rateAt(rates(rate.currency), rate.currency, at);
    if (!conversion || conversion.value === null || conversion.currency !== currency) return undefined;
    factors.push(toUnits(conversion.value));
  }
  // One rounding of the whole product: rounding after each step could lose what the next one scales up.
  return { value: formatUnits(productUnits(factors)), rate, conversion };
}

