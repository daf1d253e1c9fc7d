/**
 * Fills spend_minutely_by (schema/clickhouse/012) for the records loaded before blocks filled it,
 * once. The loader runs it holding the lease with no block recorded and unconfirmed, so every row
 * of events is in ClickHouse for good and nothing is inserted meanwhile. It empties the table and
 * sums events into it a UTC day at a time (a day's groups fit in memory at any volume), then
 * records itself in rollup_backfills; a run cut short starts over, so nothing counts twice.
 */
import type { Logger } from 'pino';
import { minutesBackfilled } from '../analytics/backfills.js';
import { MINUTES_BACKFILL, minutesBackfillSql } from '../analytics/rollups.js';
import type { EventStore } from '../stores/clickhouse.js';
import type { Database } from '../stores/sql.js';

/** True once done (now or before); false while events are being valued: try again later. */
export async function backfillMinutes(store: EventStore, db: Database, logger: Logger): Promise<boolean> {
  if (await minutesBackfilled(db)) return true;
  // The value backfill writes values into events by mutation after it gave them to the rollups it
  // knew, which did not include this one: summed before the mutation ends, a value would be lost.
  const [state] = await store.query<{ running: string; partial: string }>(
    `SELECT toString((SELECT count() FROM system.mutations WHERE database = currentDatabase() AND table = 'events' AND NOT is_done)) AS running,
            toString((SELECT count() FROM spend_minutely_by)) AS partial`,
  );
  if (Number(state!.running) > 0) return false;
  const started = performance.now();
  // Rows of a run cut short (a new store has none: its first start costs two cheap queries more).
  if (Number(state!.partial) > 0) await store.command('TRUNCATE TABLE spend_minutely_by');
  const days = await store.query<{ day: string }>('SELECT DISTINCT toString(toDate(event_time)) AS day FROM events ORDER BY day');
  for (const { day } of days) await store.command(minutesBackfillSql('toDate(event_time) = {day:Date}'), { day });
  await db.run('INSERT INTO rollup_backfills (name, done_at, legacy_until) VALUES (?, ?, 0) ON CONFLICT DO NOTHING', [MINUTES_BACKFILL, Date.now()]);
  logger.info({ days: days.length, ms: Math.round(performance.now() - started) }, 'rollups: spend_minutely_by backfilled for the records loaded before it existed');
  return true;
}
