/**
 * npm run bench:analytics -- [--data-dir DIR] [--events 10000000] [--requests 40]
 *
 * On a store seeded with N events (a temporary one seeded now, unless --data-dir names a store
 * seeded before with `npm run seed`), starts the service and measures p50 and p95 latency of every
 * analytics endpoint over HTTP, over the full range and over the last day. Then, with the server
 * stopped, it times the same reports called in-process (the bare rollup queries behind each
 * endpoint) and prints the ratio.
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
import { issueKey } from '../src/teams/repository.js';
import { seedStore } from './seed.js';
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
  breakdownReport(store, teamId, range, dimension, 100);

const ENDPOINTS: Endpoint[] = [
  { name: 'summary', path: 'summary', bare: (s, t, r) => summaryReport(s, t, r, 100) },
  { name: 'timeseries', path: 'timeseries', bare: (s, t, r) => timeseriesReport(s, t, r, defaultGranularity(r.to - r.from), 'UTC') },
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
  let dataDir = args['data-dir'] ? path.resolve(args['data-dir']) : undefined;
  let temporary = false;
  if (!dataDir) {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spendscope-bench-analytics-'));
    temporary = true;
    const events = Number(args.events);
    console.log(`seeding ${events.toLocaleString('en-US')} events into ${dataDir} (npm run seed; pass --data-dir to reuse a seeded store)`);
    await seedStore({ dataDir, events, teams: 3, agents: 50, days: 30, log: (line) => console.log(`  ${line}`) });
  }

  // The largest team, a key for it, and its data's time span: with the server stopped.
  const config = loadConfig({ ...process.env, DATA_DIR: dataDir });
  let stores = await openStores(config, pino({ level: 'warn' }));
  const [top] = await stores.events.query<{ team_id: string; n: string; first: string }>(
    'SELECT team_id, count() AS n, toUnixTimestamp64Milli(min(event_time)) AS first FROM events GROUP BY team_id ORDER BY n DESC LIMIT 1',
  );
  const [all] = await stores.events.query<{ n: string }>('SELECT count() AS n FROM events');
  if (!top) throw new Error(`no events in ${dataDir}: run npm run seed first`);
  const apiKey = issueKey(stores.registry, top.team_id).apiKey;
  stores.registry.close();
  await stores.events.close();
  await stores.loaderEvents.close();

  const now = Date.now();
  const ranges: [string, TimeRange][] = [
    ['full range', { from: Number(top.first), to: now }],
    ['last day', { from: now - DAY, to: now }],
  ];
  console.log(`\nspendscope analytics benchmark, ${new Date().toISOString().slice(0, 10)}: embedded ClickHouse, ${os.cpus().length} cores, ` +
    `${Number(all!.n).toLocaleString('en-US')} events in the store, team measured holds ${Number(top.n).toLocaleString('en-US')}; ` +
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

  stores = await openStores(config, pino({ level: 'warn' }));
  console.log('\nendpoint          range        HTTP p50 ms   HTTP p95 ms   bare p50 ms   bare p95 ms   HTTP/bare (p50)');
  try {
    for (const [rangeName, range] of ranges) {
      for (const endpoint of ENDPOINTS) {
        const bare = await timeRuns(() => endpoint.bare(stores.events, top.team_id, range), REQUESTS);
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
    if (temporary) fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
