/**
 * npm run bench:webhooks -- [--alerts 10000] [--storm-seconds 60] [--seconds 30] [--rounds 3]
 *                           [--rate 6000 | --rate 0 --concurrency 4] [--no-endpoint] [--profile DIR]
 *                           [--log-file FILE] [--log-level info]
 *
 * An alert storm against the webhook outbox. Starts the service on a temporary data directory and
 * a local receiver (answers 200 at once) registered as a standard endpoint for alert.opened.
 * Ordinary ingest runs all along: batches of 100 records (200 agents, no alert), either at a fixed
 * rate of `rate` records/s (open loop: each request is timed from when it was due, so a stalled
 * service cannot hide its stall by slowing the client down), or, with --rate 0, from `concurrency`
 * clients sending back to back (closed loop: the service saturated). The run alternates phases:
 *   baseline, storm, baseline, storm, ..., baseline (`rounds` storms, each between two baselines),
 * where a baseline is the ordinary load alone for `seconds`, and a storm is the same load while
 * another client opens `alerts` alerts within `storm-seconds` (records its client blocked, each
 * from a new agent: one alert each), until every delivery has arrived.
 * It prints, per phase, the ingest p50/p99 and the service's event-loop delay p99 (from its own
 * /metrics); per storm, its p99 over the p99 of the two baselines around it (the store grows all
 * along, and the shared machine has slow minutes: a storm is compared with its neighbours), and the
 * median of those ratios; and how the outbox kept up. Last, a burst: `alerts` alerts opened as fast
 * as one client can, so the outbox builds a backlog, timed until every delivery has arrived: the
 * rate the outbox drains at. --log-file keeps the service's log. The anomaly checks' loop threshold
 * is raised so the ordinary load opens no alert of its own.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { callService, startChildService } from './service.js';
import { median, percentile as pct } from './stats.js';

const { values: args } = parseArgs({
  options: {
    alerts: { type: 'string', default: '10000' },
    'storm-seconds': { type: 'string', default: '60' },
    seconds: { type: 'string', default: '30' },
    rounds: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '4' },
    rate: { type: 'string', default: '6000' },
    // Without the endpoint: the same storm of alerts, nothing to deliver (what the alerts alone cost).
    'no-endpoint': { type: 'boolean', default: false },
    profile: { type: 'string' },
    // The service's log (at --log-level, default info), e.g. debug for each group commit's timings.
    'log-file': { type: 'string' },
    'log-level': { type: 'string', default: 'info' },
  },
});
const ALERTS = Number(args.alerts);
const STORM_SECONDS = Number(args['storm-seconds']);
const SECONDS = Number(args.seconds);
const ROUNDS = Number(args.rounds);
const CONCURRENCY = Number(args.concurrency);
const RATE = Number(args.rate);
const KEY = 'bench-webhooks-key-0123456789abcdef';
const RUN = crypto.randomBytes(4).toString('hex');
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
let sequence = 0;

async function call(port: number, method: string, path: string, body?: string): Promise<{ status: number; body: string }> {
  return callService(agent, port, method, path, { Authorization: `Bearer ${KEY}` }, body);
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

/** The ordinary load for `seconds`: latencies (ms) of its requests, sorted. */
function load(port: number, seconds: number): Promise<number[]> {
  return RATE > 0 ? openLoop(port, seconds) : closedLoop(port, seconds);
}

