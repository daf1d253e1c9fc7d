/**
 * Threshold alerts (a budget reached a notify_at percentage) say something about one window: when
 * the window ends, the budget starts again and the alert is resolved by itself, with its webhook
 * event like a resolve by hand. Every instance sweeps; resolving takes the alert's row lock and an
 * alert already resolved is left as it is, so two instances resolve it once.
 */
import type { Logger } from 'pino';
import type { Database } from '../stores/sql.js';
import { setAlertStatus } from './repository.js';

export const WINDOW_ENDED = 'Resolved by itself: its window ended';

/** Resolves open threshold alerts whose window has ended, up to `batch`; returns how many. */
export async function resolveEndedThresholds(db: Database, now = Date.now(), batch = 500): Promise<number> {
  const ended = await db.all<{ team_id: string; id: string }>(
    `SELECT team_id, id FROM alerts WHERE status = 'open' AND type = 'threshold' AND window_end <= ? ORDER BY window_end LIMIT ?`,
    [now, batch],
  );
  for (const { team_id, id } of ended) await db.transaction((sql) => setAlertStatus(sql, team_id, id, 'resolved', WINDOW_ENDED));
  return ended.length;
}

/** Sweeps every `intervalMs` (windows end on whole minutes), until closed. */
export function startThresholdSweep(db: Database, logger: Logger, intervalMs = 15_000): { close(): Promise<void> } {
  let running: Promise<void> = Promise.resolve();
  const sweep = () => {
    running = (async () => {
      try {
        while ((await resolveEndedThresholds(db)) === 500);
      } catch (err) {
        logger.error({ err }, 'resolving threshold alerts of ended windows failed; trying again shortly');
      }
    })();
  };
  const timer = setInterval(sweep, intervalMs);
  timer.unref();
  return {
    async close() {
      clearInterval(timer);
      await running;
    },
  };
}
