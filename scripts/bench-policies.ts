/**
 * npm run bench:policies -- [--policies 2000] [--seconds 10] [--batches 5] [--root DIR] [--only a,b,c]
 *
 * Policy evaluation under many policies, on the real service (a child process on a temporary data
 * directory, embedded ClickHouse), started with MAX_ACTIVE_POLICIES_PER_TEAM=--policies:
 *
 * (a) a breach storm: `policies` team-wide policies (per_call 4.5, per_hour 50, daily 500 and
 *     per_endpoint 100 on one of four hosts), then one batch of 100 records of amount 5 from 100
 *     agents (SDK-shaped ids, 16 random hex): its latency, the alerts it created, the registry's
 *     growth (registry.db and its WAL), and the latency of GET /healthz polled every ~20 ms on
 *     another connection during the batch (max and p50); then `batches` more such batches.
 * (b) the same policies, no breach (amounts 0.001, other agents): records/s for `seconds` at
 *     concurrency 4, batches of 100, and the same before any policy exists (the ceiling).
 * (c) on a fresh service, `policies` policies naming two of 200 agents each, breaking (amount 5):
 *     records/s for `seconds` at concurrency 4, batches of 100, with the /healthz latency beside.
 *
 * --root DIR runs the build of another checkout (DIR/dist/src/main.js), e.g. the commit before the
 * change in a separate worktree: the same load, before and after.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { callService, startChildService, type ChildService } from './service.js';
import { percentile } from './stats.js';

const { values: args } = parseArgs({
  options: {
    policies: { type: 'string', default: '2000' },
    seconds: { type: 'string', default: '10' },
    batches: { type: 'string', default: '5' },
    root: { type: 'string' },
    only: { type: 'string', default: 'a,b,c' },
  },
});
const POLICIES = Number(args.policies);
const SECONDS = Number(args.seconds);
const RUNS = new Set(args.only!.split(','));
const KEY = 'bench-policies-key-0123456789abcdef';
const HOSTS = ['api.openai.com', 'api.anthropic.com', 'api.exa.ai', 'api.tavily.com'];
const ENDPOINTS = ['https://api.openai.com/v1/chat/completions', 'https://api.anthropic.com/v1/messages', 'https://api.exa.ai/search', 'https://api.tavily.com/search'];
const pick = <T>(xs: readonly T[]) => xs[Math.floor(Math.random() * xs.length)]!;
const sdkId = () => crypto.randomBytes(8).toString('hex');

/** The load's connections; /healthz polls on a connection of its own. */
const load = new http.Agent({ keepAlive: true, maxSockets: 16 });
const probe = new http.Agent({ keepAlive: true, maxSockets: 1 });

async function call(service: ChildService, method: string, route: string, body?: unknown, agent = load): Promise<{ status: number; body: string }> {
  return callService(agent, service.port, method, route, { Authorization: `Bearer ${KEY}` }, body === undefined ? undefined : JSON.stringify(body));
}

function record(agentId: string, amount: string, now: number): Record<string, unknown> {
  return {
    id: sdkId(),
    agent_id: agentId,
    endpoint: pick(ENDPOINTS),
    method: 'POST',
    amount,
    asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
    network: 'eip155:8453',
    scheme: 'exact',
    tx_hash: `0x${crypto.randomBytes(32).toString('hex')}`,
    payee_address: '0x2222222222222222222222222222222222222222',
    status_code: 200,
    policy_evaluation: 'allowed',
    created_at: now,
  };
}

async function ingest(service: ChildService, records: Record<string, unknown>[]): Promise<{ ms: number; alerts: number }> {
  const t0 = performance.now();
  const res = await call(service, 'POST', '/api/v1/events', { events: records });
  const ms = performance.now() - t0;
  if (res.status !== 200) throw new Error(`ingest: ${res.status} ${res.body.slice(0, 300)}`);
  return { ms, alerts: (JSON.parse(res.body) as { alerts_created: number }).alerts_created };
}

/** GET /healthz every ~20 ms on its own connection until stopped: latencies in ms. */
function pollHealth(service: ChildService): { stop: () => Promise<number[]> } {
  const latencies: number[] = [];
  let running = true;
  const done = (async () => {
    while (running) {
      const t0 = performance.now();
      const res = await callService(probe, service.port, 'GET', '/healthz', {});
      const ms = performance.now() - t0;
      latencies.push(ms);
      if (res.status !== 200) console.log(`  /healthz answered ${res.status}`);
      if (ms < 20) await new Promise((r) => setTimeout(r, 20 - ms));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await done;
      return latencies.sort((a, b) => a - b);
    },
  };
}

const health = (l: number[]) => `/healthz max ${l.at(-1)?.toFixed(1) ?? '-'} ms, p50 ${percentile(l, 50).toFixed(1)} ms (${l.length} polls)`;

/** registry.db and its WAL, in MiB. */
function registryMiB(dataDir: string): number {
  let bytes = 0;
  for (const file of ['registry.db', 'registry.db-wal']) {
    try {
      bytes += fs.statSync(path.join(dataDir, file)).size;
    } catch {
      // no WAL yet
    }
  }
  return bytes / 1024 ** 2;
}

async function openAlerts(service: ChildService): Promise<number> {
  const res = await call(service, 'GET', '/api/v1/team');
  return (JSON.parse(res.body) as { usage: { openAlerts: number } }).usage.openAlerts;
}

/** `policies` policies through the API, 8 at a time. */
async function createPolicies(service: ChildService, body: (i: number) => Record<string, unknown>): Promise<number> {
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < POLICIES) {
        const i = next++;
        const res = await call(service, 'POST', '/api/v1/policies', body(i));
        if (res.status !== 201) throw new Error(`policy ${i}: ${res.status} ${res.body}`);
      }
    }),
  );
  return (performance.now() - t0) / 1000;
}