/** `concurrency` clients, each sending its next batch when the last is answered. */
async function closedLoop(port: number, seconds: number): Promise<number[]> {
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

/** A batch every 100/RATE s, whatever the answers do; each timed from when it was due. */
async function openLoop(port: number, seconds: number): Promise<number[]> {
  const latencies: number[] = [];
  const interval = (100 / RATE) * 1000;
  const start = performance.now();
  const count = Math.floor((seconds * 1000) / interval);
  const requests: Promise<void>[] = [];
  for (let i = 0; i < count; i++) {
    const due = start + i * interval;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const body = ordinaryBatch();
    requests.push(
      call(port, 'POST', '/api/v1/events', body).then((res) => {
        if (res.status !== 200) throw new Error(`ingest answered ${res.status}: ${res.body}`);
        latencies.push(performance.now() - due);
      }),
    );
  }
  await Promise.all(requests);
  return latencies.sort((a, b) => a - b);
}


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
    env: { BOOTSTRAP_API_KEY: KEY, WEBHOOK_ALLOW_HTTP: '1', WEBHOOK_ALLOW_PRIVATE: '1', ANOMALY_LOOP_CALLS: '10000000', LOG_LEVEL: args['log-level']! },
    logFile: args['log-file'],
    nodeArgs: args.profile ? ['--cpu-prof', `--cpu-prof-dir=${args.profile}`] : [],
  });
  try {
    if (!args['no-endpoint']) {
      const created = await call(service.port, 'POST', '/api/v1/webhooks', JSON.stringify({ url: `http://127.0.0.1:${receiverPort}/hook`, events: ['alert.opened'] }));
      if (created.status !== 201) throw new Error(`creating the endpoint: ${created.status} ${created.body}`);
    }
    console.log(
      `spendscope webhook storm benchmark, ${new Date().toISOString().slice(0, 10)}: ${os.cpus().length} cores, ` +
        `ordinary ingest in batches of 100 records, ${RATE > 0 ? `${fmt(RATE)} records/s (open loop)` : `${CONCURRENCY} clients back to back (closed loop)`}; ` +
        `${ROUNDS} storms of ${fmt(ALERTS)} alerts opened within ${STORM_SECONDS} s`,
    );
    await load(service.port, 2); // warm-up
    interface Phase { latencies: number[]; loopP99: number }
    const baselines: Phase[] = [];
    const storms: (Phase & { drained: number; afterStorm: number })[] = [];
    let nextAlert = 0;
    for (let round = 0; round <= ROUNDS; round++) {
      await eventLoopP99(service.port); // resets the service's histogram
      baselines.push({ latencies: await load(service.port, SECONDS), loopP99: await eventLoopP99(service.port) });
      if (round === ROUNDS) break;

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
      const latencies = await load(service.port, STORM_SECONDS);
      await storm;
      const stormSent = performance.now();
      while (arrivals.length < expected) {
        if (performance.now() - stormSent > 600_000) throw new Error(`only ${arrivals.length} of ${expected} deliveries arrived`);
        await new Promise((r) => setTimeout(r, 20));
      }
      const loopP99 = await eventLoopP99(service.port);
      const last = arrivals[expected - 1] ?? stormSent;
      storms.push({ latencies, loopP99, drained: last - stormStart, afterStorm: Math.max(0, last - stormSent) });
    }

    const sorted = (phases: Phase[]) => phases.flatMap((p) => p.latencies).sort((a, b) => a - b);
    const ratios = storms.map((s, i) => pct(s.latencies, 99) / pct(sorted([baselines[i]!, baselines[i + 1]!]), 99));
    console.log(`\nordinary ingest, POST /api/v1/events   requests    p50 ms    p99 ms   event-loop p99 ms   p99 / baselines around`);
    const line = (label: string, phase: Phase, ratio: string) =>
      console.log(`${label.padEnd(37)}${fmt(phase.latencies.length).padStart(9)}  ${fmt(pct(phase.latencies, 50), 1).padStart(8)}  ${fmt(pct(phase.latencies, 99), 1).padStart(8)}  ${fmt(phase.loopP99, 1).padStart(18)}  ${ratio.padStart(22)}`);
    baselines.forEach((b, i) => {
      line(`baseline ${i + 1} (${SECONDS} s)`, b, '');
      if (storms[i]) line(`storm ${i + 1} (${fmt(ALERTS)} alerts in ${STORM_SECONDS} s)`, storms[i]!, fmt(ratios[i]!, 2));
    });
    const all = { storms: sorted(storms), baselines: sorted(baselines) };
    console.log(
      `\np99 during a storm / p99 of the baselines around it: median of ${ROUNDS} storms ${fmt(median(ratios), 2)} (${ratios.map((r) => fmt(r, 2)).join(', ')}); ` +
        `all pooled ${fmt(pct(all.storms, 99), 1)} / ${fmt(pct(all.baselines, 99), 1)} ms = ${fmt(pct(all.storms, 99) / pct(all.baselines, 99), 2)}`,
    );
    console.log(`event-loop delay p99: median ${fmt(median(baselines.map((b) => b.loopP99)), 1)} ms in the baselines, ${fmt(median(storms.map((s) => s.loopP99)), 1)} ms in the storms`);
    if (args['no-endpoint']) return;
    console.log(
      `outbox: each storm's ${fmt(ALERTS)} deliveries received ${storms.map((r) => fmt(r.drained / 1000, 1)).join(', ')} s after its first alert ` +
        `(${storms.map((r) => fmt(r.afterStorm / 1000, 2)).join(', ')} s after its last batch was answered), alerts opened at ${fmt(ALERTS / STORM_SECONDS)}/s`,
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
