/**
 * npm run bench:x402 -- [--payments 200] [--concurrency 1,4]
 *
 * Paid requests through the x402 stack on this machine (local chain, facilitator, paid API:
 * scripts/x402-stack) with @spendscope/x402 in front, against the same client without it, in one
 * run and alternating: requests per second and p50/p99 latency at each concurrency. Then what the
 * guard adds per payment, timed at its own calls (the authorization before signing, the capture
 * after), against the facilitator's verify of the same payments: the guard must cost less.
 */
import { parseArgs } from 'node:util';
import { x402Client } from '@x402/core/client';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { wrapFetchWithPayment } from '@x402/fetch';
import { privateKeyToAccount } from 'viem/accounts';
import { withSpendscope } from '../clients/x402/src/index.js';
import { DEV_KEYS, NETWORK } from './x402-stack/chain.js';
import { startPaymentPath } from './x402-stack/with-service.js';

const { values: args } = parseArgs({
  options: {
    payments: { type: 'string', default: '200' },
    concurrency: { type: 'string', default: '1,4' },
  },
});
const PAYMENTS = Number(args.payments);
const LEVELS = args.concurrency!.split(',').map(Number);
const KEY = 'ss_bench_x402_key_0123456789abcdef';

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
const ms = (n: number) => n.toFixed(1);

interface Phase {
  perSecond: number;
  p50: number;
  p99: number;
}

async function drive(pay: (url: string) => Promise<Response>, url: string, concurrency: number, count: number): Promise<Phase> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        next++;
        const t = performance.now();
        const res = await pay(url);
        if (res.status !== 200) throw new Error(`a paid request answered ${res.status}`);
        await res.arrayBuffer();
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { perSecond: count / seconds, p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99) };
}

async function main(): Promise<void> {
  const payer = privateKeyToAccount(DEV_KEYS[3]!);
  const stack = await startPaymentPath(KEY, payer.address);
  const { base, call, paid, chain, facilitator } = stack;
  try {
    await call('POST', '/policies', { name: 'bench budget', agents: ['bench-agent'], action: 'block', limits: [{ kind: 'daily', amount: '1000000' }, { kind: 'per_call', amount: '1' }] });

    const client = () => {
      const c = new x402Client();
      c.register('eip155:*', new ExactEvmScheme(payer));
      c.setSpendControls({ allowedAssets: [{ network: NETWORK, asset: chain.token.address }] });
      return c;
    };
    // The guard's own calls, timed where it makes them.
    // The guard's own calls, timed where it makes them, per authorization: its ask and its capture.
    const guardMs = new Map<string, number>();
    const timedFetch: typeof fetch = async (input, init) => {
      const t = performance.now();
      const res = await fetch(input, init);
      const took = performance.now() - t;
      const id = /\/authorizations\/([^/?]+)/.exec(String(input))?.[1] ?? ((await res.clone().json()) as { id: string }).id;
      guardMs.set(id, (guardMs.get(id) ?? 0) + took);
      return res;
    };
    const bare = wrapFetchWithPayment(fetch, client());
    const guarded = wrapFetchWithPayment(fetch, withSpendscope(client(), { url: base, apiKey: KEY, agentId: 'bench-agent', fetch: timedFetch }));
    const url = `${paid.url}/cheap`;
    // Warm both paths (module loading, connections, the service's first reads).
    await drive(bare, url, 1, 10);
    await drive(guarded, url, 1, 10);
    guardMs.clear();
    facilitator.verifyMs.length = 0;

    console.log(`x402 paid requests on a local chain, ${PAYMENTS} per phase, alternating without and with @spendscope/x402\n`);
    console.log('concurrency   without: req/s   p50 ms   p99 ms    with: req/s   p50 ms   p99 ms    p50 added');
    for (const level of LEVELS) {
      const without = await drive(bare, url, level, PAYMENTS);
      const withGuard = await drive(guarded, url, level, PAYMENTS);
      console.log(
        `${String(level).padStart(11)}   ${without.perSecond.toFixed(1).padStart(13)}   ${ms(without.p50).padStart(6)}   ${ms(without.p99).padStart(6)}   ${withGuard.perSecond.toFixed(1).padStart(11)}   ${ms(withGuard.p50).padStart(6)}   ${ms(withGuard.p99).padStart(6)}   ${ms(withGuard.p50 - without.p50).padStart(9)}`,
      );
    }
    const perPayment = [...guardMs.values()].sort((a, b) => a - b);
    const verify = [...facilitator.verifyMs].sort((a, b) => a - b);
    console.log(`\nthe guard per payment (authorization + capture, at concurrency 1 and above): p50 ${ms(quantile(perPayment, 0.5))} ms, p99 ${ms(quantile(perPayment, 0.99))} ms`);
    console.log(`the facilitator's verify of the same payments: p50 ${ms(quantile(verify, 0.5))} ms, p99 ${ms(quantile(verify, 0.99))} ms`);
    console.log(`guard / verify at the median: ${(quantile(perPayment, 0.5) / quantile(verify, 0.5)).toFixed(2)}`);
  } finally {
    await stack.stop();
  }
}

main().catch((err: Error) => {
  console.error(err);
  process.exit(1);
});
