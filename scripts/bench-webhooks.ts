/**
 * npm run bench:webhooks -- [--alerts 10000] [--storm-seconds 60] [--seconds 30] [--rounds 3] [--concurrency 4]
 *
 * An alert storm against the webhook outbox. Starts the service on a temporary data directory and
 * a local receiver (answers 200 at once) registered as a standard endpoint for alert.opened.
 * `concurrency` clients send batches of 100 ordinary records all along; each round has two phases:
 *   1. baseline: the ordinary load alone, for `seconds`;
 *   2. storm: the same load, while another client opens `alerts` alerts within `storm-seconds`
 *      (records its client blocked, each from a new agent: one alert each), until every delivery arrived.
 * It prints, per phase, the ingest p50/p99 of the ordinary load and the service's event-loop delay
 * (p99, from its own /metrics), the ratio of the storm's p99 to the baseline's p99 per round and
 * their median (rounds interleave the two phases, so the shared machine's slow minutes fall on both),
 * and how the outbox kept up. Last, a burst: `alerts` alerts opened as fast as one client can, so
 * the outbox builds a backlog, timed until every delivery arrived: the rate the outbox drains at.
 * The anomaly checks' loop threshold is raised so the ordinary load opens no alert of its own.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { startChildService } from './service.js';

const { values: args } = parseArgs({
  options: {
    alerts: { type: 'string', default: '10000' },
    'storm-seconds': { type: 'string', default: '60' },
    seconds: { type: 'string', default: '30' },
    rounds: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '4' },
    // Without the endpoint: the same storm of alerts, nothing to deliver (what the alerts alone cost).
    'no-endpoint': { type: 'boolean', default: false },
    profile: { type: 'string' },
  },
});
const ALERTS = Number(args.alerts);
const STORM_SECONDS = Number(args['storm-seconds']);
const SECONDS = Number(args.seconds);
const ROUNDS = Number(args.rounds);
const CONCURRENCY = Number(args.concurrency);
const KEY = 'bench-webhooks-key-0123456789abcdef';
const RUN = crypto.randomBytes(4).toString('hex');
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
let sequence = 0;

function call(port: number, method: string, path: string, body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { Authorization: `Bearer ${KEY}` };
    if (body !== undefined) Object.assign(headers, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
    const req = http.request({ host: '127.0.0.1', port, method, path, agent, headers }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Ordinary records: 200 agents, allowed by their client, no policy: no alert. */
function ordinaryBatch(): string {
  const now = Date.now();
  const records = Array.from({ length: 100 }, () => ({
    id: `${RUN}-o-${sequence++}`,
    agent_id: `agent-${sequence % 200}`,
    endpoint: 'https://api.example.com/v1/search',
    method: 'POST',
    amount: '0.001000',
    network: 'eip155:8453',
    policy_evaluation: 'allowed',
    created_at: now,
  }));
  return JSON.stringify({ events: records });
}

/** Records their clients blocked, each from a new agent: each opens an alert. */
function stormBatch(first: number, count: number): string {
  const now = Date.now();
  const records = Array.from({ length: count }, (_, i) => ({
    id: `${RUN}-s-${first + i}`,
    agent_id: `storm-agent-${first + i}`,
    endpoint: 'https://api.example.com/v1/pay',
    method: 'POST',
    amount: '0.500000',
    network: 'eip155:8453',
    policy_evaluation: 'blocked',
    created_at: now,
  }));
  return JSON.stringify({ events: records });
}

