/**
 * npm run bench:ingest -- [--seconds 10] [--concurrency 1,4,16] [--batch 100] [--policies 100]
 *
 * Starts the service on a temporary data directory (embedded ClickHouse), drives POST /api/v1/events
 * over HTTP with realistic batches at each concurrency for a fixed time, and prints events/s, p50
 * and p99 request latency and the server's peak RSS. Then, with the server stopped, it checks that
 * every acknowledged record is stored once, and inserts the same kind of rows straight through the
 * ClickHouse client in large batches: the ceiling the HTTP path is compared with.
 *
 * Also: --server-log FILE keeps the server's log (LOG_LEVEL=debug adds per-flush figures),
 * --profile DIR writes a CPU profile of the server.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.js';
import { SchemaRegistry } from '../src/http/validation.js';
import { recordToRow, EVENT_COLUMNS } from '../src/ingest/records.js';
import { SCHEMA_DIR } from '../src/paths.js';
import { createEventStore, ensureDatabase } from '../src/stores/clickhouse.js';
import { startChildService, type ChildService } from './service.js';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    concurrency: { type: 'string', default: '1,4,16' },
    batch: { type: 'string', default: '100' },
    warmup: { type: 'string', default: '2' },
    policies: { type: 'string', default: '0' },
    'server-log': { type: 'string' },
    // Writes a V8 CPU profile of the server to this folder (open it in Chrome DevTools).
    profile: { type: 'string' },
  },
});
const SECONDS = Number(args.seconds);
const LEVELS = args.concurrency!.split(',').map(Number);
const BATCH = Number(args.batch);
const API_KEY = 'bench-key-0123456789abcdef';

// ---------------------------------------------------------------------------------------------
// Realistic records: many agents and endpoints, 6-decimal USDC amounts, mostly allowed, SDK shape.

const AGENTS = Array.from({ length: 200 }, (_, i) => `agent-${i}`);
const ENDPOINTS = [
  'https://api.openai.com/v1/chat/completions',
  'https://api.anthropic.com/v1/messages',
  'https://api.exa.ai/search',
  'https://api.coingecko.com/api/v3/simple/price?ids=bitcoin',
  'https://data.example.com/v2/prices/eth',
  'https://weather.example.net/forecast?city=lisbon',
  'https://api.tavily.com/search',
  'https://images.example.io/render',
  ...Array.from({ length: 40 }, (_, i) => `https://svc${i}.example.com/api/v1/resource/${i}`),
];
const NETWORKS = ['eip155:8453', 'eip155:8453', 'eip155:8453', 'eip155:84532', 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'];
const OUTCOMES = ['allowed', 'allowed', 'allowed', 'allowed', 'allowed', 'allowed', 'allowed', 'allowed', 'flagged', 'blocked'];
const RUN = crypto.randomBytes(4).toString('hex');
let sequence = 0;
const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!;

function record(now: number): Record<string, unknown> {
  const micro = Math.floor(Math.random() * 50_000) + 1; // up to 0.05 USDC
  const createdAt = now - Math.floor(Math.random() * 3_600_000);
  return {
    id: `${RUN}${(sequence++).toString(16).padStart(8, '0')}`,
    agent_id: pick(AGENTS),
    team: pick(['research', 'ops', null]),
    human_sponsor: null,
    amount: (micro / 1e6).toFixed(6),
    amount_raw: '0',
    asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
    network: pick(NETWORKS),
    scheme: 'exact',
    tx_hash: `0x${crypto.randomBytes(8).toString('hex')}`,
    payer_address: '0x1111111111111111111111111111111111111111',
    payee_address: '0x2222222222222222222222222222222222222222',
    facilitator: null,
    endpoint: pick(ENDPOINTS),
    method: 'POST',
    status_code: 200,
    response_time_ms: Math.floor(Math.random() * 800),
    policy_id: null,
    policy_evaluation: pick(OUTCOMES),
    budget_remaining: null,
    task_id: null,
    session_id: null,
    metadata: { run: RUN },
    created_at: createdAt,
    settled_at: createdAt,
    tags: [],
  };
}

const batchBody = (): string => {
  const now = Date.now();
  return JSON.stringify({ events: Array.from({ length: BATCH }, () => record(now)) });
};

// ---------------------------------------------------------------------------------------------
/** Resident memory of a process in MiB, from /proc (Linux). */
function rssMiB(pid: number): number {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    return kb / 1024;
  } catch {
    return 0;
  }
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