const limits = (i: number) => [
  { kind: 'per_call', amount: '4.5' },
  { kind: 'per_hour', amount: '50' },
  { kind: 'daily', amount: '500' },
  { kind: 'per_endpoint', amount: '100', endpoint: HOSTS[i % HOSTS.length] },
];

/** Batches of 100 at concurrency 4 for SECONDS: records/s, p50 and p99 batch latency, alerts created. */
async function drive(service: ChildService, batch: (now: number) => Record<string, unknown>[]): Promise<string> {
  const latencies: number[] = [];
  let alerts = 0;
  const start = performance.now();
  const end = start + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (performance.now() < end) {
        const r = await ingest(service, batch(Date.now()));
        latencies.push(r.ms);
        alerts += r.alerts;
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  return (
    `${Math.round((latencies.length * 100) / elapsed).toLocaleString('en-US')} records/s ` +
    `(${latencies.length} batches in ${elapsed.toFixed(1)} s; batch p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms, max ${latencies.at(-1)!.toFixed(0)} ms; alerts created ${alerts})`
  );
}

async function withService<T>(label: string, run: (service: ChildService, dataDir: string) => Promise<T>): Promise<T> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `spendscope-bench-policies-${label}-`));
  const service = await startChildService({
    dataDir,
    root: args.root && path.resolve(args.root),
    env: {
      BOOTSTRAP_API_KEY: KEY,
      MAX_ACTIVE_POLICIES_PER_TEAM: String(POLICIES),
      RATE_LIMIT_REQUESTS_PER_SECOND: '1000000',
      RATE_LIMIT_RECORDS_PER_SECOND: '100000000',
      // Policies only: no runaway-loop anomalies from the load's few URLs.
      ANOMALY_LOOP_CALLS: '10000000',
    },
  });
  try {
    return await run(service, dataDir);
  } finally {
    await service.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  console.log(
    `spendscope policy benchmark, ${new Date().toISOString().slice(0, 10)}: ${os.cpus().length} cores, embedded ClickHouse, ` +
      `build ${args.root ? path.resolve(args.root) : 'of this checkout'}; load generator on the same machine`,
  );
  if (RUNS.has('a') || RUNS.has('b')) {
    await withService('ab', async (service, dataDir) => {
      const agents = Array.from({ length: 100 }, (_, i) => `agent-${i}`);
      const quiet = Array.from({ length: 100 }, (_, i) => `quiet-${i}`);
      const noBreach = (now: number) => Array.from({ length: 100 }, () => record(pick(quiet), '0.001', now));
      if (RUNS.has('b')) console.log(`\n(b0) no policy, no breach, concurrency 4, batches of 100: ${await drive(service, noBreach)}`);
      const took = await createPolicies(service, (i) => ({ name: `team-wide ${i}`, limits: limits(i), action: i % 2 ? 'block' : 'flag' }));
      console.log(`\n${POLICIES} team-wide policies created in ${took.toFixed(1)} s`);
      if (RUNS.has('a')) {
        console.log(`\n(a) breaking batches: 100 records of amount 5 from 100 agents`);
        for (let b = 0; b <= Number(args.batches); b++) {
          const before = registryMiB(dataDir);
          const openBefore = await openAlerts(service);
          const poll = pollHealth(service);
          const now = Date.now();
          const r = await ingest(service, agents.map((a) => record(a, '5', now)));
          const latencies = await poll.stop();
          // Let the WAL settle before its size is read (the group's flush runs after the answer).
          await new Promise((res) => setTimeout(res, 200));
          const grew = registryMiB(dataDir) - before;
          const opened = (await openAlerts(service)) - openBefore;
          console.log(
            `  batch ${b + 1}: ${r.ms.toFixed(0)} ms, alerts created ${r.alerts} (open alerts +${opened}), registry +${grew.toFixed(1)} MiB, ${health(latencies)}`,
          );
        }
      }
      if (RUNS.has('b')) console.log(`\n(b) ${POLICIES} team-wide policies, no breach, concurrency 4, batches of 100: ${await drive(service, noBreach)}`);
    });
  }
  if (RUNS.has('c')) {
    await withService('c', async (service, dataDir) => {
      const agents = Array.from({ length: 200 }, (_, i) => `agent-${i}`);
      const took = await createPolicies(service, (i) => ({
        name: `pair ${i}`,
        agents: [agents[(2 * i) % agents.length], agents[(2 * i + 1) % agents.length]],
        limits: limits(i),
        action: i % 2 ? 'block' : 'flag',
      }));
      console.log(`\n${POLICIES} policies of two agents each (of 200) created in ${took.toFixed(1)} s`);
      const before = registryMiB(dataDir);
      const poll = pollHealth(service);
      const result = await drive(service, (now) => Array.from({ length: 100 }, () => record(pick(agents), '5', now)));
      const latencies = await poll.stop();
      console.log(`(c) breaking, concurrency 4, batches of 100: ${result}`);
      console.log(`    ${health(latencies)}; registry +${(registryMiB(dataDir) - before).toFixed(1)} MiB, open alerts ${await openAlerts(service)}`);
    });
  }
  load.destroy();
  probe.destroy();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
