/**
 * Names of the common networks, by CAIP-2 id (what records carry). The id stays beside the name:
 * it is what the API, the SDK and BI queries take.
 */
const NETWORKS: Record<string, string> = {
  'eip155:1': 'Ethereum',
  'eip155:11155111': 'Sepolia',
  'eip155:17000': 'Holesky',
  'eip155:8453': 'Base',
  'eip155:84532': 'Base Sepolia',
  'eip155:10': 'Optimism',
  'eip155:11155420': 'Optimism Sepolia',
  'eip155:42161': 'Arbitrum',
  'eip155:421614': 'Arbitrum Sepolia',
  'eip155:137': 'Polygon',
  'eip155:80002': 'Polygon Amoy',
  'eip155:43114': 'Avalanche',
  'eip155:43113': 'Avalanche Fuji',
  'eip155:56': 'BNB Chain',
  'eip155:324': 'zkSync',
  'eip155:59144': 'Linea',
  'eip155:534352': 'Scroll',
  'eip155:100': 'Gnosis',
  'eip155:1329': 'Sei',
  'eip155:2741': 'Abstract',
  'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp': 'Solana',
  'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1': 'Solana devnet',
  'solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z': 'Solana testnet',
};

/** The network's name, or undefined for an id this list does not know (shown as the id). */
export function networkName(id: string): string | undefined {
  return NETWORKS[id];
}
