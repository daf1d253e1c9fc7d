/**
 * The x402 stack the payment-path tests share, started once per run on first use: a local chain
 * with the test token, a facilitator, and a paid API with two prices (scripts/x402-stack).
 */
import { x402Client } from '@x402/core/client';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { createPublicClient, http, type Address, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { hardhat } from 'viem/chains';
import { DEV_KEYS, NETWORK, startChain, type Chain } from '../../scripts/x402-stack/chain.js';
import { startFacilitator, type Facilitator } from '../../scripts/x402-stack/facilitator.js';
import { startPaidApi, type PaidApi } from '../../scripts/x402-stack/paid-api.js';
import { atRunEnd } from './run-end.js';

export interface X402Stack {
  chain: Chain;
  facilitator: Facilitator;
  api: PaidApi;
  payee: Address;
  /** A new x402 client paying from development key `index` (3 or 4: funded with the token). */
  payer(index?: number): x402Client;
  /** The address of development key `index`. */
  payerAddress(index: number): Address;
  /** The token balance of an address, in atomic units. */
  balanceOf(address: Address): Promise<bigint>;
  /** The receipt of a transaction: its status and the token transfers in it. */
  receipt(hash: Hex): Promise<{ status: 'success' | 'reverted'; logs: number }>;
}

const PAYER_KEYS = [3, 4] as const;

let started: Promise<X402Stack> | undefined;

/** The run's stack, started on first use and stopped when the run ends. */
export function x402Stack(): Promise<X402Stack> {
  started ??= start();
  return started;
}

async function start(): Promise<X402Stack> {
  const chain = await startChain(PAYER_KEYS.map((i) => privateKeyToAccount(DEV_KEYS[i]!).address));
  const facilitator = await startFacilitator(chain.url, DEV_KEYS[1]!);
  const payee = privateKeyToAccount(DEV_KEYS[2]!).address;
  const api = await startPaidApi(facilitator.url, chain.token.address, payee);
  atRunEnd(async () => {
    await api.close();
    await facilitator.close();
    await chain.stop();
  });
  const reader = createPublicClient({ chain: hardhat, transport: http(chain.url) });
  return {
    chain,
    facilitator,
    api,
    payee,
    payer(index = 3) {
      const client = new x402Client();
      client.register('eip155:*', new ExactEvmScheme(privateKeyToAccount(DEV_KEYS[index]!)));
      // The local token is no asset the client knows: allowed by name, as the x402 docs say.
      client.setSpendControls({ allowedAssets: [{ network: NETWORK, asset: chain.token.address }] });
      return client;
    },
    payerAddress: (index) => privateKeyToAccount(DEV_KEYS[index]!).address,
    balanceOf: (address) => chain.token.balanceOf(address),
    receipt: async (hash) => {
      const r = await reader.getTransactionReceipt({ hash });
      return { status: r.status, logs: r.logs.length };
    },
  };
}
