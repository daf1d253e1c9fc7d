/** Whether spend_minutely_by may be read: its backfill is recorded (src/ingest/minute-backfill.ts). */
import type { Sql } from '../stores/sql.js';
import { MINUTES_BACKFILL } from './rollups.js';

/** Registries known to have it: once recorded it stays, so a reader asks until it is. */
const backfilled = new WeakSet<object>();

/** True once spend_minutely_by holds every loaded record and every block fills it. */
export async function minutesBackfilled(db: Sql): Promise<boolean> {
  if (backfilled.has(db)) return true;
  const row = await db.get('SELECT 1 AS done FROM rollup_backfills WHERE name = ?', [MINUTES_BACKFILL]);
  if (row === undefined) return false;
  backfilled.add(db);
  return true;
}
