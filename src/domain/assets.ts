/** A stablecoin every team values without a rate of its own: its decimals and the currency it is pegged to, one for one. */
export interface Stablecoin {
  decimals: number;
  peg: 'USD' | 'EUR';
}

const usd6: Stablecoin = { decimals: 6, peg: 'USD' };

/**
 * The stablecoins known to every install. Keys are symbols (upper case) or token addresses (EVM in
 * lower case, Solana mints as written). Edit here to add one.
 */
export const STABLECOINS: Readonly<Record<string, Stablecoin>> = {
  USDC: usd6,
  USDT: usd6,
  PYUSD: usd6,
  USDBC: usd6,
  EURC: { decimals: 6, peg: 'EUR' },
  // USDC token contracts
  '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913': usd6, // Base
  '0x036cbd53842c5426634e7929541ec2318f3dcf7e': usd6, // Base Sepolia
  '0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48': usd6, // Ethereum
  '0x1c7d4b196cb0c7b01d743fbc6116a902379c7238': usd6, // Ethereum Sepolia
  '0x3c499c542cef5e3811e1192ce70d8cc03d5c3359': usd6, // Polygon
  '0x41e94eb019c0762f9bfcf9fb1e58725bfb0e7582': usd6, // Polygon Amoy
  '0xaf88d065e77c8cc2239327c5edb3a432268e5831': usd6, // Arbitrum
  '0x0b2c639c533813f4aa9d7837caf62653d097ff85': usd6, // Optimism
  '0xb97ef9ef8734c71904d8002f8b6bc66dd9c48a6e': usd6, // Avalanche
  '0x5425890298aed601595a70ab815c96711a31bc65': usd6, // Avalanche Fuji
  EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v: usd6, // Solana
  '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU': usd6, // Solana devnet
  // USDbC (bridged USDC) on Base, USDT and PYUSD on Ethereum
  '0xd9aaec86b65d86f6a7b5b1b0c42ffa531710b6ca': usd6,
  '0xdac17f958d2ee523a2206206994597c13d831ec7': usd6,
  '0x6c3ea9036406852006290770bedfcaba0e23a0e8': usd6,
};

/** Decimals of assets whose smallest-unit amount (amount_raw) can be turned into an amount: the stablecoins'. */
export const ASSET_DECIMALS: Readonly<Record<string, number>> = Object.fromEntries(Object.entries(STABLECOINS).map(([asset, coin]) => [asset, coin.decimals]));

/** Decimals of an asset given by symbol or address, or undefined when unknown. */
export type DecimalsOf = (asset: string) => number | undefined;

function lookup(table: Readonly<Record<string, number>>, asset: string): number | undefined {
  return Object.hasOwn(table, asset) ? table[asset] : Object.hasOwn(table, asset.toUpperCase()) ? table[asset.toUpperCase()] : Object.hasOwn(table, asset.toLowerCase()) ? table[asset.toLowerCase()] : undefined;
}

/** The built-in table. */
export const assetDecimals: DecimalsOf = (asset) => lookup(ASSET_DECIMALS, asset);

/**
 * The built-in table extended by configuration (ASSET_DECIMALS=ETH:18,WBTC:8). A configured asset
 * wins over a built-in one; symbols match in any case, addresses as written or lower-cased.
 */
export function decimalsWith(extra: Readonly<Record<string, number>>): DecimalsOf {
  if (Object.keys(extra).length === 0) return assetDecimals;
  return (asset) => lookup(extra, asset) ?? lookup(ASSET_DECIMALS, asset);
}

/** "1500" with 6 decimals -> "0.0015": exact, by moving the decimal point in the digit string. */
export function rawToAmount(raw: string, decimals: number): string {
  const digits = raw.replace(/^0+(?=\d)/, '').padStart(decimals + 1, '0');
  const whole = digits.slice(0, digits.length - decimals);
  const fraction = digits.slice(digits.length - decimals).replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : whole;
}
