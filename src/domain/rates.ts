import { isCurrency } from './currencies.js';
import { formatUnits, mulUnits, toUnits } from './money.js';

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

const USD_PEGGED = [
  'USDC', 'USDT', 'PYUSD', 'USDBC',
  // USDC's token contracts (as in the asset table: src/domain/assets.ts)
  '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913', // Base
  '0x036cbd53842c5426634e7929541ec2318f3dcf7e', // Base Sepolia
  '0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48', // Ethereum
  '0x1c7d4b196cb0c7b01d743fbc6116a902379c7238', // Ethereum Sepolia
  '0x3c499c542cef5e3811e1192ce70d8cc03d5c3359', // Polygon
  '0x41e94eb019c0762f9bfcf9fb1e58725bfb0e7582', // Polygon Amoy
  '0xaf88d065e77c8cc2239327c5edb3a432268e5831', // Arbitrum
  '0x0b2c639c533813f4aa9d7837caf62653d097ff85', // Optimism
  '0xb97ef9ef8734c71904d8002f8b6bc66dd9c48a6e', // Avalanche
  '0x5425890298aed601595a70ab815c96711a31bc65', // Avalanche Fuji
  'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v', // Solana
  '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU', // Solana devnet
  // USDT on Ethereum
  '0xdac17f958d2ee523a2206206994597c13d831ec7',
];

/** The pegs every team has: USD stablecoins at 1 USD, EURC at 1 EUR (each a team may override). */
export const BUILT_IN_RATES: ReadonlyMap<string, Rate> = new Map([
  ...USD_PEGGED.map((asset) => [asset, { asset, value: '1', currency: 'USD', validFrom: 0, decimals: 6, source: 'built-in' } as Rate] as const),
  ['EURC', { asset: 'EURC', value: '1', currency: 'EUR', validFrom: 0, decimals: 6, source: 'built-in' } as Rate] as const,
]);

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
  let value = mulUnits(toUnits(amount), toUnits(rate.value));
  let conversion: Rate | undefined;
  if (rate.currency !== currency) {
    conversion = rateAt(rates(rate.currency), rate.currency, at);
    if (!conversion || conversion.value === null || conversion.currency !== currency) return undefined;
    value = mulUnits(value, toUnits(conversion.value));
  }
  return { value: formatUnits(value), rate, conversion };
}

