/**
 * x402 v1 network names and their CAIP-2 ids. The SDK copies the network from the payee's 402
 * answer, which for v1 servers is a name, not CAIP-2; edit here to add one.
 */
export const LEGACY_NETWORKS: Readonly<Record<string, string>> = {
  base: 'eip155:8453',
  'base-sepolia': 'eip155:84532',
  ethereum: 'eip155:1',
  sepolia: 'eip155:11155111',
  polygon: 'eip155:137',
  'polygon-amoy': 'eip155:80002',
  arbitrum: 'eip155:42161',
  'arbitrum-sepolia': 'eip155:421614',
  optimism: 'eip155:10',
  'optimism-sepolia': 'eip155:11155420',
  avalanche: 'eip155:43114',
  'avalanche-fuji': 'eip155:43113',
  iotex: 'eip155:4689',
  sei: 'eip155:1329',
  'sei-testnet': 'eip155:1328',
  solana: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
  'solana-devnet': 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1',
};

/** CAIP-2 id of a network as sent: CAIP-2 kept, a known v1 name mapped, empty kept empty; else undefined. */
export function caip2Network(network: string): string | undefined {
  if (network === '' || network.includes(':')) return network;
  return LEGACY_NETWORKS[network];
}
