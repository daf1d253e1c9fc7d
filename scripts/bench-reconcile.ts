/**
 * npm run bench:reconcile -- [--records 2000] [--seconds 20] [--pairs 3] [--concurrency 16] [--poll-ms N]
 *
 * Reconciliation against a local chain (hardhat, scripts/x402-stack): first a pool of real token
 * transfers (mined many to a block), then
 * 1. verification: a service with CHAIN_RPC_URLS gets --records records, each naming its own
 *    transfer; prints records verified per second (from the last acknowledgement to the last
 *    verified), JSON-RPC calls and requests per record (from /metrics), and the service's CPU per
 *    record over that time (less what it spends idle);
 * 2. ingest beside verification: --pairs pairs of fresh services without and with CHAIN_RPC_URLS,
 *    in alternating order, each driven for --seconds by --concurrency clients sending batches of 100
 *    records that name the pool's transfers (so the verifier works on them meanwhile); prints
 *    acknowledged records/s and the service's CPU per record, and the median ratio with/without.
 * --poll-ms N sets the ingest phases' SETTLEMENT_POLL_MS: 600000 is the control, a verifier that
 * is configured and idle, which shows how far the pairs differ with no work done.
 * The chain runs on the same two cores: its CPU for receipts is outside the service's figures.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createPublicClient, encodeFunctionData, http as viemHttp, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { hardhat } from 'viem/chains';
import { DEV_KEYS, NETWORK, startChain, type Chain } from './x402-stack/chain.js';
import { callService, startChildService, type ChildService } from './service.js';
import { cpuSeconds, median } from './stats.js';

const { values: args } = parseArgs({
  options: {
    records: { type: 'string', default: '2000' },
    seconds: { type: 'string', default: '20' },
    pairs: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '16' },
    // The ingest phases' SETTLEMENT_POLL_MS: 600000 is the control (the verifier configured, idle).
    'poll-ms': { type: 'string' },
  },
});
const RECORDS = Number(args.records);
const SECONDS = Number(args.seconds);
const PAIRS = Number(args.pairs);
const CONCURRENCY = Number(args.concurrency);
const KEY = `ss_bench_${crypto.randomBytes(12).toString('hex')}`;
const payer = privateKeyToAccount(DEV_KEYS[3]!);
const payee = privateKeyToAccount(DEV_KEYS[2]!).address;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

async function call<T = any>(service: ChildService, method: string, route: string, body?: unknown): Promise<T> {
  const answer = await callService(agent, service.port, method, `/api/v1${route}`, { Authorization: `Bearer ${KEY}` }, body === undefined ? undefined : JSON.stringify(body));
  if (answer.status >= 300) throw new Error(`${method} ${route}: ${answer.status} ${answer.body}`);
  return (answer.body ? JSON.parse(answer.body) : undefined) as T;
}

/** `count` transfers of the token from the payer, sent with automining off and mined into few blocks. */
async function transfers(chain: Chain, count: number): Promise<Hex[]> {
  const client = createPublicClient({ chain: hardhat, transport: viemHttp(chain.url) });
  const rpc = (method: string, params: unknown[] = []) => client.request({ method: method as never, params: params as never });
  await rpc('evm_setAutomine', [false]);
  let nonce = await client.getTransactionCount({ address: payer.address });
  const hashes: Hex[] = [];
  for (let i = 0; i < count; i++) {
    const data = encodeFunctionData({ abi: chain.token.abi as never, functionName: 'transfer', args: [payee, BigInt(1_000 + i)] } as never);
    const signed = await payer.signTransaction({ chainId: 31337, to: chain.token.address, data, gas: 80_000n, nonce: nonce++, maxFeePerGas: 10n ** 10n, maxPriorityFeePerGas: 1n, type: 'eip1559' });
    hashes.push((await rpc('eth_sendRawTransaction', [signed])) as Hex);
    if (i % 300 === 299) await rpc('evm_mine');
  }
  await rpc('evm_mine');
  await rpc('evm_setAutomine', [true]);
  await client.waitForTransactionReceipt({ hash: hashes.at(-1)! });
  return hashes;
}

