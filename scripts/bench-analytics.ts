/**
 * npm run bench:analytics -- [--sizes 10000000,100000000] [--store-dir DIR] [--data-dir DIR] [--requests 30] [--runs 3]
 *
 * Dashboards' reads at scale. For each size, a store of that many SDK-shaped events (3 teams, 500
 * agents, 90 days) is seeded into --store-dir, or reused when a run seeded it before (--data-dir
 * names one store of any size instead): a million through the write path (`npm run seed`), and
 * for a size of several millions, copies of them made in the engine (scripts/seed-copies.ts:
 * 100 million in about 20 minutes rather than 80). Then, --runs times:
 * 1. over HTTP (the built service as a child), every analytics endpoint over the full range and the
 *    last day, --requests sequential requests each: p50 and p95;
 * 2. in-process, with the server stopped, the same reports called bare: p50, how many queries each
 *    answer runs, the engine's share of its time (the queries, their JSON included), the rows and
 *    granules (marks) its queries read, from the engine's own plan (EXPLAIN ESTIMATE: the embedded
 *    engine reports no bytes read, and counts only result rows in its statistics), and the
 *    yardstick, a raw scan of every event grouped by agent (median of 5), timed in the same run.
 * Last, per endpoint and range, the medians over the runs: HTTP p95 and its ratio to the raw scan.
 * Where time goes: HTTP − bare is the HTTP layer (auth, the freshness check, JSON); bare − engine
 * is the report's own work in JS; engine is the queries themselves.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { breakdownReport, defaultGranularity, summaryReport, timeseriesReport } from '../src/analytics/reports.js';
import type { Dimension, TimeRange } from '../src/analytics/queries.js';
import { loadConfig } from '../src/config.js';
import type { EventStore } from '../src/stores/clickhouse.js';
import { openStores } from '../src/stores/open.js';
import { addCopies } from './seed-copies.js';
import { largestTeam, seedStore } from './seed.js';
import { startChildService } from './service.js';

const { values: args } = parseArgs({
  options: {
    sizes: { type: 'string', default: '10000000' },
    'store-dir': { type: 'string', default: path.join(os.tmpdir(), 'spendscope-analytics') },
    'data-dir': { type: 'string' },
    requests: { type: 'string', default: '30' },
    runs: { type: 'string', default: '3' },
  },
});
const REQUESTS = Number(args.requests);
const RUNS = Number(args.runs);
const DAY = 86_400_000;
const SEED = { teams: 3, agents: 500, days: 90 };
/** Events a store takes through the write path before the rest are copies (scripts/seed-copies.ts). */
const WRITE_PATH_EVENTS = 1_000_000;

interface Endpoint {
  name: string;
  path: string;
  /** The same work, called in-process. */
  bare: (store: EventStore, teamId: string, range: TimeRange) => Promise<unknown>;
}

const breakdown = (dimension: Dimension) => (store: EventStore, teamId: string, range: TimeRange) =>
  breakdownReport(store, teamId, range, dimension, 100, undefined, 'USD');

const ENDPOINTS: Endpoint[] = [
  { name: 'summary', path: 'summary', bare: (s, t, r) => summaryReport(s, t, r, 100, undefined, 'USD') },
  { name: 'timeseries', path: 'timeseries', bare: (s, t, r) => timeseriesReport(s, t, r, defaultGranularity(r.to - r.from), 'UTC', undefined, 'USD') },
  { name: 'by-agent', path: 'by-agent', bare: breakdown('agent') },
  { name: 'by-category', path: 'by-category', bare: breakdown('category') },
  { name: 'by-endpoint', path: 'by-endpoint', bare: breakdown('domain') },
  { name: 'by-endpoint url', path: 'by-endpoint?level=url', bare: breakdown('url') },
  { name: 'by-network', path: 'by-network', bare: breakdown('network') },
];

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
const median = (values: number[]) => percentile([...values].sort((a, b) => a - b), 50);

