/** The chains spendscope checks records against (docs/reconciliation.md): operator settings, never a tenant's input. */
import type { ChainsConfig } from './config-types.js';

type Env = Record<string, string | undefined>;

/** Chain ids of local development chains (hardhat, anvil, ganache): one confirmation is enough there. */
const LOCAL_CHAIN_IDS = new Set(['31337', '1337']);
/** Confirmations on a public chain unless CHAIN_CONFIRMATIONS says otherwise. */
export const PUBLIC_CONFIRMATIONS = 12;

const EVM_NETWORK = /^eip155:[1-9][0-9]{0,18}$/;

/** CHAIN_RPC_URLS and the settings beside it; undefined when no chain is configured (then no request leaves the machine). */
export function chainsSetting(env: Env, problems: string[], integer: (name: string, fallback: number, min: number, max: number) => number): ChainsConfig | undefined {
  const raw = env.CHAIN_RPC_URLS?.trim();
  if (!raw) {
    for (const name of ['CHAIN_CONFIRMATIONS', 'SETTLEMENT_GRACE_S']) {
      if (env[name]?.trim()) problems.push(`${name}: needs CHAIN_RPC_URLS (the chains to check records against)`);
    }
    return undefined;
  }
  const rpcUrls: Record<string, string> = {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    problems.push('CHAIN_RPC_URLS: must be a JSON object of CAIP-2 network to JSON-RPC URL, e.g. {"eip155:8453": "https://mainnet.base.org"}');
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed) || Object.keys(parsed).length === 0) {
    problems.push('CHAIN_RPC_URLS: must be a JSON object with at least one CAIP-2 network, e.g. {"eip155:8453": "https://mainnet.base.org"}');
    return undefined;
  }
  for (const [network, url] of Object.entries(parsed as Record<string, unknown>)) {
    if (!EVM_NETWORK.test(network)) {
      problems.push(`CHAIN_RPC_URLS: "${network}" must be an EVM network as CAIP-2 (eip155:<chain id>); other chains cannot be checked yet`);
      continue;
    }
    if (typeof url !== 'string' || !isHttpUrl(url)) {
      problems.push(`CHAIN_RPC_URLS: the URL of ${network} must be an http:// or https:// URL`);
      continue;
    }
    rpcUrls[network] = url;
  }
  const confirmations = confirmationsSetting(env.CHAIN_CONFIRMATIONS?.trim() ?? '', Object.keys(rpcUrls), problems);
  return {
    rpcUrls,
    confirmations,
    graceMs: integer('SETTLEMENT_GRACE_S', 600, 1, 7 * 86_400) * 1000,
    pollMs: integer('SETTLEMENT_POLL_MS', 2_000, 50, 600_000),
    logRangeBlocks: integer('CHAIN_LOG_RANGE', 2_000, 1, 1_000_000),
    rpcConcurrency: integer('CHAIN_RPC_CONCURRENCY', 4, 1, 64),
    rpcTimeoutMs: integer('CHAIN_RPC_TIMEOUT_MS', 10_000, 100, 300_000),
    rpcBatchSize: integer('CHAIN_RPC_BATCH', 50, 1, 1_000),
    reorgDepth: integer('CHAIN_REORG_DEPTH', 64, 1, 100_000),
  };
}

function isHttpUrl(value: string): boolean {
  try {
    return ['http:', 'https:'].includes(new URL(value).protocol);
  } catch {
    return false;
  }
}

/** One number for every network, or a JSON map per network; the defaults for the rest. */
function confirmationsSetting(raw: string, networks: readonly string[], problems: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const network of networks) out[network] = LOCAL_CHAIN_IDS.has(network.slice('eip155:'.length)) ? 1 : PUBLIC_CONFIRMATIONS;
  if (!raw) return out;
  const valid = (n: unknown): n is number => typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= 10_000;
  if (/^\d+$/.test(raw)) {
    const n = Number(raw);
    if (!valid(n)) problems.push(`CHAIN_CONFIRMATIONS: must be a whole number from 1 to 10000, got "${raw}"`);
    else for (const network of networks) out[network] = n;
    return out;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    parsed = undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    problems.push('CHAIN_CONFIRMATIONS: must be a number, or a JSON object of CAIP-2 network to a number, e.g. {"eip155:8453": 10}');
    return out;
  }
  for (const [network, n] of Object.entries(parsed as Record<string, unknown>)) {
    if (!networks.includes(network)) problems.push(`CHAIN_CONFIRMATIONS: "${network}" is not in CHAIN_RPC_URLS`);
    else if (!valid(n)) problems.push(`CHAIN_CONFIRMATIONS: ${network} must be a whole number from 1 to 10000`);
    else out[network] = n;
  }
  return out;
}