const record = (chain: Chain, hash: Hex, i: number) => ({
  id: `${crypto.randomBytes(8).toString('hex')}`,
  agent_id: `bench-agent-${i % 20}`,
  endpoint: `https://svc${i % 40}.example.com/api/v1/resource`,
  method: 'POST',
  amount: String((1_000 + i) / 1e6), // transfer i moved 1000 + i units
  asset: chain.token.address,
  network: NETWORK,
  tx_hash: hash,
  payer_address: payer.address,
  payee_address: payee,
  status_code: 200,
  response_time_ms: 120,
});

async function service(chain: Chain, reconcile: boolean, pollMs?: number): Promise<{ s: ChildService; dataDir: string }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spendscope-bench-reconcile-'));
  const env: Record<string, string> = { BOOTSTRAP_API_KEY: KEY, RATE_LIMIT_RECORDS_PER_SECOND: '0', RATE_LIMIT_REQUESTS_PER_SECOND: '0' };
  if (reconcile) Object.assign(env, { CHAIN_RPC_URLS: JSON.stringify({ [NETWORK]: chain.url }), ...(pollMs ? { SETTLEMENT_POLL_MS: String(pollMs) } : {}) });
  const s = await startChildService({ dataDir, env });
  await call(s, 'PUT', `/rates/${chain.token.address}`, { value: '1', currency: 'USD', decimals: 6, valid_from: new Date(Date.now() - 3_600_000).toISOString() });
  return { s, dataDir };
}

async function stop(x: { s: ChildService; dataDir: string }): Promise<void> {
  await x.s.stop();
  fs.rmSync(x.dataDir, { recursive: true, force: true });
}

const metric = (text: string, name: string): number =>
  text.split('\n').filter((l) => l.startsWith(`${name}{`) && l.includes(`network="${NETWORK}"`)).reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);

async function metrics(s: ChildService): Promise<string> {
  return (await callService(agent, s.port, 'GET', '/metrics', {})).body;
}

async function verification(chain: Chain, hashes: Hex[]): Promise<void> {
  // Polled often, so that the figure is the verifier's speed more than its poll's.
  const x = await service(chain, true, 200);
  try {
    const idle0 = cpuSeconds(x.s.pid);
    await sleep(2_000);
    const idlePerS = (cpuSeconds(x.s.pid) - idle0) / 2;
    const before = await metrics(x.s);
    const records = hashes.slice(0, RECORDS).map((h, i) => record(chain, h, i));
    for (let i = 0; i < records.length; i += 100) await call(x.s, 'POST', '/events', { events: records.slice(i, i + 100) });
    const acked = performance.now();
    const cpu0 = cpuSeconds(x.s.pid);
    let verified = 0;
    let first: number | undefined;
    for (;;) {
      const summary = await call<{ statuses: { status: string; count: number }[] }>(x.s, 'GET', '/settlements/summary');
      verified = summary.statuses.find((s) => s.status === 'verified')?.count ?? 0;
      if (verified > 0 && first === undefined) first = performance.now();
      if (verified >= records.length) break;
      if (performance.now() - acked > 600_000) throw new Error(`only ${verified} of ${records.length} verified in 10 minutes: ${JSON.stringify(summary.statuses)}`);
      await sleep(100);
    }
    const seconds = (performance.now() - acked) / 1000;
    const cpu = cpuSeconds(x.s.pid) - cpu0 - idlePerS * seconds;
    const after = await metrics(x.s);
    const calls = metric(after, 'spendscope_chain_rpc_calls_total') - metric(before, 'spendscope_chain_rpc_calls_total');
    const requests = metric(after, 'spendscope_chain_rpc_requests_total') - metric(before, 'spendscope_chain_rpc_requests_total');
    console.log(`\nverification: ${records.length} records, each its own transfer: the first verified ${((first! - acked) / 1000).toFixed(1)} s after the last acknowledgement (loading, and a poll), all ${seconds.toFixed(1)} s after it`);
    console.log(`  ${(records.length / seconds).toFixed(0)} records verified/s from the acknowledgement`);
    console.log(`  ${(calls / records.length).toFixed(2)} RPC calls and ${(requests / records.length).toFixed(3)} HTTP requests (batches) per record`);
    console.log(`  service CPU per record from the acknowledgement: ${((cpu * 1000) / records.length).toFixed(3)} ms (loading, intake and checks; idle ${(idlePerS * 1000).toFixed(0)} ms/s taken off)`);
  } finally {
    await stop(x);
  }
}