async function timeRuns(run: () => Promise<unknown>, count: number): Promise<{ p50: number; p95: number }> {
  for (let i = 0; i < 3; i++) await run(); // warm caches and the page cache
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    await run();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p95: percentile(times, 95) };
}

/** The store, recording each query with its parameters and time. */
function recording(store: EventStore, log: { sql: string; params?: Record<string, unknown>; ms: number }[]): EventStore {
  return {
    ...store,
    async query<Row>(sql: string, params?: Record<string, unknown>): Promise<Row[]> {
      const t0 = performance.now();
      const rows = await store.query<Row>(sql, params);
      log.push({ sql, params, ms: performance.now() - t0 });
      return rows;
    },
  };
}

/** A store of `size` events under --store-dir, seeded unless a run seeded it before. */
async function storeOf(size: number): Promise<string> {
  if (args['data-dir']) return path.resolve(args['data-dir']);
  const dir = path.join(args['store-dir'], String(size));
  const marker = path.join(dir, 'seeded.json');
  if (fs.existsSync(marker)) return dir;
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  console.log(`seeding ${size.toLocaleString('en-US')} events into ${dir} (kept for the next run)`);
  const started = performance.now();
  // A whole number of millions: one through the write path, the rest copies made in the engine.
  const copies = size > WRITE_PATH_EVENTS && size % WRITE_PATH_EVENTS === 0 ? size / WRITE_PATH_EVENTS - 1 : 0;
  await seedStore({ dataDir: dir, events: copies > 0 ? WRITE_PATH_EVENTS : size, ...SEED, log: (line) => console.log(`  ${line}`) });
  if (copies > 0) await addCopies({ dataDir: dir, copies, agents: SEED.agents, log: (line) => console.log(`  ${line}`) });
  fs.writeFileSync(marker, JSON.stringify({ events: size, ...SEED, seconds: Math.round((performance.now() - started) / 1000) }));
  return dir;
}

interface Measured {
  http: { p50: number; p95: number };
  bare: { p50: number; p95: number };
  engineMs: number;
  queries: number;
  rowsRead: number;
  marksRead: number;
}

