/**
 * npm run bench:ingest -- [--seconds 30] [--concurrency 1,4,16] [--batch 100] [--policies 100 [--budgets] [--pairs 3]]
 *
 * Starts the service on a temporary data directory (embedded ClickHouse), drives POST
 * /api/v1/events over HTTP with realistic batches at each concurrency for a fixed time, and prints
 * acknowledged events/s, p50 and p99 request latency and the server's peak RSS. After the last
 * level it times how long the loader needs until every acknowledged record is in ClickHouse, and
 * the throughput through to ClickHouse. Then the same load drives a null Node JSON server (parse,
 * answer) for the ratio. With the server stopped, it checks that ClickHouse holds every
 * acknowledged record once, and that every rollup agrees with the raw events.
 *
 * --policies N runs everything twice, without and with N policies, and prints the ratio; --budgets
 * makes them policies of the budget kinds (pools, filters, months, totals, call counts, thresholds).
 * The per-key rate limiter runs at its defaults (RATE_LIMIT_*), and every answer's RateLimit header
 * is read: the run prints the lowest `r` seen (a 429 would stop the run). It also times the limiter
 * in-process per request, against the server's CPU time per request.
 * --limiter-pairs N measures the limiter's cost end to end instead: N pairs of fresh services,
 * limits off (RATE_LIMIT_*=0) and on, in alternating order, and the median ratio per level.
 * --pairs N (with --policies) does the same without and with the policies: the figure to quote on
 * a shared, noisy machine, where one run's two phases can differ with nothing changed.
 * --ids sdk (the default) sends ids as the published SDK makes them: 16 hex digits of a sha256,
 * random in order; --ids sequential sends ids that count up (each claim then lands next to the last
 * one in the dedup index, which flatters the write path).
 * --prefill N fills today's dedup index with N SDK-shaped ids of the benchmark's team before the
 * levels (the service started once to make the team, stopped, the ids written in key order as
 * one run of the index, the service started again): a busy day's index (20,000,000 is 230
 * records a second for a day), measured right after that restart.
 * --assets mix pays in a mix of assets (USDC mostly, EURC through a rate for the euro, and ETH by
 * a rate of the team's), the rates set before the load: every record valued through the books, and
 * the policies (in the team's currency) summing values across assets.
 * Also: --server-log FILE keeps the server's log (LOG_LEVEL=debug adds per-commit figures),
 * --profile DIR writes a CPU profile of the server; --threads prints, per level, the server's CPU
 * per record in its event loop, its other Node threads and the engine's own threads (from /proc).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { rateLimitHeaders } from '../src/limits/http.js';
import { RateLimiter, type LimitOutcome } from '../src/limits/rate-limiter.js';
import { checkStore } from './check-store.js';
import { sortedIds } from './sorted-ids.js';
import { addRun, dayOf } from '../src/ingest/dedup/index.js';
import type { ClaimRow } from '../src/ingest/dedup/run-file.js';
import { SCHEMA_DIR } from '../src/paths.js';
import { migrateRegistry } from '../src/stores/migrations.js';
import { openRegistry } from '../src/stores/sqlite.js';
import { callService, startChildService, startNullServer } from './service.js';
import { cpuSeconds, threadCpuSeconds, threadSplit } from './stats.js';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '30' },
    concurrency: { type: 'string', default: '1,4,16' },
    batch: { type: 'string', default: '100' },
    warmup: { type: 'string', default: '2' },
    policies: { type: 'string', default: '0' },
    // With --policies: policies of the budget kinds (pools, filters, months, totals, call counts, thresholds).
    budgets: { type: 'boolean', default: false },
    'limiter-pairs': { type: 'string', default: '0' },
    // With --policies: N pairs of fresh services without and with them, alternating, and the median ratio.
    pairs: { type: 'string', default: '0' },
    ids: { type: 'string', default: 'sdk' },
    // usdc (the default): every record in USDC; mix: USDC, EURC and ETH, valued by rates set first.
    assets: { type: 'string', default: 'usdc' },
    prefill: { type: 'string', default: '0' },
    'server-log': { type: 'string' },
    // Writes a V8 CPU profile of the server to this folder (open it in Chrome DevTools).
    profile: { type: 'string' },
    // Splits the server's CPU by thread: is the event loop the limit, or the cores?
    threads: { type: 'boolean', default: false },
  },
});
const SECONDS = Number(args.seconds);
const BUDGETS = args.budgets === true;
const LEVELS = args.concurrency!.split(',').map(Number);
const BATCH = Number(args.batch);
if (args.ids !== 'sdk' && args.ids !== 'sequential') throw new Error('--ids is sdk or sequential');
const SEQUENTIAL_IDS = args.ids === 'sequential';
const PREFILL = Number(args.prefill);
if (args.assets !== 'usdc' && args.assets !== 'mix') throw new Error('--assets is usdc or mix');
const MIXED_ASSETS = args.assets === 'mix';
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

const USDC_BASE = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';
/** --assets mix: 7 in 10 USDC, 2 EURC (on Base), 1 ETH (a millionth of the USDC amount: about as much worth). */
const MIX = [USDC_BASE, USDC_BASE, USDC_BASE, USDC_BASE, USDC_BASE, USDC_BASE, USDC_BASE, '0x60a3E35Cc302bFA44Cb288Bc5a4F316Fdb1adb42', '0x60a3E35Cc302bFA44Cb288Bc5a4F316Fdb1adb42', 'ETH'];

