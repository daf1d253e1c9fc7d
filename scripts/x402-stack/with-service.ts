/**
 * The whole payment path for the demo and the benchmark: the local chain (the payer funded), the
 * facilitator, the paid API, and spendscope itself (the built service on a temporary data directory,
 * the team's key `key`), with the team's rate for the test token (1 USD, 6 decimals) set.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { privateKeyToAccount } from 'viem/accounts';
import { startChildService } from '../service.js';
import { DEV_KEYS, startChain, type Chain } from './chain.js';
import { startFacilitator, type Facilitator } from './facilitator.js';
import { startPaidApi, type PaidApi } from './paid-api.js';

export interface PaymentPath {
  chain: Chain;
  facilitator: Facilitator;
  paid: PaidApi;
  /** spendscope's base URL. */
  base: string;
  /** A call to spendscope's API with the key: its JSON answer, or an error saying what failed. */
  call(method: string, route: string, body?: unknown): Promise<Record<string, any>>;
  stop(): Promise<void>;
}

/** `env`: more of spendscope's environment, given the chain's JSON-RPC URL (CHAIN_RPC_URLS, say). */
export async function startPaymentPath(key: string, payer: `0x${string}`, env: (chainUrl: string) => Record<string, string> = () => ({})): Promise<PaymentPath> {
  const chain = await startChain([payer]);
  const facilitator = await startFacilitator(chain.url, DEV_KEYS[1]!);
  const paid = await startPaidApi(facilitator.url, chain.token.address, privateKeyToAccount(DEV_KEYS[2]!).address);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spendscope-x402-'));
  const service = await startChildService({ dataDir, env: { BOOTSTRAP_API_KEY: key, ...env(chain.url) } });
  const base = `http://127.0.0.1:${service.port}`;
  const call = async (method: string, route: string, body?: unknown) => {
    const res = await fetch(`${base}/api/v1${route}`, { method, headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
    if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<Record<string, any>>;
  };
  // The local token is no built-in stablecoin: a rate says what it is worth and its decimals.
  await call('PUT', `/rates/${chain.token.address}`, { value: '1', currency: 'USD', decimals: 6, valid_from: new Date(Date.now() - 60_000).toISOString() });
  return {
    chain,
    facilitator,
    paid,
    base,
    call,
    stop: async () => {
      await service.stop();
      await paid.close();
      await facilitator.close();
      await chain.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
