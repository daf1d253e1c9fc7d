/** Retention: EVENTS_TTL_DAYS and ROLLUP_TTL_DAYS become ClickHouse TTLs, and records past it are refused. */
import { expect } from 'chai';
import path from 'node:path';
import { loadConfig } from '../../src/config.js';
import { SCHEMA_DIR } from '../../src/paths.js';
import { createEventStore, ensureDatabase, type EventStore } from '../../src/stores/clickhouse.js';
import { migrateEventStore } from '../../src/stores/migrations.js';
import { applyRetention, RETENTION_TABLES } from '../../src/stores/retention.js';
import { Ingestor } from '../../src/ingest/ingestor.js';
import { api, appWith, errorOf, newTeam, testEnv } from '../helpers/context.js';

describe('retention', function () {
  this.timeout(120_000);
  // A database of its own on the shared engine: changing TTLs here cannot expire other tests' rows.
  let store: EventStore;
  const showCreate = async (table: string) => (await store.query<{ statement: string }>(`SHOW CREATE TABLE ${table}`))[0]!.statement;

  before(async () => {
    const config = { ...testEnv().config.clickhouse, database: `retention_${process.pid}` };
    store = createEventStore(config);
    await ensureDatabase(store, config);
    await migrateEventStore(store, path.join(SCHEMA_DIR, 'clickhouse'));
  });
  after(async () => {
    await store.command(`DROP DATABASE IF EXISTS retention_${process.pid} SYNC`);
    await store.close();
  });

  it('follows the settings into SHOW CREATE TABLE, both ways, and changes nothing when they match', async () => {
    const defaults = loadConfig({}).retention;
    expect(defaults).to.deep.equal({ eventsTtlDays: 400, rollupTtlDays: 0 });
    const first = await applyRetention(store, defaults);
    expect(first).to.deep.equal([{ table: 'events', ttl: 'toDateTime(event_time) + toIntervalDay(400)' }]);
    expect(await showCreate('events')).to.include('TTL toDateTime(event_time) + toIntervalDay(400)');
    expect(await showCreate('spend_hourly_by')).to.not.include('TTL');
    expect(await applyRetention(store, defaults)).to.deep.equal([]);

    const changed = await applyRetention(store, loadConfig({ EVENTS_TTL_DAYS: '90', ROLLUP_TTL_DAYS: '730' }).retention);
    expect(changed.map((c) => c.table)).to.deep.equal(RETENTION_TABLES.map((t) => t.table));
    expect(await showCreate('events')).to.include('TTL toDateTime(event_time) + toIntervalDay(90)');
    expect(await showCreate('spend_minutely')).to.include('TTL toDateTime(minute) + toIntervalDay(730)');
    expect(await showCreate('spend_hourly_by')).to.include('TTL toDateTime(hour) + toIntervalDay(730)');
    expect(await showCreate('spend_daily_by')).to.include('TTL toDateTime(day) + toIntervalDay(730)');

    await applyRetention(store, loadConfig({ EVENTS_TTL_DAYS: '0' }).retention);
    for (const { table } of RETENTION_TABLES) expect(await showCreate(table), table).to.not.include('TTL');
  });

  it('expired rows are deleted when ClickHouse merges (here forced), younger ones stay', async () => {
    await applyRetention(store, loadConfig({ EVENTS_TTL_DAYS: '30' }).retention);
    const old = Date.now() - 40 * 86_400_000;
    const recent = Date.now() - 10 * 86_400_000;
    for (const [id, t] of [['old', old], ['recent', recent]] as const) {
      await store.command(
        `INSERT INTO events (team_id, id, event_time, received_at, agent_id, endpoint, domain, category, amount, network)
         VALUES ('team_ttl', '${id}', fromUnixTimestamp64Milli(${t}), now64(3), 'a1', 'https://x.example/', 'x.example', 'api', 1, 'eip155:8453')`,
      );
    }
    await store.command('OPTIMIZE TABLE events FINAL');
    const ids = await store.query<{ id: string }>(`SELECT id FROM events WHERE team_id = 'team_ttl' ORDER BY id`);
    expect(ids.map((r) => r.id)).to.deep.equal(['recent']);
  });

  it('a record whose event time is past EVENTS_TTL_DAYS is refused, naming the field; the rest of the batch is stored', async () => {
    const team = await newTeam();
    const eventsTtlDays = 400;
    const deps = testEnv().deps;
    const ingestor = new Ingestor(deps.schemas, deps.ingest.commit, undefined, { eventsTtlDays });
    const app = appWith([], { ingest: { ...deps.ingest, ingestor } });
    const record = (id: string, daysAgo: number) => ({
      id,
      agent_id: 'a1',
      endpoint: 'https://x.example/p',
      method: 'GET',
      amount: '1',
      created_at: Date.now() - daysAgo * 86_400_000,
    });
    const res = await api(app)
      .post('/api/v1/audit/batch')
      .set(...team.auth)
      .send({ records: [record('kept', eventsTtlDays - 1), record('too-old', eventsTtlDays + 1)] })
      .expect(200);
    expect(res.body.ingested).to.equal(1);
    expect(res.body.errors).to.deep.equal([
      { index: 1, field: 'created_at', message: `is more than ${eventsTtlDays} days ago, past the retention of raw events (EVENTS_TTL_DAYS): not stored` },
    ]);
    const alone = await api(app).post('/api/v1/events').set(...team.auth).send({ events: [record('too-old-2', eventsTtlDays + 30)] }).expect(400);
    expect(errorOf(alone.body).message).to.include('EVENTS_TTL_DAYS');
  });

  it('refuses rollups kept shorter than raw events', () => {
    expect(() => loadConfig({ EVENTS_TTL_DAYS: '400', ROLLUP_TTL_DAYS: '30' })).to.throw(/ROLLUP_TTL_DAYS/);
    expect(() => loadConfig({ EVENTS_TTL_DAYS: '0', ROLLUP_TTL_DAYS: '800' })).to.throw(/ROLLUP_TTL_DAYS/);
    expect(loadConfig({ EVENTS_TTL_DAYS: '30', ROLLUP_TTL_DAYS: '30' }).retention).to.deep.equal({ eventsTtlDays: 30, rollupTtlDays: 30 });
  });
});
