/**
 * A fuzz pass over the BI interface: 2,000 generated statements mixing every way of reaching data
 * (plain, joins, subqueries, UNION, CTEs, IN, scalar subqueries, FINAL, system tables, other
 * databases, table functions, settings overrides, writes, several statements, quoting tricks),
 * files (scalar and table file(), filesystem functions, template and schema formats and settings,
 * INTO OUTFILE, paths from parameters or built with concat), sent with team A's key. None may show
 * a row of team B or of another database or a canary file's secret, or write a file, and every
 * answer is a result or ClickHouse's own error answer.
 */
import { expect } from 'chai';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { startBiServer } from '../../src/clickhouse-http/interface.js';
import { api, loadedEvents, newTeam, testEnv } from '../helpers/context.js';
import { tempDir } from '../helpers/processes.js';

const STATEMENTS = 2_000;

/** A small deterministic generator, so a failure can be replayed. */
function generator(seed: number) {
  let state = seed;
  const next = () => ((state = (Math.imul(state, 1103515245) + 12345) >>> 0), state);
  return <T>(xs: readonly T[]): T => xs[next() % xs.length]!;
}

const SOURCES = [
  'events',
  'spendscope.events',
  'spendscope.events FINAL',
  'spend_minutely',
  'spendscope.spend_hourly_by',
  'spend_daily_by FINAL',
  'spendscope.schema_migrations',
  'system.tables',
  'system.columns',
  'system.databases',
  'system.one',
  'system.parts',
  'system.processes',
  'system.settings',
  'bi_other.secret',
  'numbers(3)',
  "merge('spendscope', '.*')",
  "merge('system', 'parts')",
  "merge(REGEXP('.*'), '.*')",
  "file('/etc/passwd', 'LineAsString')",
  "url('http://127.0.0.1:1/', 'TSV', 'a String')",
  "remote('127.0.0.1', spendscope.events)",
  "view(SELECT * FROM spendscope.events)",
  "mysql('127.0.0.1:1', 'db', 't', 'u', 'p')",
  "s3('http://127.0.0.1:1/x.csv')",
  "cluster('default', spendscope.events)",
  '(SELECT * FROM events)',
  '(SELECT * FROM bi_other.secret)',
];
/** Ways to a file: read in every shape below, as a source or a projection. */
const FILE_SOURCES = ["file('CANARY', 'RawBLOB')", "file({p:String}, 'LineAsString')", "(SELECT file('CANARY') AS team_id)", "filesystem('CANARY_DIR')"];
const PROJECTIONS = [
  '*',
  'team_id',
  'count()',
  'groupArray(team_id)',
  'any(team_id)',
  'toString(sum(amount))',
  'id',
  'name',
  'database',
];
const FILE_PROJECTIONS = [
  "file('CANARY')",
  'file({p:String})',
  "file(concat('CANARY_DIR', '/', 'secret.txt'))",
  "(SELECT file('CANARY'))",
  "arrayMap(x -> file(x), ['CANARY'])",
  "throwIf(1, file('CANARY'))",
  'filesystemCapacity()',
  "getSetting('additional_table_filters')",
];
const WRITES = [
  "INSERT INTO events (team_id, id) VALUES ('x', 'y')",
  'INSERT INTO events SELECT * FROM events',
  'ALTER TABLE events DELETE WHERE 1',
  'ALTER TABLE events UPDATE amount = 0 WHERE 1',
  'DROP TABLE events',
  'DROP DATABASE spendscope',
  'TRUNCATE TABLE events',
  'CREATE TABLE x (a Int8) ENGINE = Memory',
  'CREATE VIEW v AS SELECT * FROM events',
  'SET readonly = 0',
  "SET additional_table_filters = {'spendscope.events': '1'}",
  'OPTIMIZE TABLE events FINAL',
  'SYSTEM FLUSH LOGS',
  'KILL QUERY WHERE 1',
  'RENAME TABLE events TO e2',
  'DETACH TABLE events',
  'GRANT ALL ON *.* TO default',
  'USE bi_other',
];
const SUFFIXES = [
  '',
  '',
  '',
  ' FORMAT JSON',
  ' FORMAT CSV',
  ' FORMAT JSONEachRow',
  " SETTINGS additional_table_filters = {'spendscope.events': '1'}",
  ' SETTINGS readonly = 0',
  ' SETTINGS max_execution_time = 1',
  ' LIMIT 5',
  '; SELECT * FROM bi_other.secret',
  '; DROP TABLE events',
  ' -- ; SELECT * FROM system.parts',
  ' /* ; */',
  " INTO OUTFILE 'WATCHED/out'",
  " INTO OUTFILE 'WATCHED/out' TRUNCATE FORMAT CSV",
  ' INTO/**/OUTFILE {p:String}',
  ' FORMAT Template',
  ' FORMAT CapnProto',
  " SETTINGS format_template_row = 'CANARY'",
];
/** URL parameters sent with a statement: settings that name files, and a path as a parameter. */
const URL_PARAMETERS = [
  ...Array.from({ length: 16 }, () => ''),
  'param_p=CANARY',
  'format_template_row=CANARY',
  'format_template_resultset=CANARY&default_format=Template',
  'format_schema=CANARY:Message',
  'output_format_schema=WATCHED/schema.capnp',
  'default_format=Protobuf',
];