async function measureStore(dataDir: string): Promise<void> {
  const config = loadConfig({ ...process.env, DATA_DIR: dataDir });
  const top = await largestTeam(dataDir, { name: 'bench-analytics', scopes: ['read'] });
  const now = Date.now();
  const ranges: [string, TimeRange][] = [
    ['full range', { from: top.first, to: now }],
    ['last day', { from: now - DAY, to: now }],
  ];
  console.log(
    `\nspendscope analytics benchmark, ${new Date().toISOString().slice(0, 10)}: embedded ClickHouse, ${os.cpus().length} cores, ` +
      `${top.total.toLocaleString('en-US')} events in the store, the team measured holds ${top.events.toLocaleString('en-US')}; ` +
      `${REQUESTS} sequential requests per row, ${RUNS} runs`,
  );
  const runs: { raw: number; rows: Map<string, Measured> }[] = [];
  for (let run = 1; run <= RUNS; run++) {
    const rows = new Map<string, Measured>();
    const service = await startChildService({ dataDir });
    try {
      for (const [rangeName, range] of ranges) {
        for (const endpoint of ENDPOINTS) {
          const sep = endpoint.path.includes('?') ? '&' : '?';
          const url = `http://127.0.0.1:${service.port}/api/v1/analytics/${endpoint.path}${sep}from=${range.from}&to=${range.to}`;
          const http = await timeRuns(async () => {
            const res = await fetch(url, { headers: { Authorization: `Bearer ${top.apiKey}` } });
            if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status} ${await res.text()}`);
            await res.json();
          }, REQUESTS);
          rows.set(`${endpoint.name}|${rangeName}`, { http, bare: { p50: 0, p95: 0 }, engineMs: 0, queries: 0, rowsRead: 0, marksRead: 0 });
        }
      }
    } finally {
      await service.stop();
    }

    const stores = await openStores(config, pino({ level: 'warn' }));
    let raw = 0;
    try {
      const scans: number[] = [];
      for (let i = 0; i < 6; i++) {
        const t0 = performance.now();
        await stores.events.query('SELECT agent_id, toString(sum(amount)) AS spend, count() AS n FROM events GROUP BY agent_id');
        if (i > 0) scans.push(performance.now() - t0);
      }
      raw = median(scans);
      console.log(`\nrun ${run}: raw scan of every event grouped by agent, median of 5: ${raw.toFixed(1)} ms`);
      console.log('endpoint          range        HTTP p50   HTTP p95   bare p50   engine ms   queries    rows read   marks   p95/raw');
      for (const [rangeName, range] of ranges) {
        for (const endpoint of ENDPOINTS) {
          const m = rows.get(`${endpoint.name}|${rangeName}`)!;
          const log: { sql: string; params?: Record<string, unknown>; ms: number }[] = [];
          const store = recording(stores.events, log);
          m.bare = await timeRuns(() => endpoint.bare(store, top.teamId, range), REQUESTS);
          const calls = REQUESTS + 3;
          m.queries = log.length / calls;
          m.engineMs = median(chunk(log, m.queries).map((answer) => answer.reduce((sum, q) => sum + q.ms, 0)));
          for (const q of log.slice(-m.queries)) {
            for (const table of await stores.events.query<{ rows: string; marks: string }>(`EXPLAIN ESTIMATE ${q.sql}`, q.params)) {
              m.rowsRead += Number(table.rows);
              m.marksRead += Number(table.marks);
            }
          }
          console.log(
            `${endpoint.name.padEnd(17)} ${rangeName.padEnd(10)} ${m.http.p50.toFixed(1).padStart(10)} ${m.http.p95.toFixed(1).padStart(10)}` +
              ` ${m.bare.p50.toFixed(1).padStart(10)} ${m.engineMs.toFixed(1).padStart(11)} ${String(m.queries).padStart(9)}` +
              ` ${m.rowsRead.toLocaleString('en-US').padStart(12)} ${String(m.marksRead).padStart(7)} ${(m.http.p95 / raw).toFixed(3).padStart(9)}`,
          );
        }
      }
    } finally {
      stores.registry.close();
      await stores.events.close();
      await stores.loaderEvents.close();
    }
    runs.push({ raw, rows });
  }

  const rawMedian = median(runs.map((r) => r.raw));
  console.log(`\nmedians of ${RUNS} runs: raw scan ${rawMedian.toFixed(1)} ms`);
  console.log('endpoint          range        HTTP p50   HTTP p95   p95/raw   rows read');
  for (const [rangeName] of ranges) {
    for (const endpoint of ENDPOINTS) {
      const key = `${endpoint.name}|${rangeName}`;
      const of = (pick: (m: Measured) => number) => median(runs.map((r) => pick(r.rows.get(key)!)));
      console.log(
        `${endpoint.name.padEnd(17)} ${rangeName.padEnd(10)} ${of((m) => m.http.p50).toFixed(1).padStart(10)} ${of((m) => m.http.p95).toFixed(1).padStart(10)}` +
          ` ${median(runs.map((r) => r.rows.get(key)!.http.p95 / r.raw)).toFixed(3).padStart(9)} ${of((m) => m.rowsRead).toLocaleString('en-US').padStart(11)}`,
      );
    }
  }
}

/** `items` in consecutive groups of `size`. */
function chunk<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i + size <= items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

async function main(): Promise<void> {
  const sizes = args['data-dir'] ? [0] : args.sizes.split(',').map(Number);
  for (const size of sizes) {
    if (!args['data-dir'] && (!Number.isInteger(size) || size < 1)) throw new Error(`--sizes: ${size} is not a whole number of events`);
    await measureStore(await storeOf(size));
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