/** One API call; rejects unless the status is the expected one. Returns the parsed body. */
function call<T>(port: number, method: string, path: string, body: string | undefined, expect: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { Authorization: `Bearer ${API_KEY}` };
    if (body !== undefined) Object.assign(headers, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
    const req = http.request({ host: '127.0.0.1', port, method, path, agent, headers }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => {
        if (res.statusCode !== expect) return reject(new Error(`${method} ${path}: HTTP ${res.statusCode}: ${text}`));
        resolve(JSON.parse(text) as T);
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

const post = async (port: number, body: string): Promise<number> =>
  (await call<{ ingested: number }>(port, 'POST', '/api/v1/events', body, 200)).ingested;

/**
 * Policies over the team's agents, each with every limit kind; limits a few records break
 * (the largest payments, busy hours), so evaluation also records alerts as it goes.
 */
async function createPolicies(port: number, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const policy = {
      name: `bench policy ${i}`,
      agents: [AGENTS[(2 * i) % AGENTS.length], AGENTS[(2 * i + 1) % AGENTS.length]],
      limits: [
        { kind: 'per_call', amount: '0.049' },
        { kind: 'per_hour', amount: '20' },
        { kind: 'daily', amount: '200' },
        { kind: 'per_endpoint', amount: '2', endpoint: new URL(ENDPOINTS[i % 8]!).hostname },
      ],
      action: i % 2 ? 'block' : 'flag',
      ...(i % 10 === 0 ? { timezone: 'America/New_York' } : {}),
    };
    await call(port, 'POST', '/api/v1/policies', JSON.stringify(policy), 201);
  }
}

interface LevelResult {
  concurrency: number;
  events: number;
  seconds: number;
  latencies: number[];
  peakRss: number;
  /** CPU seconds per wall second: the server process, and this load generator. */
  serverCpu: number;
  clientCpu: number;
}

/** user+system CPU seconds of a process so far, from /proc (Linux). */
function cpuSeconds(pid: number): number {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

async function drive(service: ChildService, concurrency: number, seconds: number): Promise<LevelResult> {
  const latencies: number[] = [];
  let events = 0;
  let peakRss = rssMiB(service.pid);
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMiB(service.pid))), 100);
  const serverCpu0 = cpuSeconds(service.pid);
  const clientCpu0 = process.cpuUsage();
  const start = performance.now();
  const end = start + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const body = batchBody();
        const t0 = performance.now();
        const ingested = await post(service.port, body);
        latencies.push(performance.now() - t0);
        events += ingested; // not `events += await ...`: that reads events before the await and loses updates
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  clearInterval(sampler);
  peakRss = Math.max(peakRss, rssMiB(service.pid));
  const client = process.cpuUsage(clientCpu0);
  return {
    concurrency,
    events,
    seconds: elapsed,
    latencies,
    peakRss,
    serverCpu: (cpuSeconds(service.pid) - serverCpu0) / elapsed,
    clientCpu: (client.user + client.system) / 1e6 / elapsed,
  };
}

const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

interface Phase {
  policies: number;
  results: LevelResult[];
  acknowledged: number;
  openAlerts: number;
  dataDir: string;
}

/** Starts a service on a fresh data directory, creates the policies, drives every level, stops it. */
async function measure(policies: number): Promise<Phase> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spendscope-bench-ingest-'));
  const service = await startChildService({
    dataDir,
    env: { BOOTSTRAP_API_KEY: API_KEY, ...(process.env.LOG_LEVEL ? { LOG_LEVEL: process.env.LOG_LEVEL } : {}) },
    nodeArgs: args.profile ? ['--cpu-prof', `--cpu-prof-dir=${args.profile}`] : [],
    logFile: args['server-log'],
  });
  let acknowledged = 0;
  let openAlerts = 0;
  const results: LevelResult[] = [];
  try {
    await createPolicies(service.port, policies);
    acknowledged += (await drive(service, 4, Number(args.warmup))).events;
    for (const level of LEVELS) {
      const result = await drive(service, level, SECONDS);
      acknowledged += result.events;
      results.push(result);
    }
    openAlerts = (await call<{ usage: { openAlerts: number } }>(service.port, 'GET', '/api/v1/team', undefined, 200)).usage.openAlerts;
  } finally {
    const code = await service.stop();
    if (code !== 0) console.log(`service exited with ${code}`);
  }
  console.log(`\nHTTP POST /api/v1/events, ${policies} active policies (${fmt(openAlerts)} open alerts at the end)`);
  console.log('concurrency    events/s    p50 ms    p99 ms    peak RSS MiB    server CPU    load-generator CPU');
  for (const r of results) {
    const sorted = [...r.latencies].sort((a, b) => a - b);
    console.log(
      `${String(r.concurrency).padStart(11)}  ${fmt(r.events / r.seconds).padStart(10)}  ${fmt(percentile(sorted, 50), 1).padStart(8)}` +
        `  ${fmt(percentile(sorted, 99), 1).padStart(8)}  ${fmt(r.peakRss).padStart(14)}  ${fmt(r.serverCpu, 2).padStart(12)}` +
        `  ${fmt(r.clientCpu, 2).padStart(20)}`,
    );
  }
  return { policies, results, acknowledged, openAlerts, dataDir };
}

