/**
 * npm run demo:x402
 *
 * The payment path on this machine, offline: a local chain with a USDC-like token, an x402
 * facilitator, a paid API (0.01 and 0.25 a call) and spendscope (embedded, on a temporary data
 * directory), then an agent paying through `@x402/fetch` with @spendscope/x402 in front until its
 * budget (1.00 USD a day) stops it. Each payment prints its transaction and the budget left.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { wrapFetchWithPayment } from '@x402/fetch';
import { x402Client } from '@x402/core/client';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { formatUnits } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { withSpendscope } from '../clients/x402/src/index.js';
import { DEV_KEYS, NETWORK, startChain } from './x402-stack/chain.js';
import { startFacilitator } from './x402-stack/facilitator.js';
import { startPaidApi } from './x402-stack/paid-api.js';
import { startChildService } from './service.js';

const KEY = 'ss_demo_key_0123456789abcdef0123';

async function main(): Promise<void> {
  const payer = privateKeyToAccount(DEV_KEYS[3]!);
  // A fresh chain: the payee starts with nothing.
  const payee = privateKeyToAccount(DEV_KEYS[2]!).address;
  console.log('starting a local chain (hardhat), the token, a facilitator and a paid API…');
  const chain = await startChain([payer.address]);
  const facilitator = await startFacilitator(chain.url, DEV_KEYS[1]!);
  const paid = await startPaidApi(facilitator.url, chain.token.address, payee);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spendscope-demo-'));
  console.log('starting spendscope (embedded ClickHouse, a fresh data directory)…');
  const service = await startChildService({ dataDir, env: { BOOTSTRAP_API_KEY: KEY } });
  const base = `http://127.0.0.1:${service.port}`;
  const call = async (method: string, route: string, body?: unknown) => {
    const res = await fetch(`${base}/api/v1${route}`, { method, headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
    if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<Record<string, any>>;
  };
  try {
    // The local token is no built-in stablecoin: a rate says what it is worth (1 USD) and its decimals.
    await call('PUT', `/rates/${chain.token.address}`, { value: '1', currency: 'USD', decimals: 6, valid_from: new Date(Date.now() - 60_000).toISOString() });
    await call('POST', '/policies', { name: 'demo budget', agents: ['demo-agent'], action: 'block', limits: [{ kind: 'daily', amount: '1.00' }] });
    console.log(`\nspendscope ${base}, budget "demo budget": 1.00 USD a day for demo-agent (block)\n`);

    const client = new x402Client();
    client.register('eip155:*', new ExactEvmScheme(payer));
    client.setSpendControls({ allowedAssets: [{ network: NETWORK, asset: chain.token.address }] });
    const pay = wrapFetchWithPayment(fetch, withSpendscope(client, { url: base, apiKey: KEY, agentId: 'demo-agent' }));
    for (let i = 1; i <= 12; i++) {
      const route = i % 3 === 0 ? 'cheap' : 'dear';
      try {
        const res = await pay(`${paid.url}/${route}`);
        await res.json();
        const [auth] = (await call('GET', '/authorizations?agent=demo-agent&limit=1')).data as { id: string; captured_amount: string }[];
        const record = await fetch(`${base}/api/v1/audit/${auth!.id}.capture`, { headers: { Authorization: `Bearer ${KEY}` } }).then((r) => r.json() as Promise<{ tx_hash: string }>);
        const [budget] = (await call('GET', '/budgets?agent_id=demo-agent')).data as { spent: string; remaining: string }[];
        console.log(`payment ${String(i).padStart(2)}: GET /${route.padEnd(5)} paid ${auth!.captured_amount}, tx ${record.tx_hash.slice(0, 18)}…, spent ${budget!.spent}, left ${budget!.remaining}`);
      } catch (err) {
        console.log(`payment ${String(i).padStart(2)}: GET /${route.padEnd(5)} refused: ${(err as Error).message.replace(/^Failed to create payment payload: /, '')}`);
        break;
      }
    }
    const received = await chain.token.balanceOf(payee);
    console.log(`\non chain the payee received ${received} atomic units (${formatUnits(received, 6)} of the token): what was captured, and nothing of the refused payment`);
  } finally {
    await service.stop();
    await paid.close();
    await facilitator.close();
    await chain.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: Error) => {
  console.error(err);
  process.exit(1);
});
