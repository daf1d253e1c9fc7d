/**
 * npm run bench:disk -- [--events 1000000] [--data-dir DIR]
 *
 * Disk use per million events. Seeds a temporary store with N events through the ingest path
 * (`npm run seed`'s code: validation, the ingest log with its (team, id) claims, the loader), unless
 * --data-dir names a store seeded before (the server stopped). Then, with every table merged
 * (OPTIMIZE ... FINAL, the state background merges reach), it reads the size on disk of the raw
 * events and of each rollup from system.parts, and of the dedup index from SQLite (dbstat). The
 * ingest log holds records only until they are loaded: its figure is the bytes per record it held
 * while the seed ran ahead of the loader.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { loadConfig } from '../src/config.js';
import { openStores } from '../src/stores/open.js';
import { seedStore } from './seed.js';
import { runFolder } from '../src/ingest/dedup/index.js';

const { values: args } = parseArgs({
  options: {
    events: { type: 'string', default: '1000000' },
    'data-dir': { type: 'string' },
  },
});

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const mib = (bytes: number) => `${fmt(bytes / 1024 / 1024, 1)} MiB`;

async function main(): Promise<void> {
  const seeded = !args['data-dir'];
  const dataDir = args['data-dir'] ? path.resolve(args['data-dir']) : fs.mkdtempSync(path.join(os.tmpdir(), 'spendscope-bench-disk-'));
  let logBytesPerRecord: number | undefined;
  try {
    if (seeded) {
      let peak = { rows: 0, bytes: 0 };
      await seedStore({
        dataDir,
        events: Number(args.events),
        teams: 3,
        agents: 50,
        days: 30,
        log: (line) => process.stderr.write(`${line}\n`),
        onBacklog: (b) => {
          if (b.rows > peak.rows) peak = b;
        },
      });
      if (peak.rows > 0) logBytesPerRecord = peak.bytes / peak.rows;
    }
    const config = loadConfig({ ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'warn' });
    const { registry, events, loaderEvents } = await openStores(config, pino({ level: 'warn' }));
    try {
      const tables = ['events', 'spend_minutely', 'spend_hourly_by', 'spend_daily_by'];
      for (const table of tables) await events.command(`OPTIMIZE TABLE ${table} FINAL`);
      const parts = await events.query<{ table: string; rows: string; disk: string; raw: string }>(
        `SELECT table, sum(rows) AS rows, sum(bytes_on_disk) AS disk, sum(data_uncompressed_bytes) AS raw
           FROM system.parts WHERE database = currentDatabase() AND active AND table IN {tables:Array(String)} GROUP BY table`,
        { tables },
      );
      const byTable = new Map(parts.map((p) => [p.table, { rows: Number(p.rows), disk: Number(p.disk), raw: Number(p.raw) }]));
      const eventCount = byTable.get('events')?.rows ?? 0;
      if (eventCount === 0) throw new Error(`no events in ${dataDir}`);
      const perMillion = (bytes: number) => (bytes / eventCount) * 1_000_000;
      const sqlite = registry
        .prepare(`SELECT name, sum(pgsize) AS bytes FROM dbstat WHERE name LIKE 'ingest_claims_%' OR name = 'ingest_log' GROUP BY name`)
        .all() as { name: string; bytes: number }[];
      // The dedup index: its level-0 tables in the registry, and its run files beside it.
      const folder = runFolder(registry);
      const runBytes = fs.existsSync(folder) ? fs.readdirSync(folder).reduce((sum, f) => sum + fs.statSync(path.join(folder, f)).size, 0) : 0;
      const dedupBytes = runBytes + sqlite.filter((r) => r.name.startsWith('ingest_claims_')).reduce((sum, r) => sum + r.bytes, 0);
      const ids =
        (registry.prepare('SELECT coalesce(sum(rows), 0) AS n FROM ingest_runs').get() as { n: number }).n +
        (registry.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'ingest_claims_%'").all() as { name: string }[])
          .map((t) => (registry.prepare(`SELECT count(*) AS n FROM ${t.name}`).get() as { n: number }).n)
          .reduce((a, b) => a + b, 0);
      const logNow = sqlite.find((r) => r.name === 'ingest_log')?.bytes ?? 0;

      console.log(`spendscope disk use, ${new Date().toISOString().slice(0, 10)}: ${fmt(eventCount)} events${seeded ? ' seeded now (3 teams, 50 agents, 30 days)' : ` in ${dataDir}`}, tables merged`);
      console.log('\nwhat                          on disk        per million events    rows         (uncompressed)');
      let rollupTotal = 0;
      for (const table of tables) {
        const t = byTable.get(table) ?? { rows: 0, disk: 0, raw: 0 };
        if (table !== 'events') rollupTotal += t.disk;
        console.log(
          `${`ClickHouse ${table}`.padEnd(28)}  ${mib(t.disk).padStart(10)}  ${mib(perMillion(t.disk)).padStart(20)}  ${fmt(t.rows).padStart(11)}  ${mib(t.raw).padStart(14)}`,
        );
      }
      console.log(`${'ClickHouse rollups, all'.padEnd(28)}  ${mib(rollupTotal).padStart(10)}  ${mib(perMillion(rollupTotal)).padStart(20)}`);
      console.log(`${'SQLite dedup index'.padEnd(28)}  ${mib(dedupBytes).padStart(10)}  ${mib(ids ? (dedupBytes / ids) * 1_000_000 : 0).padStart(20)}  ${fmt(ids).padStart(11)}  (per million ids; kept DEDUP_WINDOW_DAYS)`);
      console.log(
        `${'SQLite ingest log'.padEnd(28)}  ${mib(logNow).padStart(10)}  ${(logBytesPerRecord === undefined ? 'not measured (--data-dir)' : mib(logBytesPerRecord * 1_000_000)).padStart(20)}  ` +
          `(only while records wait for the loader; ${logBytesPerRecord === undefined ? '' : `${fmt(logBytesPerRecord)} bytes per record, `}pruned once loaded)`,
      );
    } finally {
      registry.close();
      await events.close();
      await loaderEvents.close();
    }
  } finally {
    if (seeded) fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
