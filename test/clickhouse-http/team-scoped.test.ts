/**
 * ClickHouse's HTTP interface for BI tools, team-scoped: a read key sees its team's rows of the
 * spendscope database and nothing else, read-only, through real ClickHouse clients.
 */
import { expect } from 'chai';
import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import { startBiServer } from '../../src/clickhouse-http/interface.js';
import { singleStatement } from '../../src/clickhouse-http/statement.js';
import ClickHouse from '@apla/clickhouse';
import { keyWith, type Team } from '../helpers/common.js';
import { api, listenOnce, loadedEvents, newTeam, testEnv } from '../helpers/context.js';

describe('ClickHouse HTTP interface for BI tools, team-scoped', function () {
  this.timeout(120_000);
  let bi: Awaited<ReturnType<typeof startBiServer>>;
  let url: string;
  let teamA: Team;
  let teamB: Team;
  const clients: ClickHouseClient[] = [];

  const clientOf = (key: string) => {
    const client = createClient({ url, username: 'grafana', password: key, log: { level: ClickHouseLogLevel.OFF } });
    clients.push(client);
    return client;
  };
  const rows = async <T>(client: ClickHouseClient, query: string, params?: Record<string, unknown>) =>
    (await client.query({ query, query_params: params, format: 'JSONEachRow' })).json<T>();
  const failure = async (client: ClickHouseClient, query: string) => {
    try {
      await client.query({ query, format: 'JSONEachRow' }).then((r) => r.json());
    } catch (err) {
      return err as { code?: string; type?: string; message: string };
    }
    throw new Error(`not refused: ${query}`);
  };

  async function ingest(team: Team, agent: string, count: number, amount: string): Promise<void> {
    const now = Date.now();
    const events = Array.from({ length: count }, (_, i) => ({ id: `${agent}-${i}`, agent_id: agent, endpoint: 'https://api.example.com/v1/x', method: 'POST', amount, created_at: now - i * 1000 }));
    await api().post('/api/v1/events').set(...team.auth).send({ events }).expect(200);
    await loadedEvents(team.teamId);
  }

  before(async () => {
    const { config, deps } = testEnv();
    bi = await startBiServer(deps.clickhouseHttp!, config, 0);
    url = `http://127.0.0.1:${bi.port}`;
    // Another database in the same engine, as a second install or a test would have.
    await deps.events.command('CREATE DATABASE IF NOT EXISTS bi_other');
    await deps.events.command("CREATE TABLE IF NOT EXISTS bi_other.secret (team_id String) ENGINE = MergeTree ORDER BY team_id");
    teamA = await newTeam('bi-a');
    teamB = await newTeam('bi-b');
    await ingest(teamA, 'a-bot', 30, '1.5');
    await ingest(teamB, 'b-bot', 20, '2');
  });

  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await bi?.close();
  });

  it("each team sees only its own rows: plain, joins, subqueries, UNION, CTEs, rollups, FINAL", async () => {
    const a = clientOf(teamA.apiKey);
    const b = clientOf(teamB.apiKey);
    for (const [client, team, count, spend] of [
      [a, teamA, '30', '45'],
      [b, teamB, '20', '40'],
    ] as const) {
      expect(await rows(client, 'SELECT count() AS n, toString(sum(amount)) AS spend, groupUniqArray(team_id) AS teams FROM events')).to.deep.equal([{ n: count, spend, teams: [team.teamId] }]);
      expect(await rows(client, 'SELECT count() AS n FROM spendscope.events AS e JOIN (SELECT id FROM events) AS s USING id')).to.deep.equal([{ n: count }]);
      expect(await rows(client, 'SELECT count() AS n FROM (SELECT id FROM events UNION ALL SELECT id FROM spendscope.events)')).to.deep.equal([{ n: String(2 * Number(count)) }]);
      expect(await rows(client, 'WITH x AS (SELECT * FROM events) SELECT count() AS n FROM x WHERE id IN (SELECT id FROM events)')).to.deep.equal([{ n: count }]);
      const rollup = await rows<{ spend: string }>(client, "SELECT toString(sum(spend)) AS spend FROM spend_daily_by FINAL WHERE dimension = 'outcome'");
      expect(rollup).to.deep.equal([{ spend }]);
      const teams = await rows<{ t: string }>(client, 'SELECT DISTINCT team_id AS t FROM spend_minutely');
      expect(teams).to.deep.equal([{ t: team.teamId }]);
      expect(await rows(client, 'SELECT count() AS n FROM events WHERE agent_id = {agent:String}', { agent: 'a-bot' })).to.deep.equal([{ n: team === teamA ? '30' : '0' }]);
      // A qualified column left of IN, as BI tools write their filters, is a column: only the right side may name a table.
      expect(await rows(client, "SELECT count() AS n FROM events AS e WHERE e.agent_id IN ('a-bot', 'b-bot')")).to.deep.equal([{ n: count }]);
    }
  });

  it('a settings override of the filter, SET, writes and DDL are refused with ClickHouse codes', async () => {
    const a = clientOf(teamA.apiKey);
    const override = await failure(a, "SELECT count() FROM events SETTINGS additional_table_filters = {'spendscope.events': '1'}");
    expect(override, 'a setting not on the list, in a SETTINGS clause').to.include({ code: '497', type: 'ACCESS_DENIED' });
    const viaParam = await a.query({ query: 'SELECT 1', format: 'JSONEachRow', clickhouse_settings: { additional_table_filters: "{'spendscope.events':'1'}" } as never }).then(
      () => undefined,
      (err: { code?: string }) => err,
    );
    expect(viaParam).to.include({ code: '164' });
    for (const statement of ['INSERT INTO events (team_id, id) VALUES (1, 2)', 'ALTER TABLE events DELETE WHERE 1', 'DROP TABLE events', 'SET max_threads = 1', 'CREATE TABLE x (a Int8) ENGINE = Memory', 'TRUNCATE TABLE events']) {
      const err = await a.command({ query: statement }).then(
        () => undefined,
        (e: { code?: string; type?: string }) => e,
      );
      expect(err, statement).to.include({ code: '164', type: 'READONLY' });
    }
    expect((await rows(a, 'SELECT count() AS n FROM events'))[0]).to.deep.equal({ n: '30' });
  });

  it('system tables show only the spendscope database; other system tables, databases and table functions are refused', async () => {
    const a = clientOf(teamA.apiKey);
    const databases = await rows<{ name: string }>(a, 'SELECT name FROM system.databases');
    expect(databases).to.deep.equal([{ name: 'spendscope' }]);
    const tables = await rows<{ database: string }>(a, 'SELECT DISTINCT database FROM system.tables');
    expect(tables).to.deep.equal([{ database: 'spendscope' }]);
    const columns = await rows<{ database: string }>(a, 'SELECT DISTINCT database FROM system.columns');
    expect(columns).to.deep.equal([{ database: 'spendscope' }]);
    const shown = (await (await a.query({ query: 'SHOW TABLES', format: 'TabSeparated' })).text()).trim().split('\n');
    expect(shown).to.include('events');
    for (const query of [
      'SELECT * FROM system.parts',
      'SELECT * FROM system.processes',
      "SELECT * FROM merge('spendscope', '.*')",
      'SELECT (SELECT count() FROM system.parts)',
      // A scalar subquery the analyzer folds away before the plan (found by the fuzz pass).
      'SELECT (SELECT groupArray(team_id) FROM bi_other.secret)',
      'SELECT (SELECT groupArray(number) FROM numbers(3) WHERE number IN system.parts)',
      'SELECT 1 WHERE 1 IN (SELECT 1 FROM system.parts)',
      'SELECT count() FROM events AS e WHERE e.id IN system.parts',
      'SELECT * FROM bi_other.secret',
      'SHOW TABLES FROM bi_other',
      'SHOW PROCESSLIST',
      'DESCRIBE system.parts',
      "SELECT * FROM view(SELECT * FROM events)",
    ]) {
      expect(await failure(a, query), query).to.include({ code: '497', type: 'ACCESS_DENIED' });
    }
    for (const query of ["SELECT * FROM file('/etc/passwd', 'LineAsString')", "SELECT * FROM url('http://127.0.0.1:1/', 'TSV', 'a String')", "SELECT * FROM remote('127.0.0.1', system.one)"]) {
      const err = await failure(a, query);
      expect(['164', '497'], query).to.include(err.code);
    }
    expect(await rows(a, 'SELECT count() AS n FROM numbers(10)')).to.deep.equal([{ n: '10' }]);
  });

  it('SHOW, DESCRIBE, EXISTS, SHOW CREATE and EXPLAIN answer as a server does, of the database only', async () => {
    const a = clientOf(teamA.apiKey);
    const text = async (query: string) => (await (await a.query({ query, format: 'TabSeparated' })).text()).trim().split('\n');
    expect(await text("SHOW TABLES LIKE 'spend_d%'")).to.include('spend_daily_by');
    expect(await text("SHOW TABLES FROM spendscope WHERE name = 'events' LIMIT 1")).to.deep.equal(['events']);
    expect(await text('SHOW DATABASES')).to.deep.equal(['spendscope']);
    const columns = await rows<{ field: string; type: string; null: string }>(a, "SHOW COLUMNS FROM events WHERE field IN ('team_id', 'amount')");
    expect(columns.map((c) => c.field)).to.deep.equal(['amount', 'team_id']);
    expect(Object.keys((await rows(a, 'SHOW FULL COLUMNS IN spendscope.events LIMIT 1'))[0] as object)).to.deep.equal(['field', 'type', 'null', 'key', 'default', 'extra', 'collation', 'comment', 'privileges']);
    expect((await text('DESCRIBE TABLE events')).map((line) => line.split('\t')[0])).to.include('amount');
    expect(await text('EXISTS TABLE events')).to.deep.equal(['1']);
    expect((await text('SHOW CREATE TABLE events')).join('\n')).to.match(/^CREATE TABLE spendscope\.events/);
    for (const kind of ['AST', 'AST graph = 1', 'SYNTAX', 'QUERY TREE']) {
      const explained = await text(`EXPLAIN ${kind} SELECT count() FROM events WHERE agent_id = 'x'`);
      expect(explained.length, kind).to.be.greaterThan(0);
    }
    expect(await rows(a, "SELECT name, engine FROM system.tables WHERE name = 'events'")).to.deep.equal([{ name: 'events', engine: 'MergeTree' }]);
    // The engine reads `tx_hash IS NULL` as the subcolumn tx_hash.null of a declared column.
    expect(await rows(a, 'SELECT count() AS n FROM events WHERE tx_hash IS NULL AND isNotNull(agent_id)')).to.deep.equal([{ n: '30' }]);
    expect(await rows(a, "SELECT value FROM system.settings WHERE name = 'allow_introspection_functions'"), 'introspection off').to.deep.equal([{ value: '0' }]);
  });

  it("no figure of every team's data together: sizes in system tables, EXPLAIN's counts, parts and virtual columns are refused", async () => {
    const a = clientOf(teamA.apiKey);
    for (const query of [
      'SELECT total_rows FROM system.tables',
      "SELECT sum(total_bytes) FROM system.tables WHERE database = 'spendscope'",
      'SELECT * FROM system.tables',
      'SELECT t FROM (SELECT lifetime_rows AS t FROM system.tables)',
      'SELECT data_compressed_bytes FROM system.columns',
      'SELECT data_path FROM system.databases',
      'SHOW TABLES WHERE total_rows > 0',
      'EXPLAIN SELECT count() FROM events',
      'EXPLAIN PLAN header = 1 SELECT count() FROM events',
      'EXPLAIN indexes = 1 SELECT count() FROM events',
      'EXPLAIN actions = 1 SELECT count() FROM events',
      'EXPLAIN ESTIMATE SELECT count() FROM events',
      'EXPLAIN PIPELINE SELECT count() FROM events',
      'SELECT _part, _part_offset FROM events',
      'SELECT max(_block_number) FROM events',
    ]) {
      expect(await failure(a, query), query).to.include({ code: '497', type: 'ACCESS_DENIED' });
    }
    const json = await fetch(`${url}/?default_format=JSON`, { method: 'POST', headers: { 'X-ClickHouse-User': 'x', 'X-ClickHouse-Key': teamA.apiKey }, body: 'SELECT count() FROM events' });
    expect(JSON.parse(json.headers.get('x-clickhouse-summary')!)).to.include({ read_rows: '0', read_bytes: '0' });
    expect(await json.json()).not.to.have.property('statistics');
  });

  it("a condition is evaluated on the team's rows only: an error cannot show another team's values", async () => {
    // Two teams' records in one loader block, so in one part and one granule.
    const [mine, theirs] = [await newTeam('bi-oracle-a'), await newTeam('bi-oracle-b')];
    const now = Date.now();
    const send = (team: Team, agent: string) =>
      api().post('/api/v1/events').set(...team.auth).send({ events: Array.from({ length: 5 }, (_, i) => ({ id: `${agent}-${i}`, agent_id: agent, endpoint: 'https://victim.example.com/secret', method: 'POST', amount: '1', created_at: now - i })) }).expect(200);
    await Promise.all([send(mine, 'oracle-mine'), send(theirs, 'oracle-secret-agent')]);
    await loadedEvents(mine.teamId);
    await loadedEvents(theirs.teamId);
    const a = clientOf(mine.apiKey);
    for (const query of [
      "SELECT count() AS n FROM events WHERE toUInt32(if(agent_id = 'oracle-mine', '1', agent_id)) > 0",
      "SELECT count() AS n FROM events WHERE throwIf(agent_id = 'oracle-secret-agent') = 0",
      "SELECT count() AS n FROM events WHERE intDiv(1, agent_id = 'oracle-mine') > 0",
    ]) {
      const answer = await rows<{ n: string }>(a, query).catch((err: Error) => err);
      expect(String(answer instanceof Error ? answer.message : JSON.stringify(answer)), query).not.to.include('oracle-secret-agent');
      expect(answer, query).to.deep.equal([{ n: '5' }]);
    }
    expect(await failure(a, "SELECT count() FROM events PREWHERE throwIf(agent_id = 'oracle-secret-agent')")).to.include({ code: '497' });
  });

  it('aggregates named in strings and types, and table names bound by parameters, are checked as written ones', async () => {
    const a = clientOf(teamA.apiKey);
    expect(await rows(a, "SELECT arrayReduce('sumIf', [1, 2, 3], [1, 0, 1]) AS s")).to.deep.equal([{ s: '4' }]);
    for (const query of [
      "SELECT arrayReduce('groupFormat(\\'Npy\\')', [1]) AS x",
      "SELECT initializeAggregation('groupFormat(\\'JSONEachRow\\')', 1) AS x",
      "SELECT arrayReduce(concat('group', 'Format'), [1]) AS x",
      "SELECT CAST(NULL AS Nullable(AggregateFunction(groupFormat('Npy'), UInt8))) AS x",
    ]) {
      expect(await failure(a, query), query).to.include({ code: '497' });
    }
    const bound = await a.query({ query: 'EXISTS TABLE {t:Identifier}', query_params: { t: 'system.processes' }, format: 'JSONEachRow' }).then(
      () => undefined,
      (err: { code?: string }) => err,
    );
    expect(bound).to.include({ code: '497' });
    // As a server's max_query_size (256 KiB): read no further.
    const long = await failure(a, `SELECT '${'x'.repeat(300_000)}' AS s`);
    expect(long).to.include({ code: '62' });
    expect(long.message).to.match(/^Max query size exceeded/);
  });

  it('a wrong key, or one without read, is an authentication error; a query over its time limit stops', async () => {
    const wrong = await failure(clientOf('ss_not-a-key'), 'SELECT 1');
    expect(wrong).to.include({ code: '516', type: 'AUTHENTICATION_FAILED' });
    const raw = await fetch(`${url}/?query=SELECT+1`, { headers: { 'X-ClickHouse-User': 'x', 'X-ClickHouse-Key': 'wrong' } });
    expect(raw.status).to.equal(401);
    const { apiKey: ingestOnly } = await keyWith(teamA, { name: 'writer', scopes: ['ingest'] });
    expect(await failure(clientOf(ingestOnly), 'SELECT 1')).to.include({ code: '516' });
    const slow = await failure(clientOf(teamA.apiKey), 'SELECT count() FROM numbers(100000000000)');
    expect(slow).to.include({ code: '159', type: 'TIMEOUT_EXCEEDED' });
  });

  it('is served under /clickhouse on the main port too', async () => {
    const main = await listenOnce();
    try {
      const viaPath = createClient({ url: main.url, pathname: '/clickhouse', username: 'metabase', password: teamA.apiKey, log: { level: ClickHouseLogLevel.OFF } });
      clients.push(viaPath);
      expect(await rows(viaPath, 'SELECT count() AS n FROM events')).to.deep.equal([{ n: '30' }]);
      const ping = await fetch(`${main.url}/clickhouse/ping`);
      expect(await ping.text()).to.equal('Ok.\n');
      const refused = await fetch(`${main.url}/clickhouse/?query=SELECT+1`, { headers: { Authorization: `Basic ${Buffer.from('x:wrong').toString('base64')}` } });
      expect(refused.status).to.equal(401);
      expect(refused.headers.get('x-clickhouse-exception-code')).to.equal('516');
    } finally {
      await main.close();
    }
  });

  it('a second, independent client (@apla/clickhouse) sees the same: its rows, refusals as ClickHouse errors', async () => {
    const { port } = new URL(url);
    const other = new ClickHouse({ host: '127.0.0.1', port: Number(port), user: 'superset', password: teamB.apiKey, dataObjects: true });
    const result = await other.querying('SELECT team_id, count() AS n FROM events GROUP BY team_id');
    expect(result.data).to.deep.equal([{ team_id: teamB.teamId, n: '20' }]);
    const streamed: unknown[] = [];
    await new Promise<void>((resolve, reject) => {
      const stream = other.query('SELECT id FROM events ORDER BY id');
      stream.on('data', (row: unknown) => streamed.push(row));
      stream.on('error', reject);
      stream.on('end', () => resolve());
    });
    expect(streamed).to.have.length(20);
    const insert = await other.querying("INSERT INTO events (team_id) VALUES ('x')").then(
      () => undefined,
      (err: Error) => err,
    );
    expect(insert?.message).to.match(/Code: 164\b/);
    const system = await other.querying('SELECT * FROM system.parts').then(
      () => undefined,
      (err: Error) => err,
    );
    expect(system?.message).to.match(/Code: 497\b/);
  });

  it('streams a million rows of Parquet, and a large JSONEachRow export, chunk by chunk', async () => {
    const res = await fetch(`${url}/?default_format=Parquet`, {
      method: 'POST',
      headers: { 'X-ClickHouse-User': 'export', 'X-ClickHouse-Key': teamA.apiKey },
      body: 'SELECT number AS n, toString(number) AS s, toDecimal64(number, 6) AS amount FROM numbers(1000000)',
    });
    expect(res.status).to.equal(200);
    let chunks = 0;
    let bytes = 0;
    let head = Buffer.alloc(0);
    let tail = Buffer.alloc(0);
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      if (chunks === 0) head = Buffer.from(chunk.slice(0, 4));
      tail = Buffer.from(chunk.slice(-4));
      chunks++;
      bytes += chunk.length;
    }
    expect(head.toString()).to.equal('PAR1');
    expect(tail.toString()).to.equal('PAR1');
    expect(bytes).to.be.greaterThan(1_000_000);
    expect(chunks, 'chunks of the answer').to.be.greaterThan(2);
    const json = await clientOf(teamA.apiKey).query({ query: 'SELECT number FROM numbers(500000)', format: 'JSONEachRow' });
    let count = 0;
    for await (const batch of json.stream()) count += batch.length;
    expect(count).to.equal(500_000);
  });

  it('runs at most the configured number of queries of one key at once', async () => {
    const limit = testEnv().config.bi.limits.concurrentQueriesPerKey;
    const a = clientOf(teamA.apiKey);
    const outcomes = await Promise.all(
      Array.from({ length: limit + 3 }, () =>
        a.query({ query: 'SELECT sum(cityHash64(number)) FROM numbers(100000000)', format: 'JSONEachRow' }).then(
          (r) => r.json().then(() => 'ok'),
          (err: { code?: string }) => err.code,
        ),
      ),
    );
    expect(outcomes.filter((o) => o === 'ok')).to.have.length.of.at.least(1);
    expect(outcomes.filter((o) => o === '202').length + outcomes.filter((o) => o === 'ok').length).to.equal(limit + 3);
    expect(outcomes.filter((o) => o === '202')).to.have.length.of.at.least(1);
    // The other team's key is not held up by them.
    expect(await rows(clientOf(teamB.apiKey), 'SELECT count() AS n FROM events')).to.deep.equal([{ n: '20' }]);
  });

  it('finds the one statement of a query past strings and comments, and refuses two', () => {
    expect(singleStatement("SELECT ';' AS x; ")).to.equal("SELECT ';' AS x");
    expect(singleStatement('SELECT 1 -- ; no\n')).to.equal('SELECT 1 -- ; no\n');
    expect(singleStatement('SELECT `a;b` FROM t /* ; */')).to.equal('SELECT `a;b` FROM t /* ; */');
    expect(singleStatement("SELECT 'it\\'s;' ;")).to.equal("SELECT 'it\\'s;' ");
    for (const two of ['SELECT 1; SELECT 2', "SELECT ';'; DROP TABLE events", 'SELECT 1 /* x */; SELECT 2']) {
      expect(() => singleStatement(two), two).to.throw(/Multi-statements/);
    }
  });
});
