/**
 * npm run demo:reconcile
 *
 * Records checked against the money that moved, offline: a local chain with a USDC-like token, an
 * x402 facilitator and paid API, and spendscope with CHAIN_RPC_URLS pointing at the chain. An agent
 * pays three times through @spendscope/x402 (its records carry the transactions), one more record
 * claims a payment with the wrong amount, and the agent's wallet pays once without any record.
 * Then it prints what spendscope found: each settlement, and the summary.
 */
import { x402Client } from '@x402/core/client';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { wrapFetchWithPayment } from '@x402/fetch';
import { createPublicClient, createWalletClient, http } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { hardhat } from 'viem/chains';
import { withSpendscope } from '../clients/x402/src/index.js';
import { DEV_KEYS, NETWORK } from './x402-stack/chain.js';
import { startPaymentPath } from './x402-stack/with-service.js';

const KEY = 'ss_demo_key_0123456789abcdef0123';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const payer = privateKeyToAccount(DEV_KEYS[3]!);
  const payee = privateKeyToAccount(DEV_KEYS[2]!).address;
  console.log('starting a local chain (hardhat), the token, a facilitator, a paid API and spendscope checking the chain…');
  const stack = await startPaymentPath(KEY, payer.address, (url) => ({ CHAIN_RPC_URLS: JSON.stringify({ [NETWORK]: url }), SETTLEMENT_GRACE_S: '5', SETTLEMENT_POLL_MS: '500' }));
  const { call, paid, chain } = stack;
  try {
    await call('POST', '/agents', { external_id: 'demo-agent', name: 'Demo agent' });
    await call('PATCH', '/agents/demo-agent', { wallets: [{ network: NETWORK, address: payer.address }] });
    await call('POST', '/policies', { name: 'every payment reported', agents: ['demo-agent'], limits: [], on_unreported: 'suspend' });
    console.log(`\nagent demo-agent, wallet ${payer.address} registered on ${NETWORK}; policy: a payment without a record suspends it\n`);

    const client = new x402Client();
    client.register('eip155:*', new ExactEvmScheme(payer));
    client.setSpendControls({ allowedAssets: [{ network: NETWORK, asset: chain.token.address }] });
    const pay = wrapFetchWithPayment(fetch, withSpendscope(client, { url: stack.base, apiKey: KEY, agentId: 'demo-agent' }));
    for (const route of ['dear', 'cheap', 'cheap']) {
      await (await pay(`${paid.url}/${route}`)).json();
      console.log(`paid GET /${route} through x402: recorded with its transaction`);
    }
    const [first] = (await call('GET', '/authorizations?agent=demo-agent&limit=3')).data as { id: string }[];
    const captured = (await call('GET', `/audit/${first!.id}.capture`)) as { tx_hash: string };
    await call('POST', '/events', {
      events: [{ id: 'claims-too-much', agent_id: 'demo-agent', endpoint: `${paid.url}/cheap`, method: 'GET', amount: '0.5', asset: chain.token.address, network: NETWORK, tx_hash: captured.tx_hash, payer_address: payer.address, payee_address: payee }],
    });
    console.log(`sent a record claiming 0.5 for transaction ${captured.tx_hash.slice(0, 18)}… (it moved 0.01)`);

    const transport = http(chain.url);
    const wallet = createWalletClient({ chain: hardhat, transport, account: payer });
    const hash = await wallet.writeContract({ address: chain.token.address, abi: chain.token.abi as never, functionName: 'transfer', args: [payee, 70_000n] } as never);
    await createPublicClient({ chain: hardhat, transport }).waitForTransactionReceipt({ hash });
    console.log(`the wallet paid 0.07 directly in ${hash.slice(0, 18)}…, and nobody records it\n`);

    console.log('waiting for the checks (the grace period is 5 s)…');
    for (let waited = 0; ; waited += 500) {
      const entries = (await call('GET', '/settlements')).data as { status: string }[];
      if (entries.some((e) => e.status === 'unreported') && entries.every((e) => e.status !== 'pending')) break;
      if (waited > 60_000) throw new Error(`the checks did not finish: ${JSON.stringify(entries)}`);
      await sleep(500);
    }
    for (const e of (await call('GET', '/settlements')).data as { record_id: string | null; status: string; tx_hash: string; differences: { field: string; reported: string; observed: string }[]; observed: { amount: string | null; amount_raw: string } | null }[]) {
      const what = e.record_id ? `record ${e.record_id}` : `transfer of ${e.observed!.amount ?? `${e.observed!.amount_raw} units`}, no record`;
      const diff = e.differences.map((d) => `${d.field} reported ${d.reported}, observed ${d.observed}`).join('; ');
      console.log(`${e.status.padEnd(10)} ${what} (tx ${e.tx_hash.slice(0, 18)}…)${diff ? `: ${diff}` : ''}`);
    }
    const summary = await call('GET', '/settlements/summary');
    console.log(`\nsummary: ${(summary.statuses as { status: string; count: number; value: string }[]).map((s) => `${s.status} ${s.count} (${s.value} ${summary.currency})`).join(', ')}`);
    const alerts = (await call('GET', '/alerts?type=settlement')).data as { kind: string; severity: string; message: string }[];
    for (const a of alerts) console.log(`alert ${a.severity} ${a.kind}: ${a.message}`);
    const agent = await call('GET', '/agents/demo-agent');
    console.log(`\nagent demo-agent is now ${agent.status}`);
  } finally {
    await stack.stop();
  }
}

main().catch((err: Error) => {
  console.error(err);
  process.exit(1);
});