function statement(pick: ReturnType<typeof generator>): string {
  const s = () => pick(SOURCES);
  const p = () => pick(PROJECTIONS);
  const shape = pick([
    () => `SELECT ${p()} FROM ${s()}`,
    () => `SELECT * FROM ${s()} AS x, ${s()} AS y`,
    () => `SELECT ${p()} FROM ${s()} AS x JOIN ${s()} AS y USING team_id`,
    () => `SELECT ${p()} FROM (SELECT * FROM ${s()})`,
    () => `SELECT ${p()} FROM ${s()} UNION ALL SELECT ${p()} FROM ${s()}`,
    () => `WITH q AS (SELECT * FROM ${s()}) SELECT ${p()} FROM q`,
    () => `SELECT ${p()} FROM ${s()} WHERE team_id IN (SELECT team_id FROM ${s()})`,
    () => `SELECT (SELECT groupArray(team_id) FROM ${s()}) AS t`,
    () => `SELECT ';' AS x, ${p()} FROM ${s()}`,
    () => `SELECT '\\'; SELECT 1' AS x FROM ${s()}`,
    () => pick(WRITES),
    () => `SELECT ${pick(FILE_PROJECTIONS)} FROM ${s()}`,
    () => `SELECT ${p()} FROM ${pick(FILE_SOURCES)}`,
    () => `WITH q AS (SELECT ${pick(FILE_PROJECTIONS)} AS v) SELECT v FROM q`,
    () => `SELECT ${p()} FROM ${s()} WHERE team_id IN (SELECT ${pick(FILE_PROJECTIONS)})`,
    () => pick(['SHOW TABLES', 'SHOW TABLES FROM system', 'SHOW TABLES FROM bi_other', 'SHOW DATABASES', 'SHOW PROCESSLIST', 'SHOW CREATE TABLE events', 'SHOW CREATE TABLE bi_other.secret', 'SHOW COLUMNS FROM events', 'SHOW GRANTS', 'SHOW USERS']),
    () => pick(['DESCRIBE events', 'DESCRIBE TABLE bi_other.secret', 'DESC system.parts', 'EXISTS TABLE bi_other.secret', 'EXISTS events', `DESCRIBE (SELECT * FROM ${s()})`]),
    () => pick(['SHOW DATABASES', 'SHOW TABLES', 'DESCRIBE events', 'EXISTS events', 'SHOW CREATE TABLE events', 'EXPLAIN SYNTAX SELECT 1']) + " INTO OUTFILE 'WATCHED/out'",
    () => `EXPLAIN ${pick(['', 'AST ', 'SYNTAX ', 'PLAN ', 'PIPELINE ', 'ESTIMATE '])}SELECT ${p()} FROM ${s()}`,
  ]);
  return `${shape()}${pick(SUFFIXES)}`;
}

