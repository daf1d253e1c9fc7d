/**
 * npm run bench:analytics -- [--data-dir DIR] [--events 10000000] [--requests 40]
 *
 * On a store seeded with N events (a temporary one seeded now, unless --data-dir names a store
 * seeded before with `npm run seed`), starts the service and measures p50 and p95 latency of every
 * analytics endpoint over HTTP, over the full range and over the last day. Then, with the server
 * stopped, it times the same reports called in-process (the bare rollup queries behind each
 * endpoint) and prints the ratio.
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { breakdownReport, defaultGranularity, summaryReport, timeseriesReport } from '../src/analytics/reports.js';
import type { Dimension, TimeRange } from '../src/analytics/queries.js';
import { loadConfig } from '../src/config.js';
import type { EventStore } from '../src/stores/clickhouse.js';
import { openStores } from '../src/stores/open.js';
import { benchmarkStore, largestTeam } from './seed.js';
import { startChildService } from './service.js';

const { values: args } = parseArgs({
  options: {
    'data-dir': { type: 'string' },
    events: { type: 'string', default: '10000000' },
    requests: { type: 'string', default: '40' },
  },
});
const REQUESTS = Number(args.requests);
const DAY = 86_400_000;

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

async function main(): Promise<void> {
  const { dataDir, cleanUp } = await benchmarkStore('bench-analytics', args['data-dir'], Number(args.events));
  const config = loadConfig({ ...process.env, DATA_DIR: dataDir });
  const top = await largestTeam(dataDir, { name: 'bench-analytics', scopes: ['read'] });
  const apiKey = top.apiKey;

  const now = Date.now();
  const ranges: [string, TimeRange][] = [
    ['full range', { from: top.first, to: now }],
    ['last day', { from: now - DAY, to: now }],
  ];
  console.log(`\nspendscope analytics benchmark, ${new Date().toISOString().slice(0, 10)}: embedded ClickHouse, ${os.cpus().length} cores, ` +
    `${top.total.toLocaleString('en-US')} events in the store, team measured holds ${top.events.toLocaleString('en-US')}; ` +
    `${REQUESTS} sequential requests per row`);

  const http: Record<string, { p50: number; p95: number }> = {};
  const service = await startChildService({ dataDir });
  try {
    for (const [rangeName, range] of ranges) {
      for (const endpoint of ENDPOINTS) {
        const sep = endpoint.path.includes('?') ? '&' : '?';
        const url = `http://127.0.0.1:${service.port}/api/v1/analytics/${endpoint.path}${sep}from=${range.from}&to=${range.to}`;
        const measured = await timeRuns(async () => {
          const res = await fetch(url, { headers: { Authorization: `Bearer ${apiKey}` } });
          if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status} ${await res.text()}`);
          await res.json();
        }, REQUESTS);
        http[`${endpoint.name}|${rangeName}`] = measured;
        console.log(`  HTTP ${endpoint.name} over ${rangeName}: p50 ${measured.p50.toFixed(1)} ms, p95 ${measured.p95.toFixed(1)} ms`);
      }
    }
  } finally {
    await service.stop();
  }

  const stores = await openStores(config, pino({ level: 'warn' }));
  console.log('\nendpoint          range        HTTP p50 ms   HTTP p95 ms   bare p50 ms   bare p95 ms   HTTP/bare (p50)');
  try {
    for (const [rangeName, range] of ranges) {
      for (const endpoint of ENDPOINTS) {
        const bare = await timeRuns(() => endpoint.bare(stores.events, top.teamId, range), REQUESTS);
        const h = http[`${endpoint.name}|${rangeName}`]!;
        console.log(
          `${endpoint.name.padEnd(17)} ${rangeName.padEnd(10)} ${h.p50.toFixed(1).padStart(12)} ${h.p95.toFixed(1).padStart(13)}` +
            ` ${bare.p50.toFixed(1).padStart(13)} ${bare.p95.toFixed(1).padStart(13)} ${(h.p50 / bare.p50).toFixed(2).padStart(17)}`,
        );
      }
    }
  } finally {
    stores.registry.close();
    await stores.events.close();
    await stores.loaderEvents.close();
    cleanUp();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