function record(now: number): Record<string, unknown> {
  const micro = Math.floor(Math.random() * 50_000) + 1; // up to 0.05 USDC
  const createdAt = now - Math.floor(Math.random() * 3_600_000);
  const asset = MIXED_ASSETS ? pick(MIX) : USDC_BASE;
  return {
    agent_id: pick(AGENTS),
    team: pick(['research', 'ops', null]),
    human_sponsor: null,
    amount: asset === 'ETH' ? (micro / 1e9).toFixed(9) : (micro / 1e6).toFixed(6),
    amount_raw: '0',
    asset,
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
    tags: pick([[], [], ['research'], ['ops', 'batch']]),
  };
}

/**
 * The load generator shares the 2 cores with the server, so it must be cheap: records are drawn
 * from a pool serialised once, and only the id (unique per record) is written per request.
 */
const POOL = Array.from({ length: 4096 }, () => JSON.stringify(record(Date.now())).slice(1));
const batchBody = (): string => {
  // SDK ids are the first 16 hex digits of a sha256: as random as 8 random bytes, drawn per batch.
  const random = SEQUENTIAL_IDS ? '' : crypto.randomBytes(8 * BATCH).toString('hex');
  let body = '{"events":[';
  for (let i = 0; i < BATCH; i++) {
    const id = SEQUENTIAL_IDS ? `${RUN}${(sequence++).toString(16).padStart(8, '0')}` : random.slice(16 * i, 16 * i + 16);
    body += `${i ? ',' : ''}{"id":"${id}",${POOL[Math.floor(Math.random() * POOL.length)]!}`;
  }
  return `${body}]}`;
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

/** What the rate limiter told the load generator: its policy and the lowest remaining seen. */
const limiterSeen = { policy: undefined as string | undefined, lowest: Infinity, answers: 0 };
function noteRateLimit(headers: http.IncomingHttpHeaders): void {
  const remaining = /;r=(\d+)/.exec(String(headers.ratelimit ?? ''));
  if (!remaining) return;
  limiterSeen.policy = String(headers['ratelimit-policy']);
  limiterSeen.lowest = Math.min(limiterSeen.lowest, Number(remaining[1]));
  limiterSeen.answers++;
}

/** One API call; rejects unless the status is the expected one. Returns the parsed body. */
async function call<T>(port: number, method: string, path: string, body: string | undefined, expect: number): Promise<T> {
  const res = await callService(agent, port, method, path, { Authorization: `Bearer ${API_KEY}` }, body);
  if (path === '/api/v1/events') noteRateLimit(res.headers);
  if (res.status !== expect) throw new Error(`${method} ${path}: HTTP ${res.status}: ${res.body}`);
  return JSON.parse(res.body) as T;
}

/**
 * Policies over the team's agents, each with every limit kind; limits a few records break
 * (the largest payments, busy hours), so evaluation also records alerts as it goes.
 */
async function createPolicies(port: number, count: number): Promise<void> {
  if (MIXED_ASSETS) {
    // From two hours back: every record of the load (up to an hour old) has its rates.
    const from = new Date(Date.now() - 2 * 3_600_000).toISOString();
    await call(port, 'PUT', '/api/v1/rates/EUR', JSON.stringify({ value: '1.08', currency: 'USD', valid_from: from }), 200);
    await call(port, 'PUT', '/api/v1/rates/ETH', JSON.stringify({ value: '3000.25', currency: 'USD', valid_from: from, decimals: 18 }), 200);
  }
  for (let i = 0; i < count; i++) {
    const policy = BUDGETS ? budgetPolicy(i) : {
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

/**
 * --budgets: policies of the kinds finance sets, each with weekly, monthly and total
 * limits, calls per hour and thresholds at 50% and 80%; every other one a pool (of two agents, or
 * every fifth the whole team), and every third with a filter (networks, assets, categories, tags or
 * endpoints in turn). Limits a busy window crosses, so thresholds and breaches are raised too.
 */
function budgetPolicy(i: number): Record<string, unknown> {
  const filters = [
    { networks: ['eip155:8453'] },
    { assets: ['0x833589fcd6edb6e08f4c7c32d4f71b54bda02913'] },
    { categories: ['llm', 'search'] },
    { tags: ['research'] },
    { endpoints: ['*.example.com'] },
  ];
  const pool = i % 2 === 1;
  return {
    name: `bench budget ${i}`,
    agents: pool && i % 5 === 0 ? [] : [AGENTS[(2 * i) % AGENTS.length], AGENTS[(2 * i + 1) % AGENTS.length]],
    scope: pool ? 'pool' : 'agent',
    ...(i % 3 === 0 ? { match: filters[(i / 3) % filters.length] } : {}),
    notify_at: [50, 80],
    limits: [
      { kind: 'per_call', amount: '0.049' },
      { kind: 'daily', amount: '200' },
      { kind: 'weekly', amount: '500' },
      { kind: 'monthly', amount: '2000' },
      { kind: 'total', amount: '5000' },
      { kind: 'calls_per_hour', count: 5000 },
    ],
    action: i % 2 ? 'block' : 'flag',
    ...(i % 10 === 0 ? { timezone: 'America/New_York' } : {}),
  };
}

interface Target {
  pid: number;
  port: number;
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
  /** With --threads: the server's CPU seconds over the level, by thread (threadSplit). */
  threads?: { eventLoop: number; nodeThreads: number; namedThreads: number };
  /** Events acknowledged in each 5 s of the level, in order (how fast a restarted service gets up to speed). */
  timeline: number[];
}

/** `concurrency` clients, each sending its next batch as soon as the last one is answered. */
async function drive(target: Target, concurrency: number, seconds: number): Promise<LevelResult> {
  const latencies: number[] = [];
  const timeline: number[] = [];
  let events = 0;
  let peakRss = rssMiB(target.pid);
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMiB(target.pid))), 100);
  const serverCpu0 = cpuSeconds(target.pid);
  const threads0 = args.threads ? threadCpuSeconds(target.pid) : undefined;
  const clientCpu0 = process.cpuUsage();
  const start = performance.now();
  const end = start + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const body = batchBody();
        const t0 = performance.now();
        const answer = await call<{ ingested: number }>(target.port, 'POST', '/api/v1/events', body, 200);
        const t1 = performance.now();
        latencies.push(t1 - t0);
        events += answer.ingested; // not `events += await ...`: that reads events before the await and loses updates
        // By when it was sent: every request is sent within the level's seconds, so no slot is a sliver.
        const slot = Math.floor((t0 - start) / 5_000);
        timeline[slot] = (timeline[slot] ?? 0) + answer.ingested;
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  clearInterval(sampler);
  peakRss = Math.max(peakRss, rssMiB(target.pid));
  const client = process.cpuUsage(clientCpu0);
  return {
    concurrency,
    events,
    seconds: elapsed,
    latencies,
    peakRss,
    serverCpu: (cpuSeconds(target.pid) - serverCpu0) / elapsed,
    ...(threads0 ? { threads: threadSplit(target.pid, threads0, threadCpuSeconds(target.pid)) } : {}),
    clientCpu: (client.user + client.system) / 1e6 / elapsed,
    timeline: Array.from(timeline, (n) => n ?? 0),
  };
}

const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const rate = (r: LevelResult) => r.events / r.seconds;

function printLevels(title: string, results: LevelResult[]): void {
  console.log(`\n${title}`);
  console.log('concurrency    events/s    p50 ms    p99 ms    peak RSS MiB    server CPU    server CPU µs/record    load-generator CPU');
  for (const r of results) {
    const sorted = [...r.latencies].sort((a, b) => a - b);
    // The whole server process's CPU (event loop, ClickHouse's threads, the WAL flushes) per acknowledged record.
    const perRecord = r.events > 0 ? (r.serverCpu * r.seconds * 1e6) / r.events : 0;
    console.log(
      `${String(r.concurrency).padStart(11)}  ${fmt(rate(r)).padStart(10)}  ${fmt(percentile(sorted, 50), 1).padStart(8)}` +
        `  ${fmt(percentile(sorted, 99), 1).padStart(8)}  ${fmt(r.peakRss).padStart(14)}  ${fmt(r.serverCpu, 2).padStart(12)}` +
        `  ${fmt(perRecord, 1).padStart(22)}  ${fmt(r.clientCpu, 2).padStart(20)}`,
    );
  }
  for (const r of results) {
    if (!r.threads || r.events === 0) continue;
    const part = (seconds: number) => `${fmt((seconds * 1e6) / r.events, 1)} µs/record (${fmt((100 * seconds) / r.seconds)}% of a core)`;
    console.log(
      `  concurrency ${r.concurrency}, server threads: event loop ${part(r.threads.eventLoop)}, other Node threads ${part(r.threads.nodeThreads)}, ` +
        `the engine's own ${part(r.threads.namedThreads)}`,
    );
  }
}

interface Phase {
  policies: number;
  results: LevelResult[];
  acknowledged: number;
  /** Seconds from the end of the last level until the loader had every acknowledged record in ClickHouse. */
  drainSeconds: number;
  dataDir: string;
}

/**
 * Starts a service on a fresh data directory, creates the policies, drives every level, waits
 * until ClickHouse has everything acknowledged (the loader's backlog, from /healthz), stops it.
 */
async function measureService(policies: number, limits: 'on' | 'off' = 'on', quiet = false): Promise<Phase> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spendscope-bench-ingest-'));
  const start = () =>
    startChildService({
      dataDir,
      env: {
        BOOTSTRAP_API_KEY: API_KEY,
        ...(limits === 'off' ? { RATE_LIMIT_REQUESTS_PER_SECOND: '0', RATE_LIMIT_RECORDS_PER_SECOND: '0' } : {}),
        ...(process.env.LOG_LEVEL ? { LOG_LEVEL: process.env.LOG_LEVEL } : {}),
      },
      nodeArgs: args.profile ? ['--cpu-prof', `--cpu-prof-dir=${args.profile}`] : [],
      logFile: args['server-log'],
    });
  if (PREFILL > 0) {
    // The team is made by the service's first start; the registry is written while it is stopped.
    const first = await start();
    const { id: teamId } = await call<{ id: string }>(first.port, 'GET', '/api/v1/team', undefined, 200);
    await first.stop();
    const seconds = prefillIds(dataDir, teamId, PREFILL);
    if (!quiet) console.log(`\ntoday's dedup index filled with ${fmt(PREFILL)} ids of the team in ${fmt(seconds, 1)} s; the service started again`);
  }
  const service = await start();
  let acknowledged = 0;
  let openAlerts = 0;
  let drainSeconds = 0;
  const results: LevelResult[] = [];
  try {
    await createPolicies(service.port, policies);
    acknowledged += (await drive(service, 4, Number(args.warmup))).events;
    for (const level of LEVELS) {
      const result = await drive(service, level, SECONDS);
      acknowledged += result.events;
      results.push(result);
    }
    const stopped = performance.now();
    for (;;) {
      const health = await call<{ ingest: { backlogRows: number } }>(service.port, 'GET', '/healthz', undefined, 200);
      if (health.ingest.backlogRows === 0) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    drainSeconds = (performance.now() - stopped) / 1000;
    openAlerts = (await call<{ usage: { openAlerts: number } }>(service.port, 'GET', '/api/v1/team', undefined, 200)).usage.openAlerts;
  } finally {
    const code = await service.stop();
    if (code !== 0) console.log(`service exited with ${code}`);
  }
  if (quiet) return { policies, results, acknowledged, drainSeconds, dataDir };
  if (PREFILL > 0) {
    // Right after the restart on a full index: how soon the service is up to speed.
    // The last slot may be shorter than 5 s: its rate over its own length.
    const perSecond = (r: LevelResult) => r.timeline.map((n, i) => fmt(n / Math.max(0.001, Math.min(5, r.seconds - 5 * i))));
    for (const r of results) console.log(`concurrency ${r.concurrency}, events/s in each 5 s since the level began: ${perSecond(r).join(', ')}`);
  }
  printLevels(`spendscope, POST /api/v1/events, ${policies} active policies (${fmt(openAlerts)} open alerts at the end)`, results);
  console.log(
    `rate limiter at its defaults: ${limiterSeen.answers ? `RateLimit-Policy ${limiterSeen.policy} on every answer, lowest remaining ${fmt(limiterSeen.lowest)}` : 'no RateLimit header seen'}; no 429`,
  );
  const last = results.at(-1)!;
  console.log(
    `after the concurrency ${last.concurrency} run: every acknowledged record in ClickHouse ${fmt(drainSeconds, 2)} s after the load stopped; ` +
      `throughput through to ClickHouse ${fmt(last.events / (last.seconds + drainSeconds))} events/s`,
  );
  return { policies, results, acknowledged, drainSeconds, dataDir };
}

/**
 * Fills today's dedup index with `count` random SDK-shaped ids of the team (each with a print, as
 * the group commit claims them), as a busy day leaves it: written in key order as one run (with
 * its filter) and listed in the manifest, in seconds rather than the hours of claims it stands
 * for. Returns the seconds it took.
 */
function prefillIds(dataDir: string, teamId: string, count: number): number {
  const started = performance.now();
  const db = openRegistry(dataDir);
  try {
    migrateRegistry(db, path.join(SCHEMA_DIR, 'sqlite'));
    function* rows(): Generator<ClaimRow> {
      for (const ids of sortedIds(count)) {
        const prints = crypto.randomBytes(8 * ids.length);
        for (let i = 0; i < ids.length; i++) yield { team_id: teamId, id: ids[i]!, record_fp: prints.readBigInt64BE(8 * i) };
      }
    }
    addRun(db, dayOf(Date.now()), rows(), count);
  } finally {
    db.close();
  }
  return (performance.now() - started) / 1000;
}

/** The same load against the null JSON server (scripts/null-server.ts). */
async function measureNull(): Promise<LevelResult[]> {
  const yardstick = await startNullServer();
  const results: LevelResult[] = [];
  try {
    await drive(yardstick, 4, Number(args.warmup));
    for (const level of LEVELS) results.push(await drive(yardstick, level, SECONDS));
  } finally {
    yardstick.stop();
  }
  printLevels('null Node JSON server (parse the body, answer), same load', results);
  return results;
}

/** With the server stopped: every acknowledged record stored once, and every rollup equal to the raw events. */
async function verifyStore(dataDir: string, acknowledged: number): Promise<void> {
  const check = await checkStore(dataDir);
  console.log(`\nacknowledged ${fmt(acknowledged)} records; events holds ${fmt(check.events)} rows with ${fmt(check.distinctIds)} distinct ids, spend ${check.spend}`);
  for (const [name, r] of Object.entries(check.rollups)) {
    console.log(`  ${name.padEnd(16)} ${fmt(r.events)} events, spend ${r.spend}: ${r.equal ? 'equal to events' : 'DIFFERS from events'}`);
  }
  if (check.events !== acknowledged || check.distinctIds !== acknowledged) console.log('  MISMATCH: stored is not what was acknowledged');
}

/**
 * What one flush to this disk costs: every acknowledgement waits for one (the WAL's fdatasync), so
 * its median is the floor of the concurrency 1 latency on this machine.
 */
function measureDiskFlush(): { p50: number; p99: number } {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'spendscope-bench-flush-')), 'flush');
  const fd = fs.openSync(file, 'w');
  const page = Buffer.alloc(32 * 1024, 1);
  const times: number[] = [];
  try {
    for (let i = 0; i < 200; i++) {
      fs.writeSync(fd, page);
      const t0 = performance.now();
      fs.fdatasyncSync(fd);
      times.push(performance.now() - t0);
    }
  } finally {
    fs.closeSync(fd);
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  }
  times.sort((a, b) => a - b);
  return { p50: times[Math.floor(times.length / 2)]!, p99: times[Math.floor(times.length * 0.99)]! };
}