describe('BI interface fuzz pass', function () {
  this.timeout(600_000);

  it(`${STATEMENTS.toLocaleString('en-US')} generated statements: no row of another team or database, no 5xx but ClickHouse's error answers`, async () => {
    const { config, deps } = testEnv();
    const bi = await startBiServer(deps.clickhouseHttp!, config, 0);
    try {
      const a = await newTeam('fuzz-a');
      const b = await newTeam('fuzz-b');
      const now = Date.now();
      const send = (team: typeof a, agent: string, n: number) =>
        api()
          .post('/api/v1/events')
          .set(...team.auth)
          .send({ events: Array.from({ length: n }, (_, i) => ({ id: `${agent}-${i}`, agent_id: agent, endpoint: 'https://api.example.com/x', method: 'POST', amount: '0.25', created_at: now - i })) })
          .expect(200);
      await send(a, 'fuzz-a-bot', 5);
      await send(b, 'fuzz-b-bot', 5);
      await loadedEvents(a.teamId);
      await loadedEvents(b.teamId);
      await deps.events.command('CREATE DATABASE IF NOT EXISTS bi_other');
      await deps.events.command('CREATE TABLE IF NOT EXISTS bi_other.secret (team_id String) ENGINE = MergeTree ORDER BY team_id');
      await deps.events.command("INSERT INTO bi_other.secret VALUES ('other-database-secret')");

      const canary = `canary-${crypto.randomBytes(12).toString('hex')}`;
      const canaryDir = tempDir('fuzz-canary');
      const canaryFile = path.join(canaryDir, 'secret.txt');
      fs.writeFileSync(canaryFile, canary);
      const watched = tempDir('fuzz-watched');
      const place = (text: string) => text.replaceAll('CANARY_DIR', canaryDir).replaceAll('CANARY', canaryFile).replaceAll('WATCHED', watched);

      const pick = generator(20261123);
      const forbidden = [b.teamId, 'fuzz-b-bot', 'other-database-secret', canary];
      const outcomes = new Map<string, number>();
      for (let i = 0; i < STATEMENTS; i++) {
        const sql = place(statement(pick));
        const parameters = place(pick(URL_PARAMETERS));
        const res = await fetch(`http://127.0.0.1:${bi.port}/?${parameters}`, { method: 'POST', headers: { 'X-ClickHouse-User': 'fuzz', 'X-ClickHouse-Key': a.apiKey }, body: sql });
        const body = await res.text();
        const code = res.headers.get('x-clickhouse-exception-code');
        const outcome = res.status === 200 ? (/\nCode: \d+\. DB::Exception/.test(body) ? 'error mid-stream' : 'result') : `error ${code}`;
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
        if (res.status !== 200) expect(code, `${sql}: ${res.status} without a ClickHouse error code`).to.match(/^\d+$/);
        for (const secret of forbidden) expect(body, `${sql} ?${parameters} showed ${secret}`).not.to.include(secret);
        expect(fs.readdirSync(watched), `${sql} ?${parameters} wrote a file`).to.deep.equal([]);
        if (res.status === 200) expect(body, `${sql} listed another database`).not.to.match(/\bbi_other\b/);
      }
      // The pass exercised both sides: results (most shapes are meant to be refused), and refusals of each kind.
      expect(outcomes.get('result') ?? 0, JSON.stringify([...outcomes])).to.be.greaterThan(80);
      for (const refused of ['error 164', 'error 497', 'error 62']) expect(outcomes.get(refused) ?? 0, refused).to.be.greaterThan(20);
      fs.rmSync(canaryDir, { recursive: true, force: true });
      fs.rmSync(watched, { recursive: true, force: true });
    } finally {
      await bi.close();
    }
  });
});
