/**
 * spend_minutely_by is backfilled once for the records loaded before it existed: it starts over
 * from an empty table (a run cut short leaves partial rows), waits while events are being valued
 * by mutation (their values are not in events yet), and is recorded so that it never runs twice.
 * Its own database and registry, so the shared data stays as is.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { minutesBackfilled } from '../../src/analytics/backfills.js';
import { backfillMinutes } from '../../src/ingest/minute-backfill.js';
import { SCHEMA_DIR } from '../../src/paths.js';
import { createEventStore, ensureDatabase, type EventStore } from '../../src/stores/clickhouse.js';
import { migrateEventStore, migrateRegistry } from '../../src/stores/migrations.js';
import { sqliteDatabase, type Database } from '../../src/stores/sql.js';
import { openRegistry, type Registry } from '../../src/stores/sqlite.js';
import { testEnv } from '../helpers/context.js';

describe('spend_minutely_by backfill', function () {
  this.timeout(60_000);
  const database = `minutes_${process.pid}`;
  let store: EventStore;
  let registry: Registry;
  let db: Database;
  let dir: string;
  const logger = pino({ level: 'silent' });

  before(async () => {
    const config = { ...testEnv().config.clickhouse, database };
    store = createEventStore(config);
    await ensureDatabase(store, config);
    await migrateEventStore(store, path.join(SCHEMA_DIR, 'clickhouse'));
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spendscope-minutes-'));
    registry = openRegistry(dir);
    migrateRegistry(registry, path.join(SCHEMA_DIR, 'sqlite'));
    db = sqliteDatabase(registry);
    // Loaded before the upgrade: two teams, minutes of two days, values in two currencies and none.
    const rows: [string, string, string, string, string | null, string][] = [
      ['t1', '2026-11-30 10:15:01.250', 'a', '1.5', '1.5', 'USD'],
      ['t1', '2026-11-30 10:15:59.999', 'b', '2', '2', 'USD'],
      ['t1', '2026-11-30 10:16:00.000', 'a', '0.000000000000000001', null, ''],
      ['t1', '2026-12-01 23:59:30.000', 'a', '7', '6.5', 'EUR'],
      ['t2', '2026-11-30 10:15:30.000', 'a', '3', '3', 'USD'],
    ];
    for (const [i, [team, time, agent, amount, value, currency]] of rows.entries()) {
      await store.command(
        `INSERT INTO events (team_id, event_time, id, agent_id, endpoint, amount, amount_text, asset, value, currency, policy_evaluation, log_pos)
         VALUES ({team:String}, toDateTime64({time:String}, 3, 'UTC'), {id:String}, {agent:String}, 'https://x.example/', toDecimal128({amount:String}, 18),
                 {amount:String}, 'USDC', {value:Nullable(Decimal(38, 18))}, {currency:String}, {outcome:String}, {pos:UInt64})`,
        { team, time, id: `r${i}`, agent, amount, value, currency, outcome: i === 1 ? 'flagged' : 'allowed', pos: i + 1 },
      );
    }
  });

  after(async () => {
    await store.command(`DROP DATABASE IF EXISTS ${database}`);
    await store.close();
    registry.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** The table's rows of two dimensions, summed as readers sum them. */
  const minutes = () =>
    store.query<Record<string, string>>(
      `SELECT team_id, dimension, toString(minute) AS minute, key, toString(currency) AS currency, toString(sum(spend)) AS sp, toString(sum(events)) AS cnt,
              toString(max(max_amount)) AS mx, toString(sum(value)) AS val, toString(sum(valued)) AS vd
         FROM spend_minutely_by WHERE dimension IN ('agent', 'outcome')
        GROUP BY team_id, dimension, minute, key, currency ORDER BY team_id, dimension, minute, key, currency`,
    );

  /** The same, recomputed from events. */
  const recomputed = () =>
    store.query<Record<string, string>>(
      `SELECT team_id, dim.1 AS dimension, toString(toStartOfMinute(event_time)) AS minute, dim.2 AS key, toString(currency) AS currency,
              toString(sum(toDecimal256(amount, 18))) AS sp, toString(count()) AS cnt, toString(max(amount)) AS mx,
              toString(sum(toDecimal256(ifNull(value, 0), 18))) AS val, toString(countIf(value IS NOT NULL)) AS vd
         FROM events ARRAY JOIN [('agent', agent_id), ('outcome', toString(policy_evaluation))] AS dim
        GROUP BY team_id, dimension, minute, key, currency ORDER BY team_id, dimension, minute, key, currency`,
    );

  it('waits while events are being valued, then fills every minute exactly, once', async () => {
    // A run cut short left rows behind: the backfill starts over.
    await store.command(
      `INSERT INTO spend_minutely_by (team_id, dimension, minute, key, currency, spend, events, max_amount, value, valued)
       VALUES ('t1', 'agent', toDateTime('2026-11-30 10:15:00', 'UTC'), 'a', 'USD', 1.5, 1, 1.5, 1.5, 1)`,
    );
    // A mutation of events that cannot finish stands for the value backfill at work.
    await store.command(`ALTER TABLE events UPDATE amount_text = amount_text WHERE throwIf(log_pos = 1, 'still valuing') SETTINGS mutations_sync = 0`);
    expect(await backfillMinutes(store, db, logger), 'not while events are being valued').to.equal(false);
    expect(await minutesBackfilled(db)).to.equal(false);
    await store.command(`KILL MUTATION WHERE database = '${database}' AND table = 'events' SYNC`);

    expect(await backfillMinutes(store, db, logger)).to.equal(true);
    const filled = await minutes();
    expect(filled).to.deep.equal(await recomputed());
    // Every record once in the outcome dimension, the value only in its own currency's rows.
    expect(filled.filter((r) => r.dimension === 'outcome').reduce((n, r) => n + Number(r.cnt), 0)).to.equal(5);
    expect(filled.find((r) => r.dimension === 'agent' && r.currency === 'EUR')).to.include({ minute: '2026-12-01 23:59:00', val: '6.5', vd: '1' });
    expect(await minutesBackfilled(db)).to.equal(true);
    expect(registry.prepare('SELECT name FROM rollup_backfills').all()).to.deep.include({ name: 'minutes' });

    // Recorded: a later start does not run it again (it would count these rows twice were it not to empty the table).
    await store.command(
      `INSERT INTO events (team_id, event_time, id, agent_id, endpoint, amount, amount_text, asset, log_pos)
       VALUES ('t1', toDateTime64('2026-11-30 10:20:00', 3, 'UTC'), 'later', 'a', 'https://x.example/', 1, '1', 'USDC', 9)`,
    );
    expect(await backfillMinutes(store, db, logger)).to.equal(true);
    expect(await minutes()).to.deep.equal(filled);
  });
});