async function main(): Promise<void> {
  const policies = Number(args.policies);
  console.log(`spendscope ingest benchmark, ${new Date().toISOString().slice(0, 10)}: embedded ClickHouse, ` +
    `${os.cpus().length} cores, batches of ${BATCH}, ${SECONDS} s per level`);
  // With policies, the same run first measures without them, on its own fresh store, for the ratio.
  const baseline = policies > 0 ? await measure(0) : undefined;
  if (baseline) fs.rmSync(baseline.dataDir, { recursive: true, force: true });
  const { results, acknowledged, dataDir } = await measure(policies);
  agent.destroy();
  if (baseline) {
    console.log(`\nwith ${policies} policies / without, events/s:`);
    results.forEach((r, i) => {
      const before = baseline.results[i]!;
      console.log(`  concurrency ${r.concurrency}: ${fmt(r.events / r.seconds / (before.events / before.seconds), 2)}`);
    });
  }

  // The server is stopped: this process may open the engine. Every acknowledged record is there once?
  const config = loadConfig({ DATA_DIR: dataDir });
  const store = createEventStore(config.clickhouse);
  await ensureDatabase(store, config.clickhouse);
  const [stored] = await store.query<{ n: string; ids: string }>('SELECT count() AS n, uniqExact(team_id, id) AS ids FROM events');
  console.log(`\nacknowledged ${fmt(acknowledged)} records; stored ${fmt(Number(stored!.n))} rows with ${fmt(Number(stored!.ids))} distinct ids`);

  // The ceiling: the same kind of rows, built by the same code, inserted directly in large batches.
  const [team] = await store.query<{ team_id: string }>('SELECT any(team_id) AS team_id FROM events');
  await store.command('TRUNCATE TABLE events');
  const schemas = new SchemaRegistry(path.join(SCHEMA_DIR, 'api'));
  const total = Math.min(1_000_000, Math.max(200_000, results.at(-1)?.events ?? 200_000));
  const chunk = 50_000;
  const receivedAt = Date.now();
  const chunks: unknown[][][] = [];
  for (let done = 0; done < total; done += chunk) {
    const rows: unknown[][] = [];
    for (let i = 0; i < Math.min(chunk, total - done); i++) {
      const outcome = recordToRow(record(receivedAt), schemas, team!.team_id, 'events', receivedAt);
      if (!outcome.ok) throw new Error(JSON.stringify(outcome.errors));
      rows.push(EVENT_COLUMNS.map((c) => outcome.row[c]));
    }
    chunks.push(rows);
  }
  const t0 = performance.now();
  for (const rows of chunks) await store.insertRows('events', EVENT_COLUMNS, rows);
  const directSeconds = (performance.now() - t0) / 1000;
  const direct = total / directSeconds;
  await store.close();
  fs.rmSync(dataDir, { recursive: true, force: true });

  const top = results.find((r) => r.concurrency === Math.max(...LEVELS));
  console.log(`direct insert through the ClickHouse client (${fmt(chunk)}-row inserts, ${fmt(total)} rows): ${fmt(direct)} events/s`);
  if (top) console.log(`ratio HTTP at concurrency ${top.concurrency} / direct: ${fmt(top.events / top.seconds / direct, 2)}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
