/**
 * Grows a seeded store to benchmark sizes (100 million events) in minutes rather than hours: the
 * first events enter through the service's write path (`seedStore`), the rest are copies of them
 * made inside the engine, each with its own ids, agents and times, rolled up by the loader's own
 * rollup statements. Run while the server is stopped (one process at a time).
 */
import { pino } from 'pino';
import { blockRollupInserts } from '../src/analytics/rollups.js';
import { loadConfig } from '../src/config.js';
import { openStores } from '../src/stores/open.js';

/** Copies sit above every position the ingest log can reach, one such span per copy. */
const COPY_SPAN = 2 ** 40;

export interface CopyOptions {
  dataDir: string;
  /** How many copies of the seeded events to add (the store then holds copies + 1 times them). */
  copies: number;
  /** The seeded agents' count: copies rotate agent-N among them. */
  agents: number;
  log?: (line: string) => void;
}

/**
 * Adds `copies` copies of the events the write path stored. Copy k moves each event back by up to
 * four hours (a hash of its id and k), turns agent-N into agent-((N + 7k) mod agents) and suffixes
 * its id, so hours and days hold as many keys as real traffic of that volume would; then it fills
 * every rollup from the copy's rows, as the loader does for a block. Each statement carries its own
 * deduplication token: a run stopped halfway and started again adds nothing twice. (The copy's
 * columns are named as the table's, so the originals are picked in a subquery the aliases cannot reach.)
 */
export async function addCopies(options: CopyOptions): Promise<void> {
  const log = options.log ?? (() => undefined);
  const config = loadConfig({ ...process.env, DATA_DIR: options.dataDir });
  const { registry, events, loaderEvents } = await openStores(config, pino({ level: process.env.LOG_LEVEL ?? 'warn' }, pino.destination(2)));
  try {
    const started = performance.now();
    for (let k = 1; k <= options.copies; k++) {
      const t0 = performance.now();
      const first = k * COPY_SPAN;
      await events.command(
        `INSERT INTO events SETTINGS insert_deduplication_token = 'seed-copy:${k}:events'
         SELECT * REPLACE (
                  fromUnixTimestamp64Milli(toUnixTimestamp64Milli(event_time) - toInt64(cityHash64(id, ${k}) % 14400000), 'UTC') AS event_time,
                  concat(id, '.', toString(${k})) AS id,
                  concat('agent-', toString((toUInt32OrZero(substring(agent_id, 7)) + ${7 * k}) % ${options.agents})) AS agent_id,
                  log_pos + ${first} AS log_pos)
           FROM (SELECT * FROM events WHERE log_pos < ${COPY_SPAN})`,
      );
      for (const insert of blockRollupInserts(false)) {
        await events.command(insert.sql(`log_pos BETWEEN ${first} AND ${first + COPY_SPAN - 1}`, `seed-copy:${k}:${insert.name}`));
      }
      log(`copy ${k} / ${options.copies} in ${((performance.now() - t0) / 1000).toFixed(0)} s (${((performance.now() - started) / 1000).toFixed(0)} s in all)`);
    }
  } finally {
    registry.close();
    await events.close();
    await loaderEvents.close();
  }
}
