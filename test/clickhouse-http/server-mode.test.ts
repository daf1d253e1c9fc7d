/**
 * ClickHouse's HTTP interface, served by the service's protocol module over the run's engine
 * (unrestricted, on loopback: test helpers only), and the service in server mode against it.
 */
import { expect } from 'chai';
import crypto from 'node:crypto';
import Database from 'better-sqlite3';
import path from 'node:path';
import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import { ApiStorage, AuditLogger } from '@x402sentinel/x402';
import { startClickHouseServer } from '../helpers/clickhouse-server.js';
import { sleep } from '../helpers/common.js';
import { testEnv } from '../helpers/context.js';
import { sdkRecord } from '../ingest/fixtures.js';
import { recordToRow } from '../../src/ingest/records.js';
import { RowBinaryWriter, VALUE_COLUMNS } from '../../src/ingest/rowbinary.js';
import { rowToTsv, TSV_COLUMNS } from '../../src/ingest/tsv.js';
import { createEventStore } from '../../src/stores/clickhouse.js';
import { callWithKey, startService, tempDir, type RunningService } from '../helpers/processes.js';

describe('ClickHouse HTTP interface over the embedded engine', function () {
  this.timeout(120_000);
  let server: Awaited<ReturnType<typeof startClickHouseServer>>;
  let client: ClickHouseClient;
  const database = `http_${crypto.randomBytes(4).toString('hex')}`;

  before(async () => {
    server = await startClickHouseServer();
    client = createClient({ url: server.url, username: 'default', password: '', log: { level: ClickHouseLogLevel.OFF } });
    await client.command({ query: `CREATE DATABASE ${database}` });
    await client.command({ query: `CREATE TABLE ${database}.t (team String, amount Decimal(38, 18), n UInt64) ENGINE = MergeTree ORDER BY team` });
  });

  after(async () => {
    await client?.command({ query: `DROP DATABASE IF EXISTS ${database}` }).catch(() => undefined);
    await client?.close();
    await server?.close();
  });

  it('answers ping, and a query in the URL, in the body, with parameters and in any format', async () => {
    expect(await (await fetch(`${server.url}/ping`)).text()).to.equal('Ok.\n');
    await client.insert({ table: `${database}.t`, values: [{ team: 'a', amount: '0.000000000000000001', n: 1 }, { team: 'b', amount: '12.5', n: 2 }], format: 'JSONEachRow' });
    const rows = await (
      await client.query({ query: `SELECT team, amount, n FROM ${database}.t WHERE n >= {min:UInt64} ORDER BY team`, query_params: { min: 1 }, format: 'JSONEachRow', clickhouse_settings: { output_format_json_quote_decimals: 1 } })
    ).json();
    expect(rows).to.deep.equal([
      { team: 'a', amount: '0.000000000000000001', n: '1' },
      { team: 'b', amount: '12.5', n: '2' },
    ]);
    const get = await fetch(`${server.url}/?query=${encodeURIComponent(`SELECT count() FROM ${database}.t`)}`);
    expect(get.headers.get('x-clickhouse-format')).to.equal('TabSeparated');
    expect(await get.text()).to.equal('2\n');
    const csv = await fetch(`${server.url}/?default_format=CSV&database=${database}`, { method: 'POST', body: 'SELECT team, n FROM t ORDER BY team' });
    expect(await csv.text()).to.equal('"a",1\n"b",2\n');
  });

  it('streams a large result, compressed when asked', async () => {
    const result = await client.query({ query: 'SELECT number, toString(number) AS s FROM numbers(300000)', format: 'JSONEachRow' });
    let count = 0;
    let last = -1;
    for await (const rows of result.stream()) {
      for (const row of rows) {
        const { number } = row.json<{ number: string }>();
        expect(Number(number)).to.equal(last + 1);
        last = Number(number);
        count++;
      }
    }
    expect(count).to.equal(300_000);
    const gz = await fetch(`${server.url}/?enable_http_compression=1&query=${encodeURIComponent('SELECT number FROM numbers(1000)')}`, { headers: { 'Accept-Encoding': 'gzip' } });
    expect(gz.headers.get('content-encoding')).to.equal('gzip');
    expect((await gz.text()).split('\n')).to.have.length(1001);
  });

  it("answers errors with ClickHouse's code, name and status", async () => {
    const unknown = await fetch(`${server.url}/?query=${encodeURIComponent('SELECT * FROM no_such_table')}`);
    expect(unknown.status).to.equal(404);
    expect(unknown.headers.get('x-clickhouse-exception-code')).to.equal('60');
    expect(await unknown.text()).to.match(/^Code: 60\. DB::Exception: .*\(UNKNOWN_TABLE\)/);
    const syntax = await fetch(`${server.url}/`, { method: 'POST', body: 'SELEC 1' });
    expect(syntax.status).to.equal(400);
    expect(syntax.headers.get('x-clickhouse-exception-code')).to.equal('62');
    let thrown: { code?: string; type?: string } | undefined;
    try {
      await client.query({ query: 'SELECT * FROM no_such_table', format: 'JSONEachRow' });
    } catch (err) {
      thrown = err as { code?: string; type?: string };
    }
    expect(thrown).to.include({ code: '60', type: 'UNKNOWN_TABLE' });
  });

  it('takes a RowBinary INSERT as its body (the loader in server mode): the same rows as their TSV lines, once per token', async () => {
    // The events columns, from the run's own engine.
    const columns = await testEnv().events.query<{ name: string; type: string }>(
      "SELECT name, type FROM system.columns WHERE database = currentDatabase() AND table = 'events' ORDER BY position",
    );
    for (const table of ['from_tsv', 'from_binary']) {
      await client.command({ query: `CREATE TABLE ${database}.${table} (${columns.map((c) => `${c.name} ${c.type}`).join(', ')}) ENGINE = MergeTree ORDER BY tuple() SETTINGS non_replicated_deduplication_window = 100` });
    }
    const now = Date.UTC(2026, 10, 29, 12);
    const rows = Array.from({ length: 50 }, (_, i) => {
      const outcome = recordToRow(
        sdkRecord({ created_at: now - i, tags: i % 3 ? [] : ['ops', `t${i}`], tx_hash: i % 2 ? null : `0x${i}`, metadata: { note: i === 7 ? 'é'.repeat(3_000) : `n\t${i}` } }),
        testEnv().schemas, 'team-rb', 'sdk', now,
      );
      if (!outcome.ok) throw new Error(JSON.stringify(outcome.errors));
      return { ...outcome.row, ingest_seq: now * 1000 + i };
    });
    const store = createEventStore({ mode: 'server', url: server.url, user: 'default', password: '', database });
    try {
      const writer = new RowBinaryWriter();
      rows.forEach((r, i) => writer.write(r, 1 + i));
      await store.insertTsv('from_tsv', TSV_COLUMNS, Buffer.from(rows.map((r, i) => rowToTsv(r, 1 + i)).join('')), {});
      for (let i = 0; i < 2; i++) await store.insertRowBinary('from_binary', [...TSV_COLUMNS, ...VALUE_COLUMNS], Buffer.from(writer.rows), { insert_deduplication_token: 'log:1-50:events' });
      const list = TSV_COLUMNS.join(', ');
      const [counts] = await store.query<{ tsv: string; binary: string; differing: string }>(
        `SELECT (SELECT toString(count()) FROM from_tsv) AS tsv, (SELECT toString(count()) FROM from_binary) AS binary,
                (SELECT toString(count()) FROM (SELECT ${list} FROM from_tsv EXCEPT SELECT ${list} FROM from_binary)) AS differing`,
      );
      expect(counts).to.deep.equal({ tsv: '50', binary: '50', differing: '0' });
    } finally {
      await store.close();
    }
  });

  describe('the service in server mode (CLICKHOUSE_URL) against it', () => {
    const KEY = 'server-mode-key-0123456789abcdefghij';
    let service: RunningService | undefined;
    const serviceDatabase = `server_mode_${crypto.randomBytes(4).toString('hex')}`;

    after(async () => {
      if (service) {
        service.child.kill('SIGTERM');
        await service.exited;
      }
      await client.command({ query: `DROP DATABASE IF EXISTS ${serviceDatabase}` }).catch(() => undefined);
    });

    it('migrates, ingests (the published SDK too), loads and answers analytics through it', async () => {
      service = await startService({
        DATA_DIR: tempDir('server-mode'),
        BOOTSTRAP_API_KEY: KEY,
        CLICKHOUSE_URL: server.url,
        CLICKHOUSE_DATABASE: serviceDatabase,
        LOAD_INTERVAL_MS: '100',
      });
      const migrations = await (await client.query({ query: `SELECT count() AS n FROM ${serviceDatabase}.schema_migrations FINAL`, format: 'JSONEachRow' })).json<{ n: string }>();
      expect(Number(migrations[0]!.n)).to.be.greaterThan(0);

      const now = Date.now();
      const events = Array.from({ length: 50 }, (_, i) => ({ id: `sm-${i}`, agent_id: `bot-${i % 3}`, endpoint: 'https://api.example.com/v1/x', method: 'POST', amount: '0.1', created_at: now }));
      const ingested = await callWithKey(service.baseUrl, KEY, 'POST', '/api/v1/events', { events });
      expect(ingested.status).to.equal(200);
      expect(ingested.body.ingested).to.equal(50);
      const storage = new ApiStorage({ apiKey: KEY, baseUrl: `${service.baseUrl}/api/v1`, batchSize: 50, flushIntervalMs: 3_600_000 });
      try {
        await new AuditLogger({ storage }).log({ ...sdkRecord({ amount: '0.500000' }), id: undefined, created_at: undefined } as never);
        await storage.flush();
        expect((storage as unknown as { useFallback: boolean }).useFallback, 'SDK switched to local storage').to.equal(false);
      } finally {
        storage.destroy();
      }

      const from = new Date(now - 3_600_000).toISOString();
      const to = new Date(now + 3_600_000).toISOString();
      const summary = await callWithKey(service.baseUrl, KEY, 'GET', `/api/v1/analytics/summary?from=${from}&to=${to}`);
      expect(summary.status).to.equal(200);
      expect(summary.body.totalSpend).to.equal('5.5');
      expect(summary.body.count).to.equal(51);
      // Loaded through the HTTP interface into the shared engine, once each.
      const stored = await (await client.query({ query: `SELECT count() AS n, uniqExact(id) AS ids FROM ${serviceDatabase}.events`, format: 'JSONEachRow' })).json<{ n: string; ids: string }>();
      expect(stored[0]).to.deep.equal({ n: '51', ids: '51' });
      expect(testEnv().config.clickhouse.mode).to.equal('embedded');
    });

    it("two instances on one engine: a team's records once while it is routed to one instance, twice if sent to both (the deployment rule)", async () => {
      const database = `two_instances_${crypto.randomBytes(4).toString('hex')}`;
      const key = 'two-instances-key-0123456789abcdefgh';
      const env = (dataDir: string) => ({ DATA_DIR: dataDir, BOOTSTRAP_API_KEY: key, CLICKHOUSE_URL: server.url, CLICKHOUSE_DATABASE: database, LOAD_INTERVAL_MS: '100' });
      const first = tempDir('instance-a');
      const second = tempDir('instance-b');
      // Each instance starts once on its own data directory (its own registry and log), then the
      // second is given the first one's team id: one team set up on both instances.
      for (const dir of [first, second]) {
        const once = await startService(env(dir));
        once.child.kill('SIGTERM');
        await once.exited;
      }
      const teamOf = (dir: string) => {
        const db = new Database(path.join(dir, 'registry.db'));
        try {
          return (db.prepare("SELECT id FROM teams WHERE name = 'default'").get() as { id: string }).id;
        } finally {
          db.close();
        }
      };
      const team = teamOf(first);
      const other = new Database(path.join(second, 'registry.db'));
      try {
        other.pragma('foreign_keys = OFF');
        other.prepare('UPDATE api_keys SET team_id = ? WHERE team_id = ?').run(team, teamOf(second));
        other.prepare("UPDATE teams SET id = ? WHERE name = 'default'").run(team);
      } finally {
        other.close();
      }
      const a = await startService(env(first));
      const b = await startService(env(second));
      try {
        const events = Array.from({ length: 10 }, (_, i) => ({ id: `shared-${i}`, agent_id: 'bot', endpoint: 'https://api.example.com/x', method: 'POST', amount: '1', created_at: Date.now() }));
        const count = async () =>
          (await (await client.query({ query: `SELECT count() AS n, uniqExact(id) AS ids FROM ${database}.events`, format: 'JSONEachRow' })).json<{ n: string; ids: string }>())[0];
        const loaded = async (n: string) => {
          for (let i = 0; i < 100 && (await count())!.n !== n; i++) await sleep(100);
          return count();
        };
        expect((await callWithKey(a.baseUrl, key, 'POST', '/api/v1/events', { events })).body.ingested).to.equal(10);
        // A retry to the instance that has the team: duplicates, stored once.
        expect((await callWithKey(a.baseUrl, key, 'POST', '/api/v1/events', { events })).body.duplicates).to.equal(10);
        expect(await loaded('10')).to.deep.equal({ n: '10', ids: '10' });
        // The same records sent to the other instance: its log and (team, id) index never saw them.
        expect((await callWithKey(b.baseUrl, key, 'POST', '/api/v1/events', { events })).body).to.include({ ingested: 10, duplicates: 0 });
        expect(await loaded('20')).to.deep.equal({ n: '20', ids: '10' });
      } finally {
        for (const s of [a, b]) s.child.kill('SIGTERM');
        await Promise.all([a.exited, b.exited]);
        await client.command({ query: `DROP DATABASE IF EXISTS ${database}` }).catch(() => undefined);
      }
    });
  });
});
