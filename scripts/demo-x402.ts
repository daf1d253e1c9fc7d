/**
 * npm run demo:x402
 *
 * The payment path on this machine, offline: a local chain with a USDC-like token, an x402
 * facilitator, a paid API (0.01 and 0.25 a call) and spendscope (embedded, on a temporary data
 * directory), then an agent paying through `@x402/fetch` with @spendscope/x402 in front until its
 * budget (1.00 USD a day) stops it. Each payment prints its transaction and the budget left.
 */
import { x402Client } from '@x402/core/client';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { wrapFetchWithPayment } from '@x402/fetch';
import { formatUnits } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { withSpendscope } from '../clients/x402/src/index.js';
import { DEV_KEYS, NETWORK } from './x402-stack/chain.js';
import { startPaymentPath } from './x402-stack/with-service.js';

const KEY = 'ss_demo_key_0123456789abcdef0123';

async function main(): Promise<void> {
  const payer = privateKeyToAccount(DEV_KEYS[3]!);
  // A fresh chain: the payee starts with nothing.
  const payee = privateKeyToAccount(DEV_KEYS[2]!).address;
  console.log('starting a local chain (hardhat), the token, a facilitator, a paid API and spendscope…');
  const stack = await startPaymentPath(KEY, payer.address);
  const { base, call, paid, chain } = stack;
  try {
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
        const record = (await call('GET', `/audit/${auth!.id}.capture`)) as { tx_hash: string };
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
    await stack.stop();
  }
}

main().catch((err: Error) => {
  console.error(err);
  process.exit(1);
});
