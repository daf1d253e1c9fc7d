import type { Logger } from 'pino';
import type { Retention } from '../config.js';
import type { EventStore } from './clickhouse.js';

/** The tables a retention setting covers, and the time column each expires by. */
export const RETENTION_TABLES = [
  { table: 'events', column: 'event_time', setting: 'eventsTtlDays' },
  { table: 'spend_minutely', column: 'minute', setting: 'rollupTtlDays' },
  { table: 'spend_hourly_by', column: 'hour', setting: 'rollupTtlDays' },
  { table: 'spend_daily_by', column: 'day', setting: 'rollupTtlDays' },
] as const;

/** The TTL clause as ClickHouse writes it back in SHOW CREATE TABLE, or null for none. */
export function ttlExpression(column: string, days: number): string | null {
  return days > 0 ? `toDateTime(${column}) + toIntervalDay(${days})` : null;
}

/** The TTL of a table now, read from its engine clause (null: none). */
async function currentTtl(store: EventStore, table: string): Promise<string | null> {
  const rows = await store.query<{ engine_full: string }>(
    'SELECT engine_full FROM system.tables WHERE database = currentDatabase() AND name = {table:String}',
    { table },
  );
  const engine = rows[0]?.engine_full;
  if (engine === undefined) throw new Error(`retention: no table ${table} in the event store`);
  return / TTL (.+?)(?: SETTINGS |$)/.exec(engine)?.[1] ?? null;
}

/**
 * The retention settings become the tables' TTLs: run at every start after the migrations, it
 * changes a table only when its TTL differs from the setting, so it follows the setting both ways
 * (0 removes the TTL). ClickHouse then rewrites existing parts in the background (MATERIALIZE TTL)
 * and deletes expired rows at merges; the ALTER itself returns at once. Returns what it changed.
 */
export async function applyRetention(store: EventStore, retention: Retention, logger?: Logger): Promise<{ table: string; ttl: string | null }[]> {
  const changed: { table: string; ttl: string | null }[] = [];
  for (const { table, column, setting } of RETENTION_TABLES) {
    const wanted = ttlExpression(column, retention[setting]);
    if ((await currentTtl(store, table)) === wanted) continue;
    await store.command(wanted === null ? `ALTER TABLE ${table} REMOVE TTL` : `ALTER TABLE ${table} MODIFY TTL ${wanted}`);
    changed.push({ table, ttl: wanted });
  }
  if (changed.length > 0) logger?.info({ changed }, 'retention: table TTLs changed to follow EVENTS_TTL_DAYS and ROLLUP_TTL_DAYS');
  return changed;
}
