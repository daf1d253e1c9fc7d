/**
 * Token contracts by network, for checking records against the chain: a record naming its asset by
 * symbol ("USDC") is checked against this contract. Addresses in lower case; edit here to add one.
 */
export const TOKEN_CONTRACTS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  'eip155:8453': { USDC: '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913', USDBC: '0xd9aaec86b65d86f6a7b5b1b0c42ffa531710b6ca' },
  'eip155:84532': { USDC: '0x036cbd53842c5426634e7929541ec2318f3dcf7e' },
  'eip155:1': { USDC: '0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48', USDT: '0xdac17f958d2ee523a2206206994597c13d831ec7', PYUSD: '0x6c3ea9036406852006290770bedfcaba0e23a0e8' },
  'eip155:11155111': { USDC: '0x1c7d4b196cb0c7b01d743fbc6116a902379c7238' },
  'eip155:137': { USDC: '0x3c499c542cef5e3811e1192ce70d8cc03d5c3359' },
  'eip155:80002': { USDC: '0x41e94eb019c0762f9bfcf9fb1e58725bfb0e7582' },
  'eip155:42161': { USDC: '0xaf88d065e77c8cc2239327c5edb3a432268e5831' },
  'eip155:10': { USDC: '0x0b2c639c533813f4aa9d7837caf62653d097ff85' },
  'eip155:43114': { USDC: '0xb97ef9ef8734c71904d8002f8b6bc66dd9c48a6e' },
  'eip155:43113': { USDC: '0x5425890298aed601595a70ab815c96711a31bc65' },
};

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

export const isEvmAddress = (value: string): boolean => ADDRESS.test(value);

/** The token contract a record's asset means on a network: an address as given (lower case), a symbol by the table; undefined when unknown. */
export function tokenContract(network: string, asset: string): string | undefined {
  if (isEvmAddress(asset)) return asset.toLowerCase();
  const table = TOKEN_CONTRACTS[network];
  return table && Object.hasOwn(table, asset.toUpperCase()) ? table[asset.toUpperCase()] : undefined;
}
