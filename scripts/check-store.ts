/**
 * npm run store:check -- [--data-dir DIR]
 *
 * With the server stopped (the embedded engine allows one process): checks that ClickHouse holds
 * every record once and that every rollup agrees with the raw events, and reports what the ingest
 * log still holds unloaded (it is loaded at the next start). Prints one JSON object; exits 1 when
 * something does not agree.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { loadConfig } from '../src/config.js';
import type { EventStore } from '../src/stores/clickhouse.js';
import { openStores } from '../src/stores/open.js';

export interface StoreCheck {
  events: number;
  distinctIds: number;
  spend: string;
  rollups: Record<string, { events: number; spend: string; equal: boolean }>;
  unloadedRecords: number;
  setAside: number;
  ok: boolean;
}

/** Raw events against each rollup (dimension outcome counts every event once in the by-dimension ones). */
export async function checkEvents(events: EventStore): Promise<Omit<StoreCheck, 'unloadedRecords' | 'setAside'>> {
  const [raw] = await events.query<{ n: string; ids: string; spend: string }>(
    'SELECT count() AS n, uniqExact(team_id, id) AS ids, toString(sum(toDecimal256(amount, 18))) AS spend FROM events',
  );
  const rows = await events.query<{ name: string; n: string; spend: string }>(
    `SELECT 'spend_minutely' AS name, toString(sum(events)) AS n, toString(sum(spend)) AS spend FROM spend_minutely
     UNION ALL SELECT 'spend_hourly_by', toString(sum(events)), toString(sum(spend)) FROM spend_hourly_by WHERE dimension = 'outcome'
     UNION ALL SELECT 'spend_daily_by', toString(sum(events)), toString(sum(spend)) FROM spend_daily_by WHERE dimension = 'outcome'`,
  );
  const rollups = Object.fromEntries(
    rows.map((r) => [r.name, { events: Number(r.n), spend: r.spend, equal: r.n === raw!.n && r.spend === raw!.spend }]),
  );
  const ok = raw!.n === raw!.ids && Object.values(rollups).every((r) => r.equal);
  return { events: Number(raw!.n), distinctIds: Number(raw!.ids), spend: raw!.spend, rollups, ok };
}

export async function checkStore(dataDir: string): Promise<StoreCheck> {
  const config = loadConfig({ ...process.env, DATA_DIR: dataDir });
  const { registry, events, loaderEvents } = await openStores(config, pino({ level: 'warn' }, pino.destination(2)));
  try {
    const result = await checkEvents(events);
    const { unloaded } = registry
      .prepare('SELECT coalesce(sum(rows), 0) AS unloaded FROM ingest_log WHERE last_pos > (SELECT loaded_pos FROM ingest_loader)')
      .get() as { unloaded: number };
    const { setAside } = registry.prepare('SELECT coalesce(sum(rows), 0) AS setAside FROM ingest_rejects').get() as { setAside: number };
    return { ...result, unloadedRecords: unloaded, setAside };
  } finally {
    registry.close();
    await events.close();
    await loaderEvents.close();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { 'data-dir': { type: 'string' } } });
  checkStore(path.resolve(values['data-dir'] ?? loadConfig().dataDir)).then(
    (result) => {
      process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      process.exit(result.ok ? 0 : 1);
    },
    (err: unknown) => {
      process.stderr.write(`store:check: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(2);
    },
  );
}