async function load(port: number, seconds: number): Promise<number[]> {
  const latencies: number[] = [];
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) {
        const body = ordinaryBatch();
        const t0 = performance.now();
        const res = await call(port, 'POST', '/api/v1/events', body);
        if (res.status !== 200) throw new Error(`ingest answered ${res.status}: ${res.body}`);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  return latencies.sort((a, b) => a - b);
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/** The service's event-loop delay p99 in ms since the last call (prom-client resets it at each scrape). */
async function eventLoopP99(port: number): Promise<number> {
  const res = await call(port, 'GET', '/metrics');
  const match = /^nodejs_eventloop_lag_p99_seconds (\S+)$/m.exec(res.body);
  if (!match) throw new Error('the service\'s /metrics has no nodejs_eventloop_lag_p99_seconds');
  return Number(match[1]) * 1000;
}
const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

async function main(): Promise<void> {
  // The receiver: when each storm delivery arrived.
  const arrivals: number[] = [];
  const receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      // Not parsed: the receiver shares the machine's two cores with the service it measures.
      if (body.includes('"agentId":"storm-agent-')) arrivals.push(performance.now());
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  const receiverPort = (receiver.address() as AddressInfo).port;

  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spendscope-bench-webhooks-'));
  const service = await startChildService({
    dataDir,
    env: { BOOTSTRAP_API_KEY: KEY, WEBHOOK_ALLOW_HTTP: '1', WEBHOOK_ALLOW_PRIVATE: '1', ANOMALY_LOOP_CALLS: '10000000' },
    nodeArgs: args.profile ? ['--cpu-prof', `--cpu-prof-dir=${args.profile}`] : [],
  });
  try {
    if (!args['no-endpoint']) {
      const created = await call(service.port, 'POST', '/api/v1/webhooks', JSON.stringify({ url: `http://127.0.0.1:${receiverPort}/hook`, events: ['alert.opened'] }));
      if (created.status !== 201) throw new Error(`creating the endpoint: ${created.status} ${created.body}`);
    }
    console.log(
      `spendscope webhook storm benchmark, ${new Date().toISOString().slice(0, 10)}: ${os.cpus().length} cores, ` +
        `${CONCURRENCY} clients sending batches of 100 ordinary records; storm: ${fmt(ALERTS)} alerts opened within ${STORM_SECONDS} s`,
    );
    await load(service.port, 2); // warm-up
    const rounds: { baseline: number[]; during: number[]; loopBaseline: number; loopDuring: number; drained: number; afterStorm: number }[] = [];
    let nextAlert = 0;
    for (let round = 0; round < ROUNDS; round++) {
      await eventLoopP99(service.port); // resets the service's histogram
      const baseline = await load(service.port, SECONDS);
      const loopBaseline = await eventLoopP99(service.port);

      // The storm: ALERTS new alerts, in batches of 50, spread evenly over STORM_SECONDS.
      const first = nextAlert;
      nextAlert += ALERTS;
      const expected = arrivals.length + (args['no-endpoint'] ? 0 : ALERTS);
      const stormStart = performance.now();
      const batches = Math.ceil(ALERTS / 50);
      const storm = (async () => {
        for (let b = 0; b < batches; b++) {
          const due = stormStart + (b / batches) * STORM_SECONDS * 1000;
          const wait = due - performance.now();
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
          const res = await call(service.port, 'POST', '/api/v1/events', stormBatch(first + b * 50, Math.min(50, ALERTS - b * 50)));
          if (res.status !== 200) throw new Error(`storm ingest answered ${res.status}: ${res.body}`);
        }
      })();
      const during = await load(service.port, STORM_SECONDS);
      await storm;
      const stormSent = performance.now();
      while (arrivals.length < expected) {
        if (performance.now() - stormSent > 600_000) throw new Error(`only ${arrivals.length} of ${expected} deliveries arrived`);
        await new Promise((r) => setTimeout(r, 20));
      }
      const loopDuring = await eventLoopP99(service.port);
      const last = arrivals[expected - 1] ?? stormSent;
      rounds.push({ baseline, during, loopBaseline, loopDuring, drained: last - stormStart, afterStorm: Math.max(0, last - stormSent) });
    }

    console.log(`\nordinary ingest, POST /api/v1/events   requests    p50 ms    p99 ms   event-loop p99 ms   p99 storm/baseline`);
    const ratios = rounds.map((r) => pct(r.during, 99) / pct(r.baseline, 99));
    rounds.forEach((r, i) => {
      const line = (label: string, sorted: number[], loop: number, ratio: string) =>
        console.log(`${label.padEnd(37)}${fmt(sorted.length).padStart(9)}  ${fmt(pct(sorted, 50), 1).padStart(8)}  ${fmt(pct(sorted, 99), 1).padStart(8)}  ${fmt(loop, 1).padStart(18)}  ${ratio.padStart(19)}`);
      line(`round ${i + 1}: baseline (${SECONDS} s)`, r.baseline, r.loopBaseline, '');
      line(`round ${i + 1}: storm (${STORM_SECONDS} s)`, r.during, r.loopDuring, fmt(ratios[i]!, 2));
    });
    const pooled = (key: 'baseline' | 'during') => rounds.flatMap((r) => r[key]).sort((a, b) => a - b);
    console.log(
      `\np99 storm/baseline: median of ${ROUNDS} rounds ${fmt(median(ratios), 2)} (rounds: ${ratios.map((r) => fmt(r, 2)).join(', ')}); ` +
        `all rounds pooled ${fmt(pct(pooled('during'), 99), 1)} / ${fmt(pct(pooled('baseline'), 99), 1)} ms = ${fmt(pct(pooled('during'), 99) / pct(pooled('baseline'), 99), 2)}`,
    );
    console.log(`event-loop delay p99: median ${fmt(median(rounds.map((r) => r.loopBaseline)), 1)} ms without the storm, ${fmt(median(rounds.map((r) => r.loopDuring)), 1)} ms during it`);
    if (args['no-endpoint']) return;
    console.log(
      `outbox: each storm's ${fmt(ALERTS)} deliveries received ${rounds.map((r) => fmt(r.drained / 1000, 1)).join(', ')} s after its first alert ` +
        `(${rounds.map((r) => fmt(r.afterStorm / 1000, 2)).join(', ')} s after its last batch was answered), alerts opened at ${fmt(ALERTS / STORM_SECONDS)}/s`,
    );
    // A burst: alerts opened as fast as ingest takes them, so the outbox builds a backlog.
    const burstStart = performance.now();
    const before = arrivals.length;
    for (let b = 0; b < Math.ceil(ALERTS / 100); b++) {
      const first = nextAlert + b * 100;
      const res = await call(service.port, 'POST', '/api/v1/events', stormBatch(first, Math.min(100, nextAlert + ALERTS - first)));
      if (res.status !== 200) throw new Error(`burst ingest answered ${res.status}: ${res.body}`);
    }
    const burstIngested = (performance.now() - burstStart) / 1000;
    while (arrivals.length < before + ALERTS) {
      if (performance.now() - burstStart > 600_000) throw new Error(`only ${arrivals.length - before} of ${ALERTS} burst deliveries arrived`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const burstSeconds = (arrivals[before + ALERTS - 1]! - burstStart) / 1000;
    console.log(
      `burst: ${fmt(ALERTS)} alerts opened in ${fmt(burstIngested, 1)} s (batches of 100, one client, no other load); ` +
        `every delivery received ${fmt(burstSeconds, 1)} s after the burst began: ${fmt(ALERTS / burstSeconds)} deliveries/s`,
    );
  } finally {
    await service.stop();
    receiver.close();
    agent.destroy();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
