/**
 * npm run bench:bi -- [--events 1000000] [--seconds 15] [--rounds 3]
 *
 * ClickHouse's HTTP interface for BI tools on a running service (embedded engine, temporary data
 * directory): seeds `events` records through the API, then
 * 1. exports them all as Parquet through /clickhouse (streamed), sampling the service's RSS every
 *    50 ms: the peak above the RSS before the export says whether the export is held in memory;
 * 2. measures ingest (4 clients, batches of 100) alone, while a BI client runs heavy queries back
 *    to back (a full scan grouped by agent and endpoint), and while four heavy queries run at once
 *    from two read keys of two teams (each at its limit of two; `sum(cityHash64(number))` over 2e10 numbers,
 *    restarted until the window ends), in alternating rounds: ingest records/s, p50, p99 and max,
 *    and a read-after-write probe (one record sent, then an analytics read, which waits for the
 *    loader to copy it into ClickHouse: every 250 ms) with its median, max and 503s; then the ratios of
 *    each BI load over alone, median of the rounds.
 * --heavy N runs N heavy queries at once (default 4, two per read key); --threadpool N starts the
 * service with UV_THREADPOOL_SIZE=N (default 8, as `npm start` and the Docker image do; the process
 * runs at most N - 2 BI queries at once, so a smaller pool refuses some of the heavy queries).
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { execFileSync } from 'node:child_process';
import { PROJECT_ROOT } from '../src/paths.js';
import { callService, startChildService } from './service.js';
import { median, percentile as pct } from './stats.js';

const { values: args } = parseArgs({
  options: {
    events: { type: 'string', default: '1000000' },
    seconds: { type: 'string', default: '15' },
    rounds: { type: 'string', default: '3' },
    heavy: { type: 'string', default: '4' },
    threadpool: { type: 'string', default: '8' },
  },
});
const HEAVY_QUERIES = Number(args.heavy);
const EVENTS = Number(args.events);
const SECONDS = Number(args.seconds);
const KEY = 'bench-bi-key-0123456789abcdefghijkl';
const AGENTS = Array.from({ length: 50 }, (_, i) => `agent-${i}`);
const ENDPOINTS = ['https://api.openai.com/v1/chat', 'https://api.anthropic.com/v1/messages', 'https://api.exa.ai/search', 'https://api.tavily.com/search'];
const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
// BI queries on connections of their own: a running one must not hold a socket ingest waits for.
const biAgent = new http.Agent({ keepAlive: true, maxSockets: 16 });
let sequence = 0;

const pick = <T>(xs: readonly T[]) => xs[Math.floor(Math.random() * xs.length)]!;
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;

function rssOf(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spendscope-bench-bi-'));
  const service = await startChildService({ dataDir, env: {
      BOOTSTRAP_API_KEY: KEY,
      RATE_LIMIT_RECORDS_PER_SECOND: '0',
      RATE_LIMIT_REQUESTS_PER_SECOND: '0',
      // Read by libuv when its pool first starts: only the environment the process starts with counts.
      UV_THREADPOOL_SIZE: args.threadpool,
    },
  });
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
  const bi = async (sql: string, authorization: Record<string, string> = biAuth, settings = '') => {
    const res = await callService(biAgent, port, 'POST', `/clickhouse/${settings}`, authorization, sql);
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
    // Two teams: a team holds at most half the BI places, so four heavy queries need two.
    const secondTeam = JSON.parse(
      execFileSync(process.execPath, [path.join(PROJECT_ROOT, 'dist/scripts/team-create.js'), '--name', 'bench-bi-second'], { env: { ...process.env, DATA_DIR: dataDir }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }),
    ) as { apiKey: string };
    const readKeys = await Promise.all(
      [
        ['bi-reader-1', auth],
        ['bi-reader-2', { Authorization: `Bearer ${secondTeam.apiKey}` }],
      ].map(async ([name, admin]) => {
        const res = await callService(agent, port, 'POST', '/api/v1/keys', admin as Record<string, string>, JSON.stringify({ name, scopes: ['read'] }));
        if (res.status !== 201) throw new Error(`read key: ${res.status} ${res.body}`);
        return { Authorization: `Basic ${Buffer.from(`${name}:${(JSON.parse(res.body) as { apiKey: string }).apiKey}`).toString('base64')}` };
      }),
    );
    const scan = 'SELECT agent_id, endpoint, count() AS calls, sum(amount) AS spend, uniqExact(id) AS ids FROM events GROUP BY agent_id, endpoint ORDER BY spend DESC FORMAT Null';
    const cityHash = 'SELECT sum(cityHash64(number)) FROM numbers(20000000000) FORMAT Null';
    type Load = 'alone' | 'scan' | 'heavy';
    const LOADS: Record<Load, string> = {
      alone: 'alone',
      scan: 'one full scan at a time',
      heavy: `${HEAVY_QUERIES} heavy queries, two teams`,
    };
    /** Runs `sql` back to back until `end`, each query cut off at the end of the window (a limit the client may lower). */
    const biUntil = async (end: number, authorization: Record<string, string>, sql: string) => {
      let ran = 0;
      while (performance.now() < end - 200) {
        const left = Math.max(1, Math.ceil((end - performance.now()) / 1000));
        try {
          await bi(sql, authorization, `?max_execution_time=${left}`);
          ran++;
        } catch (err) {
          if (String(err).includes('TIMEOUT_EXCEEDED')) ran++; // ran until the window's end
          // The key's previous query not yet released (its limit of two): try again.
          else if (String(err).includes('TOO_MANY_SIMULTANEOUS_QUERIES')) await new Promise((r) => setTimeout(r, 20));
          else throw err;
        }
      }
      return ran;
    };
    const drive = async (load: Load) => {
      const latencies: number[] = [];
      const reads: number[] = [];
      let refused = 0;
      const end = performance.now() + SECONDS * 1000;
      const biLoad =
        load === 'scan'
          ? [biUntil(end, biAuth, scan)]
          : load === 'heavy'
            ? Array.from({ length: HEAVY_QUERIES }, (_, i) => biUntil(end, readKeys[i % 2]!, cityHash))
            : [];
      if (load !== 'alone') await new Promise((r) => setTimeout(r, 300)); // the BI load running first
      const ingest = Array.from({ length: 4 }, async () => {
        while (performance.now() < end) {
          const t0 = performance.now();
          await ingestBatch(100);
          latencies.push(performance.now() - t0);
        }
      });
      // Read after write: what a dashboard sees, through the loader (ClickHouse inserts) and a read.
      const probe = (async () => {
        while (performance.now() < end - 1000) {
          await ingestBatch(1);
          const t0 = performance.now();
          const res = await callService(agent, port, 'GET', `/api/v1/analytics/summary?from=${Date.now() - 60_000}&limit=1`, auth);
          // A 503: the loader did not get there within READ_WAIT_MS (starved of engine threads).
          if (res.status === 503) refused++;
          else if (res.status !== 200) throw new Error(`analytics read: ${res.status} ${res.body}`);
          reads.push(performance.now() - t0);
          await new Promise((r) => setTimeout(r, 250));
        }
      })();
      const [biQueries] = await Promise.all([Promise.all(biLoad).then((ran) => ran.reduce((a, b) => a + b, 0)), ...ingest, probe]);
      latencies.sort((a, b) => a - b);
      reads.sort((a, b) => a - b);
      return { rate: (latencies.length * 100) / SECONDS, p50: pct(latencies, 50), p99: pct(latencies, 99), max: latencies.at(-1) ?? 0, readMedian: median(reads), readMax: reads.at(-1) ?? 0, refused, biQueries };
    };
    console.log(
      `\ningest (4 clients, batches of 100)${args.threadpool ? `, UV_THREADPOOL_SIZE=${args.threadpool}` : ''}\n` +
        `${'BI load'.padEnd(34)} round   records/s   p50 ms   p99 ms    max ms   read-after-write median/max ms (503s)   BI queries`,
    );
    const ratios: Record<Exclude<Load, 'alone'>, { rate: number; p99: number }[]> = { scan: [], heavy: [] };
    for (let round = 1; round <= Number(args.rounds); round++) {
      const results = new Map<Load, Awaited<ReturnType<typeof drive>>>();
      for (const load of ['alone', 'scan', 'heavy'] as const) {
        const r = await drive(load);
        results.set(load, r);
        console.log(
          `${LOADS[load].padEnd(34)} ${String(round).padStart(5)} ${Math.round(r.rate).toLocaleString('en-US').padStart(11)} ${r.p50.toFixed(1).padStart(8)} ${r.p99.toFixed(1).padStart(8)} ${r.max.toFixed(0).padStart(9)} ` +
            `${`${r.readMedian.toFixed(0)} / ${r.readMax.toFixed(0)} (${r.refused})`.padStart(38)} ${String(r.biQueries).padStart(12)}`,
        );
      }
      const alone = results.get('alone')!;
      for (const load of ['scan', 'heavy'] as const) ratios[load].push({ rate: results.get(load)!.rate / alone.rate, p99: results.get(load)!.p99 / alone.p99 });
    }
    for (const load of ['scan', 'heavy'] as const) {
      console.log(
        `ingest beside ${LOADS[load]} / alone, median of ${args.rounds} rounds: records/s ${median(ratios[load].map((r) => r.rate)).toFixed(2)}, p99 ${median(ratios[load].map((r) => r.p99)).toFixed(2)}`,
      );
    }
  } finally {
    await service.stop();
    agent.destroy();
    biAgent.destroy();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