/**
 * The limiter's own work per ingest request (a records token bucket and the two headers), timed
 * in-process, against the server's CPU time per request at each level: the share it costs.
 */
function limiterShare(results: LevelResult[]): void {
  const limiter = new RateLimiter({ requestsPerSecond: 1_000, recordsPerSecond: 100_000 });
  const rates = { requestsPerSecond: null, recordsPerSecond: null };
  const keys = Array.from({ length: 100 }, (_, i) => `key_${i}`);
  let sink = 0;
  const rounds = 1_000_000;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < rounds; i++) {
    const outcome = limiter.precheck(keys[i % 100]!, 'records', rates) as LimitOutcome;
    const taken = limiter.take(keys[i % 100]!, 'records', rates, 1) as LimitOutcome;
    sink += rateLimitHeaders(outcome).RateLimit.length + rateLimitHeaders(taken).RateLimit.length;
  }
  const nsPerRequest = Number(process.hrtime.bigint() - t0) / rounds;
  if (sink === 0) throw new Error('the limiter loop produced no headers');
  console.log(`\nrate limiter, in-process: ${fmt(nsPerRequest)} ns per ingest request (pre-check, take, both headers twice; 100 keys)`);
  for (const r of results) {
    const requestsPerSecond = rate(r) / BATCH;
    const serverNsPerRequest = (r.serverCpu / requestsPerSecond) * 1e9;
    console.log(
      `  concurrency ${r.concurrency}: server CPU ${fmt(serverNsPerRequest / 1e6, 2)} ms per request; the limiter is ${fmt((100 * nsPerRequest) / serverNsPerRequest, 3)}% of it`,
    );
  }
}

