/**
 * npm run bench:bi -- [--events 1000000] [--seconds 15] [--rounds 3]
 *
 * ClickHouse's HTTP interface for BI tools on a running service (embedded engine, temporary data
 * directory): seeds `events` records through the API, then
 * 1. exports them all as Parquet through /clickhouse (streamed), sampling the service's RSS every
 *    50 ms: the peak above the RSS before the export says whether the export is held in memory;
 * 2. measures ingest (4 clients, batches of 100) alone and while a BI client runs heavy queries
 *    back to back (a full scan grouped by agent and endpoint), in alternating rounds: ingest p99 and
 *    records/s with the BI load over without, median of the rounds.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { callService, startChildService } from './service.js';
import { median, percentile as pct } from './stats.js';

const { values: args } = parseArgs({
  options: {
    events: { type: 'string', default: '1000000' },
    seconds: { type: 'string', default: '15' },
    rounds: { type: 'string', default: '3' },
  },
});
const EVENTS = Number(args.events);
const SECONDS = Number(args.seconds);
const KEY = 'bench-bi-key-0123456789abcdefghijkl';
const AGENTS = Array.from({ length: 50 }, (_, i) => `agent-${i}`);
const ENDPOINTS = ['https://api.openai.com/v1/chat', 'https://api.anthropic.com/v1/messages', 'https://api.exa.ai/search', 'https://api.tavily.com/search'];
const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
let sequence = 0;

const pick = <T>(xs: readonly T[]) => xs[Math.floor(Math.random() * xs.length)]!;
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;

function rssOf(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spendscope-bench-bi-'));
  const service = await startChildService({ dataDir, env: { BOOTSTRAP_API_KEY: KEY, RATE_LIMIT_RECORDS_PER_SECOND: '0', RATE_LIMIT_REQUESTS_PER_SECOND: '0' } });
  const { port, pid } = service;
  const auth = { Authorization: `Bearer ${KEY}` };
  const biAuth = { Authorization: `Basic ${Buffer.from(`bench:${KEY}`).toString('base64')}` };
  const ingestBatch = async (size: number) => {
    const now = Date.now();
    const events = Array.from({ length: size }, () => ({
      id: `e-${sequence++}`,
      agent_id: pick(AGENTS),
      endpoint: pick(ENDPOINTS),
      method: 'POST',
      amount: (Math.floor(Math.random() * 40_000) / 1e6).toFixed(6),
      network: 'eip155:8453',
      created_at: now - Math.floor(Math.random() * 30 * 86_400_000),
    }));
    const res = await callService(agent, port, 'POST', '/api/v1/events', auth, JSON.stringify({ events }));
    if (res.status !== 200) throw new Error(`ingest: ${res.status} ${res.body}`);
  };
  const bi = async (sql: string) => {
    const res = await callService(agent, port, 'POST', '/clickhouse/', biAuth, sql);
    if (res.status !== 200) throw new Error(`BI query: ${res.status} ${res.body}`);
    return res.body;
  };
  try {
    const seedStarted = performance.now();
    const workers = 8;
    await Promise.all(
      Array.from({ length: workers }, async (_, w) => {
        for (let done = w * 100; done < EVENTS; done += workers * 100) await ingestBatch(Math.min(100, EVENTS - done));
      }),
    );
    while (Number((await bi('SELECT count() FROM events')).trim()) < EVENTS) await new Promise((r) => setTimeout(r, 500));
    console.log(`\nspendscope BI interface benchmark, ${new Date().toISOString().slice(0, 10)}: ${os.cpus().length} cores, embedded ClickHouse; ` +
      `${EVENTS.toLocaleString('en-US')} events seeded through the API in ${((performance.now() - seedStarted) / 1000).toFixed(0)} s`);

    // 1. The whole table as Parquet, streamed.
    const before = rssOf(pid);
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 50);
    const exportStarted = performance.now();
    const bytes = await new Promise<number>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/clickhouse/?default_format=Parquet', headers: biAuth }, (res) => {
        let n = 0;
        res.on('data', (chunk: Buffer) => (n += chunk.length));
        res.on('end', () => (res.statusCode === 200 ? resolve(n) : reject(new Error(`export: ${res.statusCode}`))));
      });
      req.on('error', reject);
      req.end('SELECT * FROM events');
    });
    clearInterval(sampler);
    console.log(
      `\nParquet export of all ${EVENTS.toLocaleString('en-US')} events: ${mib(bytes)} in ${((performance.now() - exportStarted) / 1000).toFixed(1)} s; ` +
        `service RSS ${mib(before)} before, peak ${mib(peak)} during (+${mib(peak - before)})`,
    );

    // 2. Ingest alone and beside heavy BI queries.
    const heavy = 'SELECT agent_id, endpoint, count() AS calls, sum(amount) AS spend, uniqExact(id) AS ids FROM events GROUP BY agent_id, endpoint ORDER BY spend DESC FORMAT Null';
    const drive = async (withBi: boolean) => {
      const latencies: number[] = [];
      let biQueries = 0;
      const end = performance.now() + SECONDS * 1000;
      const load = Array.from({ length: 4 }, async () => {
        while (performance.now() < end) {
          const t0 = performance.now();
          await ingestBatch(100);
          latencies.push(performance.now() - t0);
        }
      });
      const biLoad = withBi
        ? (async () => {
            while (performance.now() < end) {
              await bi(heavy);
              biQueries++;
            }
          })()
        : Promise.resolve();
      await Promise.all([...load, biLoad]);
      latencies.sort((a, b) => a - b);
      return { rate: (latencies.length * 100) / SECONDS, p50: pct(latencies, 50), p99: pct(latencies, 99), biQueries };
    };
    console.log('\ningest (4 clients, batches of 100)   round   records/s   p50 ms   p99 ms   heavy BI queries');
    const ratios: { rate: number; p99: number }[] = [];
    for (let round = 1; round <= Number(args.rounds); round++) {
      const alone = await drive(false);
      const beside = await drive(true);
      for (const [name, r] of [['alone', alone], ['with a heavy BI query running', beside]] as const) {
        console.log(`${name.padEnd(36)} ${String(round).padStart(5)} ${Math.round(r.rate).toLocaleString('en-US').padStart(11)} ${r.p50.toFixed(1).padStart(8)} ${r.p99.toFixed(1).padStart(8)} ${String(r.biQueries).padStart(18)}`);
      }
      ratios.push({ rate: beside.rate / alone.rate, p99: beside.p99 / alone.p99 });
    }
    console.log(`\ningest beside BI / alone, median of ${args.rounds} rounds: records/s ${median(ratios.map((r) => r.rate)).toFixed(2)}, p99 ${median(ratios.map((r) => r.p99)).toFixed(2)}`);
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
