/**
 * Attacks on the BI interface with one team's read key, against the service run as a user runs
 * it (its own process, environment and data directory). A canary secret sits in a file and in the
 * service's environment, as the bootstrap key does; every route to files the interface had
 * (scalar and table file(), filesystem*, template and schema formats and settings, INTO OUTFILE in
 * every kind of statement, parameters and built paths) is tried, and none may show the canary or
 * the bootstrap key in any answer, header or error, or leave a file in a watched folder.
 */
import { expect } from 'chai';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { forbiddenThings, grammarCorpus } from '../helpers/bi-corpus.js';
import { callWithKey, startService, tempDir, type RunningService } from '../helpers/processes.js';

interface Attack {
  sql: string;
  /** URL parameters: settings, parameters, default_format. */
  params?: Record<string, string>;
  headers?: Record<string, string>;
  /** Sent as GET ?query= instead of a POST body. */
  get?: boolean;
}

describe('BI interface under attack: a read key reaches no file, no environment, no other team', function () {
  this.timeout(180_000);
  const canary = `canary-${crypto.randomBytes(12).toString('hex')}`;
  const bootstrapKey = `ss_${crypto.randomBytes(32).toString('base64url')}`;
  let service: RunningService;
  let dataDir: string;
  let watched: string;
  let canaryFile: string;
  let readKey: string;

  before(async () => {
    dataDir = tempDir('attack-data');
    watched = tempDir('attack-watched');
    canaryFile = path.join(tempDir('attack-canary'), 'secret.txt');
    fs.writeFileSync(canaryFile, `${canary}\n`);
    service = await startService({ DATA_DIR: dataDir, BOOTSTRAP_API_KEY: bootstrapKey, SPENDSCOPE_ATTACK_CANARY: canary, BI_MAX_EXECUTION_TIME_S: '10' });
    const team = await callWithKey(service.baseUrl, bootstrapKey, 'POST', '/api/v1/teams', { name: 'attacker' }).catch(() => undefined);
    // A read key of the bootstrap team would do as well: the point is what a read key can reach.
    const key = await callWithKey(service.baseUrl, team?.status === 201 ? team.body.apiKey : bootstrapKey, 'POST', '/api/v1/keys', { name: 'bi', scopes: ['read'] });
    expect(key.status, JSON.stringify(key.body)).to.equal(201);
    readKey = key.body.apiKey;
    // The service's own answer shows it is reachable with that key before any attack.
    const ok = await query({ sql: 'SELECT count() FROM events' });
    expect(ok.status, ok.body).to.equal(200);
  });

  after(async () => {
    service?.child.kill('SIGTERM');
    await service?.exited;
    for (const dir of [dataDir, watched, path.dirname(canaryFile)]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  async function query(attack: Attack): Promise<{ status: number; code: string | null; headers: string; body: string }> {
    const url = new URL(`${service.baseUrl}/clickhouse/`);
    for (const [name, value] of Object.entries(attack.params ?? {})) url.searchParams.set(name, value);
    if (attack.get) url.searchParams.set('query', attack.sql);
    const res = await fetch(url, {
      method: attack.get ? 'GET' : 'POST',
      headers: { 'X-ClickHouse-User': 'mallory', 'X-ClickHouse-Key': readKey, ...attack.headers },
      body: attack.get ? undefined : attack.sql,
    });
    const body = await res.text();
    return { status: res.status, code: res.headers.get('x-clickhouse-exception-code'), headers: JSON.stringify([...res.headers]), body };
  }

  /** Sends each attack; each must be refused with a ClickHouse error and show nothing secret. */
  async function refuseAll(attacks: Attack[], codes: string[] = ['497', '164']): Promise<void> {
    const before = fs.readdirSync(dataDir).sort();
    for (const attack of attacks) {
      const answer = await query(attack);
      const what = `${attack.sql} ${JSON.stringify(attack.params ?? {})}`;
      for (const secret of [canary, bootstrapKey, 'SPENDSCOPE_ATTACK_CANARY', 'BOOTSTRAP_API_KEY']) {
        expect(answer.body, `${what} showed ${secret}`).not.to.include(secret);
        expect(answer.headers, `${what} showed ${secret} in a header`).not.to.include(secret);
      }
      expect(answer.status, `${what} was not refused: ${answer.body.slice(0, 300)}`).not.to.equal(200);
      expect(codes, `${what}: ${answer.body.slice(0, 300)}`).to.include(answer.code);
      expect(fs.readdirSync(watched), `${what} wrote a file`).to.deep.equal([]);
    }
    expect(fs.readdirSync(dataDir).sort(), 'files of the data directory').to.deep.equal(before);
  }

  it('scalar file(): direct, nested in scalar subqueries, CTEs, lambdas and APPLY, from parameters and built paths, in error text', async () => {
    const f = canaryFile;
    await refuseAll([
      { sql: `SELECT file('${f}')` },
      { sql: `SELECT FILE('${f}')` },
      { sql: "SELECT arrayJoin(splitByChar('\\0', file('/proc/self/environ')))" },
      { sql: `SELECT (SELECT file('${f}'))` },
      { sql: `SELECT (SELECT groupArray(file('${f}')) FROM numbers(1))` },
      { sql: `WITH (SELECT file('/proc/self/environ')) AS e SELECT e` },
      { sql: `WITH x AS (SELECT file('${f}') AS s) SELECT * FROM x` },
      { sql: 'SELECT file({p:String})', params: { param_p: f } },
      { sql: "SELECT file(concat('/proc/self/', 'environ'))" },
      { sql: `SELECT file(concat('${path.dirname(f)}', '/', 'secret.txt'))` },
      { sql: `SELECT throwIf(1, file('${f}'))` },
      { sql: `SELECT count() FROM events WHERE agent_id = file('${f}')` },
      { sql: `SELECT arrayMap(x -> file(x), ['${f}'])` },
      { sql: `SELECT * APPLY(file) FROM (SELECT '${f}' AS p)` },
      { sql: `SELECT 1 FROM numbers(1) WHERE file('${f}') != ''` },
      { sql: `SELECT count() FROM events WHERE agent_id IN (SELECT file('${f}'))` },
      { sql: `EXPLAIN SYNTAX SELECT file('${f}')` },
      { sql: `EXPLAIN PLAN SELECT (SELECT file('${f}'))` },
      { sql: `SELECT file('${f}')`, get: true },
      { sql: 'SELECT filesystemAvailable(), filesystemCapacity(), filesystemUnreserved()' },
      { sql: "SELECT getSetting('additional_table_filters')" },
      { sql: "SELECT hostName(), uptime(), getMacro('replica')" },
      { sql: "SELECT dictGet('d', 'x', 1)" },
      { sql: "SELECT joinGet('spendscope.events', 'id', 'x')" },
      { sql: "SELECT hasColumnInTable('system', 'users', 'name')" },
      { sql: "SELECT addressToSymbol(toUInt64(1)), demangle('x')" },
      { sql: "SELECT catboostEvaluate('/tmp/model.bin', 1)" },
      { sql: "SELECT aiGenerate('hello')" },
      { sql: 'SELECT sleep(1)' },
    ]);
  });

  it("SHOW TABLES WHERE file(…), and every kind of statement at every place with the environment's file: no secret in any answer", async () => {
    await refuseAll([{ sql: "SHOW TABLES WHERE name = 'events' AND toInt32(file('/proc/self/environ')) > 0" }], ['497']);
    const [environ] = forbiddenThings('/proc/self/environ');
    await refuseAll(
      grammarCorpus([environ!]).map(({ sql, params }) => ({ sql, ...(params ? { params } : {}) })),
      ['497'],
    );
  });

  it('table functions that read files, the network or processes, whatever the nesting', async () => {
    const f = canaryFile;
    await refuseAll([
      { sql: `SELECT * FROM file('${f}', 'LineAsString')` },
      { sql: `SELECT * FROM file('${f}', 'RawBLOB')` },
      { sql: `SELECT * FROM numbers(1) JOIN file('${f}', 'LineAsString') AS x ON 1` },
      { sql: `SELECT count() FROM events WHERE agent_id IN (SELECT * FROM file('${f}', 'LineAsString'))` },
      { sql: `WITH x AS (SELECT * FROM file('${f}', 'LineAsString')) SELECT * FROM x` },
      { sql: `SELECT (SELECT * FROM file('${f}', 'LineAsString'))` },
      { sql: "SELECT * FROM filesystem('/tmp')" },
      { sql: "SELECT * FROM url('http://127.0.0.1:1/', 'RawBLOB')" },
      { sql: "SELECT * FROM s3('http://127.0.0.1:1/x.csv')" },
      { sql: "SELECT * FROM hdfs('hdfs://127.0.0.1:1/x', 'TSV')" },
      { sql: "SELECT * FROM executable('cat /proc/self/environ', 'RawBLOB', 'x String')" },
      { sql: "SELECT * FROM mysql('127.0.0.1:1', 'db', 't', 'u', 'p')" },
      { sql: "SELECT * FROM remote('127.0.0.1', system.one)" },
      { sql: "SELECT * FROM merge('system', 'users')" },
      { sql: "SELECT * FROM format(CSV, 'a\\n')" },
      { sql: 'SELECT * FROM input()' },
      { sql: 'SELECT * FROM system.users' },
      { sql: 'SELECT * FROM system.processes' },
      { sql: 'SELECT * FROM {t:Identifier}', params: { param_t: 'system.users' } },
      { sql: 'SELECT count() FROM events WHERE id IN (SELECT query FROM {t:Identifier})', params: { param_t: 'system.processes' } },
    ]);
    // A function's name cannot come from a parameter: the parser refuses it.
    await refuseAll([{ sql: `SELECT * FROM {f:Identifier}('${f}', 'LineAsString')`, params: { param_f: 'file' } }], ['62']);
  });

  it('formats and settings that name files: template, schema and output schema, as URL settings, headers and SETTINGS clauses', async () => {
    const f = canaryFile;
    await refuseAll(
      [
        { sql: 'SELECT 1', params: { default_format: 'Template', format_template_resultset: f } },
        { sql: 'SELECT 1 FORMAT Template', params: { format_template_row: f } },
        { sql: `SELECT 1 FORMAT Template SETTINGS format_template_row = '${f}'` },
        { sql: 'SELECT 1', params: { format_template_resultset: f } },
        { sql: 'SELECT 1', params: { format_template_row: f } },
        { sql: 'SELECT 1', headers: { 'X-ClickHouse-Format': 'Template' }, params: { format_template_row: f } },
        { sql: 'SELECT 1 FORMAT Protobuf', params: { format_schema: `${f}:Message` } },
        { sql: 'SELECT 1 FORMAT CapnProto', params: { format_schema: `${f}:Message` } },
        { sql: 'SELECT 1', params: { format_schema: `${f}:Message` } },
        { sql: 'SELECT 1 AS x FORMAT CapnProto', params: { output_format_schema: path.join(watched, 'schema.capnp') } },
        { sql: 'SELECT 1', params: { output_format_schema: path.join(watched, 'schema.capnp') } },
        { sql: 'SELECT 1', params: { format_schema_source: 'query' } },
        { sql: 'SELECT 1', params: { format_display_secrets_in_show_and_select: '1' } },
        { sql: 'SELECT 1', params: { format_avro_schema_registry_url: 'http://127.0.0.1:1/' } },
        { sql: "SELECT formatRow('Template', 1)" },
      ],
      ['497', '164', '73'],
    );
  });

  it('INTO OUTFILE in every kind of statement, however it is written, writes nothing', async () => {
    let n = 0;
    const out = () => path.join(watched, `out-${++n}`);
    await refuseAll(
    [
      { sql: `SELECT 1 INTO OUTFILE '${out()}'` },
      { sql: `SELECT 1 INTO OUTFILE '${out()}' TRUNCATE` },
      { sql: `SELECT 1 INTO OUTFILE '${out()}' APPEND` },
      { sql: `SELECT 1 INTO OUTFILE '${out()}' AND STDOUT` },
      { sql: `select 1 into outfile '${out()}'` },
      { sql: `SELECT 1 INTO/**/OUTFILE '${out()}'` },
      { sql: `SELECT 1 INTO -- x\nOUTFILE '${out()}'` },
      { sql: `(SELECT 1) INTO OUTFILE '${out()}'` },
      { sql: `SELECT 1 UNION ALL SELECT 2 INTO OUTFILE '${out()}'` },
      { sql: `WITH 1 AS x SELECT x INTO OUTFILE '${out()}'` },
      { sql: `SELECT count() FROM events INTO OUTFILE '${out()}' FORMAT CSV` },
      { sql: `SHOW DATABASES INTO OUTFILE '${out()}' TRUNCATE` },
      { sql: `SHOW TABLES INTO OUTFILE '${out()}'` },
      { sql: `SHOW CREATE TABLE events INTO OUTFILE '${out()}'` },
      { sql: `DESCRIBE events INTO OUTFILE '${out()}'` },
      { sql: `EXISTS events INTO OUTFILE '${out()}'` },
      { sql: `EXPLAIN SYNTAX SELECT 1 INTO OUTFILE '${out()}'` },
      { sql: `EXPLAIN AST SELECT 1 INTO OUTFILE '${out()}'` },
      { sql: `EXPLAIN SELECT 1 INTO OUTFILE '${out()}'` },
      { sql: `SELECT 1 INTO OUTFILE '${out()}'`, get: true },
      { sql: `INSERT INTO FUNCTION file('${out()}', 'CSV') SELECT 1` },
      { sql: `SELECT 1 INTO OUTFILE {p:String}`, params: { param_p: out() } },
      { sql: `SELECT 1 INTO OUTFILE '${path.join(dataDir, 'registry.db')}' TRUNCATE` },
    ],
    // A placeholder is no file name to the parser: a syntax error, which is a refusal too.
    ['497', '164', '62']);
  });

  it('INSERT FROM INFILE and binary INSERT bodies: no file read, none written (only the test endpoint takes binary data)', async () => {
    await refuseAll([
      { sql: `INSERT INTO events (team_id, id) FROM INFILE '${canaryFile}' FORMAT CSV` },
      { sql: `INSERT INTO events (team_id) FROM INFILE '${canaryFile}' FORMAT RowBinary` },
      { sql: `INSERT INTO FUNCTION file('${path.join(watched, 'x.bin')}', 'RowBinary') FROM INFILE '${canaryFile}' FORMAT RowBinary` },
      // The statement in the URL, bytes as the body: read as text here, refused as the INSERT it is.
      { sql: '\u0005hello\u0000\u0001', params: { query: 'INSERT INTO events (team_id) FORMAT RowBinary' } },
      { sql: '\u0005hello', params: { query: 'INSERT INTO events (team_id) FORMAT Native' } },
    ], ['497', '164', '62']);
  });

  it('what a read key may do still works: its rows, catalog reads, allowed formats and settings', async () => {
    const allowed: Attack[] = [
      { sql: 'SELECT count() AS n, toString(sum(amount)) FROM events FORMAT JSON' },
      { sql: "SELECT sumIf(amount, amount > 0), uniqExact(agent_id), COUNT(*), countDistinct(id), quantilesTiming(0.5)(1) FROM events" },
      { sql: 'SELECT arrayMap(x -> x * 2, [1, 2]), toStartOfHour(now()), version(), currentDatabase(), formatQuery(\'select 1\')' },
      { sql: 'SHOW TABLES' },
      { sql: 'DESCRIBE TABLE events FORMAT JSON' },
      { sql: "SELECT name FROM system.tables WHERE database = currentDatabase()" },
      { sql: 'SELECT 1', params: { output_format_json_quote_64bit_integers: '0', default_format: 'JSONCompact' } },
      { sql: 'SELECT 1', params: { http_write_exception_in_output_format: '0', max_threads: '1' } },
      { sql: 'SELECT {s:String} AS s', params: { param_s: 'hello' } },
    ];
    for (const attack of allowed) {
      const answer = await query(attack);
      expect(answer.status, `${attack.sql}: ${answer.body.slice(0, 300)}`).to.equal(200);
    }
  });

  it('as a server would: invalid SQL is 62, an unknown setting 115, a setting changed 164, an unknown format 73', async () => {
    expect((await query({ sql: 'foobar' })).code).to.equal('62');
    expect((await query({ sql: 'SELECT 1', params: { foobar: '1' } })).code).to.equal('115');
    expect((await query({ sql: 'SELECT 1', params: { join_use_nulls: '1' } })).code).to.equal('164');
    expect((await query({ sql: 'SELECT 1', params: { default_format: 'NoSuchFormat' } })).code).to.equal('73');
    expect((await query({ sql: 'INSERT INTO events (id) VALUES (1)' })).code).to.equal('164');
  });
});