/** Records/s and service CPU per record under --concurrency clients for --seconds. */
async function ingest(chain: Chain, hashes: Hex[], reconcile: boolean): Promise<{ rate: number; cpuMs: number; verified: string }> {
  const x = await service(chain, reconcile, args['poll-ms'] ? Number(args['poll-ms']) : undefined);
  try {
    let i = 0;
    let sent = 0;
    const cpu0 = cpuSeconds(x.s.pid);
    const start = performance.now();
    const end = start + SECONDS * 1000;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (performance.now() < end) {
          const batch = Array.from({ length: 100 }, () => {
            const k = i++ % hashes.length;
            return record(chain, hashes[k]!, k);
          });
          const answer = await call<{ ingested: number }>(x.s, 'POST', '/events', { events: batch });
          sent += answer.ingested;
        }
      }),
    );
    const seconds = (performance.now() - start) / 1000;
    const cpu = cpuSeconds(x.s.pid) - cpu0;
    let verified = '';
    if (reconcile) {
      const summary = await call<{ statuses: { status: string; count: number }[] }>(x.s, 'GET', '/settlements/summary');
      verified = summary.statuses.map((s) => `${s.count} ${s.status}`).join(', ') || 'none taken in';
    }
    return { rate: sent / seconds, cpuMs: (cpu * 1000) / sent, verified };
  } finally {
    await stop(x);
  }
}

async function main(): Promise<void> {
  console.log(`bench:reconcile on ${os.cpus().length} cores: a local chain, ${Math.max(RECORDS, 2_000)} transfers…`);
  const chain = await startChain([payer.address]);
  try {
    const hashes = await transfers(chain, Math.max(RECORDS, 2_000));
    await verification(chain, hashes);
    console.log(`\ningest beside verification: ${PAIRS} pairs, ${CONCURRENCY} clients, batches of 100 naming the pool's transfers, ${SECONDS} s each`);
    const ratios: { rate: number; cpu: number }[] = [];
    for (let p = 0; p < PAIRS; p++) {
      const order = p % 2 === 0 ? [false, true] : [true, false];
      const results = new Map<boolean, Awaited<ReturnType<typeof ingest>>>();
      for (const reconcile of order) results.set(reconcile, await ingest(chain, hashes, reconcile));
      const off = results.get(false)!;
      const on = results.get(true)!;
      ratios.push({ rate: on.rate / off.rate, cpu: on.cpuMs / off.cpuMs });
      console.log(
        `  pair ${p + 1}: without ${off.rate.toFixed(0)} records/s, ${off.cpuMs.toFixed(4)} ms CPU a record; with ${on.rate.toFixed(0)} records/s, ${on.cpuMs.toFixed(4)} ms CPU a record (meanwhile: ${on.verified}); ratio ${(on.rate / off.rate).toFixed(3)} records/s, ${(on.cpuMs / off.cpuMs).toFixed(3)} CPU`,
      );
    }
    console.log(`\nmedian with/without: records/s ${median(ratios.map((r) => r.rate)).toFixed(3)}, CPU a record ${median(ratios.map((r) => r.cpu)).toFixed(3)} (goal: records/s at least 0.95)`);
  } finally {
    await chain.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    console.error(err);
    process.exit(1);
  },
);
