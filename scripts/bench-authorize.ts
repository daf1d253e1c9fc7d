/**
 * npm run bench:authorize -- [--seconds 20] [--policies 100] [--rounds 3] [--concurrency 1,16] [--profile DIR]
 *
 * Authorizations against a service with `policies` active policies (each over two of 200 agents,
 * with a per-call, hourly, daily and per-endpoint limit; half of them block), on a temporary data
 * directory with the embedded engine. Measures POST /authorizations at concurrency 1 and 16 (or the
 * levels `--concurrency` lists: `--concurrency 16 --rounds 0` for a quick comparison): p50,
 * p99 and decisions a second (each approval holds for 30 s, so about as many holds are open as a
 * busy team would have). Then ordinary ingest (batches of 100 records, 4 clients) alone and with
 * 16 authorizing clients beside it, in alternating rounds, and prints the ingest throughput and
 * p99 of each, and their ratios (median over the rounds). Beside the service's rows, the same
 * authorize load against the yardsticks (scripts/null-server.ts): a bare express app and a bare
 * Node server answering a fixed authorization, the ceiling of this machine for such requests.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { callService, startChildService, startNullServer } from './service.js';
import { cpuSeconds, median, percentile as pct } from './stats.js';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '20' },
    policies: { type: 'string', default: '100' },
    rounds: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '1,16' },
    // A CPU profile of the service (node --cpu-prof) into this folder, written when it stops.
    profile: { type: 'string' },
  },
});
const SECONDS = Number(args.seconds);
const LEVELS = args.concurrency!.split(',').map(Number);
const KEY = 'bench-authorize-key-0123456789abcdef';
const RUN = crypto.randomBytes(4).toString('hex');
const AGENTS = Array.from({ length: 200 }, (_, i) => `agent-${i}`);
const ENDPOINTS = ['https://api.openai.com/v1/chat', 'https://api.anthropic.com/v1/messages', 'https://api.exa.ai/search', 'https://api.tavily.com/search'];
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
let sequence = 0;

const pick = <T>(xs: readonly T[]) => xs[Math.floor(Math.random() * xs.length)]!;

async function call(port: number, method: string, route: string, body?: unknown): Promise<{ status: number; body: string }> {
  return callService(agent, port, method, route, { Authorization: `Bearer ${KEY}` }, body === undefined ? undefined : JSON.stringify(body));
}

/** Clients sending back to back for `seconds`: latencies (ms, sorted), answers, and the CPU seconds the server (`pid`) spent meanwhile. */
async function drive(
  concurrency: number,
  seconds: number,
  request: () => Promise<string | undefined>,
  pid?: number,
): Promise<{ latencies: number[]; count: number; approved: number; serverCpu: number }> {
  const cpu0 = pid === undefined ? 0 : cpuSeconds(pid);
  const latencies: number[] = [];
  let approved = 0;
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        const outcome = await request();
        latencies.push(performance.now() - t0);
        if (outcome === 'approved') approved++;
      }
    }),
  );
  return { latencies: latencies.sort((a, b) => a - b), count: latencies.length, approved, serverCpu: pid === undefined ? 0 : cpuSeconds(pid) - cpu0 };
}

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spendscope-bench-authorize-'));
  const service = await startChildService({ dataDir, env: { BOOTSTRAP_API_KEY: KEY, ANOMALY_LOOP_CALLS: '10000000', RATE_LIMIT_REQUESTS_PER_SECOND: '1000000' },
    nodeArgs: args.profile ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(args.profile)}`] : [],
  });
  const { port } = service;
  try {
    for (let i = 0; i < Number(args.policies); i++) {
      const res = await call(port, 'POST', '/api/v1/policies', {
        name: `bench policy ${i}`,
        agents: [AGENTS[(2 * i) % AGENTS.length], AGENTS[(2 * i + 1) % AGENTS.length]],
        limits: [
          { kind: 'per_call', amount: '0.05' },
          { kind: 'per_hour', amount: '200' },
          { kind: 'daily', amount: '2000' },
          { kind: 'per_endpoint', amount: '500', endpoint: new URL(ENDPOINTS[i % ENDPOINTS.length]!).hostname },
        ],
        action: i % 2 ? 'block' : 'flag',
      });
      if (res.status !== 201) throw new Error(`policy: ${res.status} ${res.body}`);
    }
    const authorizeOn = (target: number) => async () => {
      const res = await call(target, 'POST', '/api/v1/authorizations', {
        agent_id: pick(AGENTS),
        endpoint: pick(ENDPOINTS),
        // Mostly under the per-call limit of 0.05; one in 20 over it (declined where a block policy applies).
        amount: Math.random() < 0.05 ? '0.06' : (Math.floor(Math.random() * 40_000) / 1e6 + 0.001).toFixed(6),
        expires_in_s: 30,
      });
      if (res.status !== 200) throw new Error(`authorize: ${res.status} ${res.body}`);
      return (JSON.parse(res.body) as { decision: string }).decision;
    };
    const authorize = authorizeOn(port);
    const ingest = async () => {
      const now = Date.now();
      const events = Array.from({ length: 100 }, () => ({
        id: `${RUN}-${sequence++}`,
        agent_id: pick(AGENTS),
        endpoint: pick(ENDPOINTS),
        method: 'POST',
        amount: (Math.floor(Math.random() * 40_000) / 1e6).toFixed(6),
        network: 'eip155:8453',
        created_at: now,
      }));
      const res = await call(port, 'POST', '/api/v1/events', { events });
      if (res.status !== 200) throw new Error(`ingest: ${res.status} ${res.body}`);
      return undefined;
    };

    await drive(4, 3, authorize); // warm-up, not counted
    console.log(`\nspendscope authorization benchmark, ${new Date().toISOString().slice(0, 10)}: ${os.cpus().length} cores, embedded ClickHouse, ` +
      `${args.policies} active policies over 200 agents, holds of 30 s; load generator on the same machine; ${SECONDS} s per row\n`);
    // Server CPU: the whole process (event loop, WAL flushes, the engine's threads) per decision.
    console.log('authorize                     concurrency   decisions   decisions/s   approved   p50 ms   p99 ms   server CPU µs/decision');
    const row = (name: string, concurrency: number, r: Awaited<ReturnType<typeof drive>>) =>
      console.log(
        `${name.padEnd(30)} ${String(concurrency).padStart(5)} ${r.count.toLocaleString('en-US').padStart(11)} ${Math.round(r.count / SECONDS).toLocaleString('en-US').padStart(13)}` +
          ` ${((100 * r.approved) / r.count).toFixed(1).padStart(9)}% ${pct(r.latencies, 50).toFixed(2).padStart(8)} ${pct(r.latencies, 99).toFixed(2).padStart(8)}` +
          ` ${Math.round((r.serverCpu * 1e6) / r.count).toLocaleString('en-US').padStart(24)}`,
      );
    for (const concurrency of LEVELS) row('spendscope', concurrency, await drive(concurrency, SECONDS, authorize, service.pid));
    // The same requests answered with a fixed authorization by servers that do nothing else: the
    // machine's ceiling for this load, with the load generator on the same cores.
    for (const kind of ['express', 'node'] as const) {
      const yardstick = await startNullServer(kind);
      try {
        await drive(4, 2, authorizeOn(yardstick.port));
        for (const concurrency of LEVELS) {
          row(kind === 'node' ? 'null Node JSON server' : 'bare express + express.json', concurrency, await drive(concurrency, SECONDS, authorizeOn(yardstick.port), yardstick.pid));
        }
      } finally {
        yardstick.stop();
      }
    }

    console.log('\ningest (4 clients, batches of 100)   round   records/s   p99 ms   authorizations/s beside it');
    const alone: { rate: number; p99: number }[] = [];
    const beside: { rate: number; p99: number }[] = [];
    for (let round = 1; round <= Number(args.rounds); round++) {
      const a = await drive(4, SECONDS, ingest);
      alone.push({ rate: (a.count * 100) / SECONDS, p99: pct(a.latencies, 99) });
      console.log(`alone ${String(round).padStart(37)} ${Math.round(alone.at(-1)!.rate).toLocaleString('en-US').padStart(11)} ${alone.at(-1)!.p99.toFixed(1).padStart(8)}`);
      const [b, auth] = await Promise.all([drive(4, SECONDS, ingest), drive(16, SECONDS, authorize)]);
      beside.push({ rate: (b.count * 100) / SECONDS, p99: pct(b.latencies, 99) });
      console.log(
        `with authorizations ${String(round).padStart(23)} ${Math.round(beside.at(-1)!.rate).toLocaleString('en-US').padStart(11)} ${beside.at(-1)!.p99.toFixed(1).padStart(8)}` +
          ` ${Math.round(auth.count / SECONDS).toLocaleString('en-US').padStart(14)}`,
      );
    }
    if (alone.length === 0) return;
    const rateRatio = median(beside.map((b, i) => b.rate / alone[i]!.rate));
    const p99Ratio = median(beside.map((b, i) => b.p99 / alone[i]!.p99));
    console.log(`\ningest with authorizations / alone, median of ${args.rounds} rounds: records/s ${rateRatio.toFixed(2)}, p99 ${p99Ratio.toFixed(2)}`);
  } finally {
    await service.stop();
    agent.destroy();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