/**
 * Data folders of finished phases, removed when the run ends: thousands of files deleted just
 * before a phase slow its engine's file creations on a file system without a journal (ext4 then
 * steps over recently freed inodes one by one), which would be charged to the next phase.
 */
const finishedDirs: string[] = [];
const removeFinishedDirs = () => {
  for (const dir of finishedDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
};

/**
 * Fresh services of two setups, `pairs` times, alternating which goes first (a shared machine drifts
 * within a run): each pair's ratio per level (second setup / first), and their median.
 */
async function comparePairs(pairs: number, names: [string, string], measure: (setup: 0 | 1) => Promise<Phase>, what: string): Promise<void> {
  const ratios: number[][] = LEVELS.map(() => []);
  for (let pair = 0; pair < pairs; pair++) {
    const order: (0 | 1)[] = pair % 2 ? [1, 0] : [0, 1];
    const bySetup: LevelResult[][] = [];
    for (const setup of order) {
      const phase = await measure(setup);
      finishedDirs.push(phase.dataDir);
      bySetup[setup] = phase.results;
    }
    const line = LEVELS.map((level, i) => {
      const first = rate(bySetup[0]![i]!);
      const second = rate(bySetup[1]![i]!);
      ratios[i]!.push(second / first);
      return `c${level} ${names[0]} ${fmt(first)} ${names[1]} ${fmt(second)} (${fmt(second / first, 3)})`;
    });
    console.log(`pair ${pair + 1} (${order.map((o) => names[o]).join(' then ')}): ${line.join('; ')} events/s`);
  }
  console.log(`\n${what}, events/s, median over the pairs:`);
  LEVELS.forEach((level, i) => {
    const sorted = [...ratios[i]!].sort((a, b) => a - b);
    console.log(`  concurrency ${level}: ${fmt(sorted[Math.floor(sorted.length / 2)]!, 3)} (${sorted.map((r) => fmt(r, 3)).join(', ')})`);
  });
  removeFinishedDirs();
}

async function main(): Promise<void> {
  const policies = Number(args.policies);
  if (Number(args['limiter-pairs']) > 0) {
    console.log(`spendscope ingest benchmark, rate limiter off and on: ${os.cpus().length} cores, batches of ${BATCH}, ${args.ids} ids, ${SECONDS} s per level`);
    await comparePairs(Number(args['limiter-pairs']), ['off', 'on'], (setup) => measureService(0, setup ? 'on' : 'off', true), 'limits on / off');
    agent.destroy();
    return;
  }
  if (Number(args.pairs) > 0 && policies > 0) {
    const kind = BUDGETS ? 'budget policies' : 'policies';
    console.log(`spendscope ingest benchmark, without and with ${policies} ${kind}: ${os.cpus().length} cores, batches of ${BATCH}, ${args.ids} ids, ${SECONDS} s per level`);
    await comparePairs(Number(args.pairs), ['without', 'with'], (setup) => measureService(setup ? policies : 0, 'on', true), `with ${policies} ${kind} / without`);
    agent.destroy();
    return;
  }
  console.log(`spendscope ingest benchmark, ${new Date().toISOString().slice(0, 10)}: embedded ClickHouse, ` +
    `${os.cpus().length} cores, batches of ${BATCH}, ${args.ids} ids, ${SECONDS} s per level`);
  const flush = measureDiskFlush();
  console.log(`this disk: fdatasync after a 32 KB append, p50 ${fmt(flush.p50, 2)} ms, p99 ${fmt(flush.p99, 2)} ms (one per acknowledgement)`);
  // With policies, the same run first measures without them, on its own fresh store, for the ratio.
  const baseline = policies > 0 ? await measureService(0) : undefined;
  const phase = await measureService(policies);
  limiterShare(phase.results);
  const yardstick = await measureNull();
  agent.destroy();
  console.log('\nspendscope / null server, events/s:');
  phase.results.forEach((r, i) => console.log(`  concurrency ${r.concurrency}: ${fmt(rate(r) / rate(yardstick[i]!), 2)}`));
  if (baseline) {
    console.log(`\nwith ${policies} policies / without, events/s:`);
    phase.results.forEach((r, i) => console.log(`  concurrency ${r.concurrency}: ${fmt(rate(r) / rate(baseline.results[i]!), 2)}`));
  }
  await verifyStore(phase.dataDir, phase.acknowledged);
  finishedDirs.push(...(baseline ? [baseline.dataDir] : []), phase.dataDir);
  removeFinishedDirs();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
