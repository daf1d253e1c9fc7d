/**
 * The rollup dimensions added after data existed (asset, unpriced) are backfilled once for the
 * blocks loaded before, and never for a block past the loaded position: that block's own inserts
 * run when the loader takes it again. Its own database and registry, so the shared data stays as is.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { backfillRollups } from '../../src/ingest/local-loader.js';
import { SCHEMA_DIR } from '../../src/paths.js';
import { createEventStore, ensureDatabase, type EventStore } from '../../src/stores/clickhouse.js';
import { migrateEventStore, migrateRegistry } from '../../src/stores/migrations.js';
import { openRegistry, type Registry } from '../../src/stores/sqlite.js';
import { testEnv } from '../helpers/context.js';

describe('rollup backfill of later dimensions', function () {
  this.timeout(60_000);
  let store: EventStore;
  let registry: Registry;
  let dir: string;
  const logger = pino({ level: 'silent' });

  before(async () => {
    const config = { ...testEnv().config.clickhouse, database: `backfill_${process.pid}` };
    store = createEventStore(config);
    await ensureDatabase(store, config);
    await migrateEventStore(store, path.join(SCHEMA_DIR, 'clickhouse'));
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spendscope-backfill-'));
    registry = openRegistry(dir);
    migrateRegistry(registry, path.join(SCHEMA_DIR, 'sqlite'));
    // Loaded before the upgrade: positions 0 (before the log existed) to 10. Position 11 is a
    // block in events whose rollups had not run when the process stopped.
    const rows: [number, string, string, string, string][] = [
      [0, 'USDC', '1.5', '1.5', ''],
      [4, 'USDC', '2', '2', ''],
      [10, 'WETH', '0', '', '1500'], // unpriced
      [11, 'EURC', '7', '7', ''],
    ];
    for (const [pos, asset, amount, amountText, raw] of rows) {
      await store.command(
        `INSERT INTO events (team_id, event_time, id, agent_id, endpoint, amount, amount_text, amount_raw, asset, log_pos)
         VALUES ('t1', now64(3), {id:String}, 'a', 'https://x.example/', toDecimal128({amount:String}, 18), {text:String}, {raw:String}, {asset:String}, {pos:UInt64})`,
        { id: `r${pos}`, amount, text: amountText, raw, asset, pos },
      );
    }
    registry.prepare('UPDATE ingest_loader SET loaded_pos = 10 WHERE id = 1').run();
  });

  after(async () => {
    await store.command(`DROP DATABASE IF EXISTS backfill_${process.pid}`);
    await store.close();
    registry.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const rollup = (table: string) =>
    store.query<{ dimension: string; key: string; spend: string; events: string }>(
      `SELECT dimension, key, toString(sum(spend)) AS spend, toString(sum(events)) AS events FROM ${table}
        WHERE team_id = 't1' AND dimension IN ('asset', 'unpriced') GROUP BY dimension, key ORDER BY dimension, key`,
    );

  it('fills asset and unpriced for what was loaded, once, and says which blocks load the old way', async () => {
    const logId = (registry.prepare('SELECT log_id FROM ingest_loader').get() as { log_id: string }).log_id;
    // Block 11 was recorded (and its events inserted) but not confirmed when the process stopped.
    registry.prepare('INSERT INTO ingest_blocks (first_pos, last_pos) VALUES (11, 11)').run();
    const expected = [
      { dimension: 'asset', key: 'USDC', spend: '3.5', events: '2' },
      { dimension: 'asset', key: 'WETH', spend: '0', events: '1' },
      { dimension: 'unpriced', key: 'WETH', spend: '0', events: '1' },
    ];
    expect(await backfillRollups(registry, store, logId, logger), 'blocks up to the pending one load the old way').to.equal(11);
    expect(await rollup('spend_hourly_by')).to.deep.equal(expected);
    expect(await rollup('spend_daily_by')).to.deep.equal(expected);
    // Done once: a later start does nothing, and says the same.
    registry.prepare('UPDATE ingest_loader SET loaded_pos = 11').run();
    expect(await backfillRollups(registry, store, logId, logger)).to.equal(11);
    expect(await rollup('spend_hourly_by')).to.deep.equal(expected);
    // A crash after the inserts and before they were recorded: run again, ClickHouse drops them by their tokens.
    registry.prepare('DELETE FROM rollup_backfills').run();
    registry.prepare('UPDATE ingest_loader SET loaded_pos = 10').run();
    await backfillRollups(registry, store, logId, logger);
    expect(await rollup('spend_hourly_by')).to.deep.equal(expected);
    expect(await rollup('spend_daily_by')).to.deep.equal(expected);
  });
});
