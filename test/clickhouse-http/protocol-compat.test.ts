/**
 * The BI interface answers as a ClickHouse 26.7 server does, so that clients cannot tell it apart
 * (within read-only): aborted streams free their slot, parameters are read as a server reads
 * them, the result is labelled with its own format, multipart requests are forms, and an error in
 * the middle of a stream carries the server's exception block.
 */
import http from 'node:http';
import { expect } from 'chai';
import { ClickHouseLogLevel, createClient, TupleParam, type ClickHouseClient } from '@clickhouse/client';
import { startBiServer, teamScopedInterface } from '../../src/clickhouse-http/interface.js';
import type { Team } from '../helpers/common.js';
import { newTeam, testEnv } from '../helpers/context.js';

describe('ClickHouse HTTP interface: what a client sees is a 26.7 server', function () {
  this.timeout(120_000);
  let bi: Awaited<ReturnType<typeof startBiServer>>;
  let url: string;
  let team: Team;
  const clients: ClickHouseClient[] = [];
  const client = () => {
    const c = createClient({ url, username: 'grafana', password: team.apiKey, log: { level: ClickHouseLogLevel.OFF } });
    clients.push(c);
    return c;
  };
  const auth = () => ({ 'X-ClickHouse-User': 'bi', 'X-ClickHouse-Key': team.apiKey });
  const one = async <T>(c: ClickHouseClient, query: string, params?: Record<string, unknown>) =>
    ((await (await c.query({ query, query_params: params, format: 'JSONEachRow' })).json<T>())[0] as T);

  before(async () => {
    const { config, deps } = testEnv();
    // The time limit is not what these tests look at: a slow hour must not turn a size bound's refusal into a timeout.
    const limits = { ...config.bi.limits, maxExecutionSeconds: 30 };
    const handler = teamScopedInterface({ config: { ...config, bi: { ...config.bi, limits } }, db: deps.db, events: deps.events, rateLimiter: deps.rateLimiter });
    bi = await startBiServer(handler!, config, 0);
    url = `http://127.0.0.1:${bi.port}`;
    team = await newTeam('bi-compat');
  });

  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await bi?.close();
  });

  /** Starts an endless streamed query, reads nothing more once the answer starts, and cuts the connection. */
  async function abortedStream(): Promise<number> {
    return new Promise((resolve, reject) => {
      const req = http.request(`${url}/?default_format=TabSeparated`, { method: 'POST', headers: auth() }, (res) => {
        res.pause();
        // Long enough for the server's socket buffers to fill and its writes to wait for a drain.
        setTimeout(() => {
          req.destroy();
          resolve(res.statusCode ?? 0);
        }, 300);
      });
      req.on('error', () => undefined);
      req.on('timeout', reject);
      req.end('SELECT number FROM numbers(1e12)');
    });
  }

  /** The whole of an answer whose connection may be cut, as far as it came. */
  function cutAnswer(target: string, body: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer; complete: boolean }> {
    return new Promise((resolve, reject) => {
      const req = http.request(target, { method: 'POST', headers: auth() }, (res) => {
        const chunks: Buffer[] = [];
        let complete = false;
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => (complete = res.complete));
        res.on('error', () => undefined);
        res.on('close', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), complete }));
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  it('a client that goes away mid-stream releases its slot at once: aborting more streams than the per-key limit locks nothing out', async () => {
    const limit = testEnv().config.bi.limits.concurrentQueriesPerKey;
    for (let i = 0; i < limit + 2; i++) expect(await abortedStream(), `stream ${i + 1}`).to.equal(200);
    const started = Date.now();
    expect(await one(client(), 'SELECT 1 AS n')).to.deep.equal({ n: 1 });
    expect(Date.now() - started, 'ms to answer').to.be.below(5_000);
  });

  it('reads param_ values as a server does, in the escaped text form of their type (quotes, backslashes, tabs, newlines, NULL, arrays, tuples, maps, Enum)', async () => {
    const c = client();
    const odd = "it's \\ a\ttab\nand 'quotes'";
    expect(await one(c, 'SELECT {s:String} AS s', { s: odd })).to.deep.equal({ s: odd });
    expect(await one(c, 'SELECT {x:Nullable(String)} AS x, isNull({x:Nullable(String)}) AS missing', { x: null })).to.deep.equal({ x: null, missing: 1 });
    expect(await one(c, 'SELECT {a:Array(String)} AS a', { a: ["it's", 'b\\c', 'd\te'] })).to.deep.equal({ a: ["it's", 'b\\c', 'd\te'] });
    expect(await one(c, 'SELECT {t:Tuple(String, UInt8)} AS t', { t: new TupleParam(["x'y", 1]) })).to.deep.equal({ t: ["x'y", 1] });
    expect(await one(c, 'SELECT {m:Map(String, String)} AS m', { m: new Map([["k'1", "v'1"]]) })).to.deep.equal({ m: { "k'1": "v'1" } });
    expect(await one(c, "SELECT {e:Enum('it''s' = 1, 'b' = 2)} AS e", { e: "it's" })).to.deep.equal({ e: "it's" });
    // The raw form a server documents: `\'` in the URL is a quote.
    const raw = await fetch(`${url}/?param_s=co%5C%27n&param_n=%5CN&query=${encodeURIComponent('SELECT {s:String} AS s, {n:Nullable(UInt8)} AS n FORMAT TSV')}`, { headers: auth() });
    expect(await raw.text()).to.equal("co\\'n\t\\N\n");
    // Each request's values are its own, however many run at once.
    const limit = testEnv().config.bi.limits.concurrentQueriesPerKey;
    const values = await Promise.all(Array.from({ length: limit }, (_, i) => one<{ v: string }>(client(), 'SELECT {v:String} AS v', { v: `v'${i}` })));
    expect(values.map((r) => r.v)).to.deep.equal(Array.from({ length: limit }, (_, i) => `v'${i}`));
  });

  it("labels the result with the statement's own FORMAT: Content-Type and X-ClickHouse-Format as the server's output format declares them", async () => {
    const cases: [string, string, string][] = [
      ['SELECT 42', 'TabSeparated', 'text/tab-separated-values; charset=UTF-8'],
      ['SELECT 42 FORMAT CSV', 'CSV', 'text/csv; charset=UTF-8; header=absent'],
      ['SELECT 42 AS n FORMAT CSVWithNames', 'CSVWithNames', 'text/csv; charset=UTF-8; header=present'],
      ['SELECT 42 AS n FORMAT JSON', 'JSON', 'application/json; charset=UTF-8'],
      ['SELECT 42 AS n FORMAT JSONEachRow', 'JSONEachRow', 'application/x-ndjson; charset=UTF-8'],
      ['SELECT 42 AS n FORMAT JSONCompactEachRow', 'JSONCompactEachRow', 'text/plain; charset=UTF-8'],
      ["SELECT 'FORMAT CSV' AS n /* FORMAT JSON */ FORMAT TSV SETTINGS max_threads = 1", 'TSV', 'text/tab-separated-values; charset=UTF-8'],
      ['SELECT 42 AS n FORMAT Parquet', 'Parquet', 'application/octet-stream'],
    ];
    for (const [query, format, type] of cases) {
      const res = await fetch(url, { method: 'POST', headers: auth(), body: query });
      if (res.status !== 200) expect.fail(`${query}: ${res.status} ${await res.text()}`);
      expect(res.headers.get('x-clickhouse-format'), query).to.equal(format);
      expect(res.headers.get('content-type'), query).to.equal(type);
      await res.arrayBuffer();
    }
    const rs = await client().query({ query: 'SELECT 1 AS n', format: 'JSONEachRow' });
    expect(rs.response_headers['content-type']).to.equal('application/x-ndjson; charset=UTF-8');
    await rs.json();
  });

  it('a JSON document carries rows_before_limit_at_least of its whole run, and no statistics (rows read count other teams\' rows); one past its size bound is refused, a stream is not', async () => {
    const c = client();
    const doc = await (await c.query({ query: 'SELECT number FROM numbers(1000) WHERE number % 2 = 0 LIMIT 10', format: 'JSON' })).json<{
      rows: number;
      rows_before_limit_at_least: number;
      statistics: { elapsed: number; rows_read: number; bytes_read: number };
      data: unknown[];
    }>();
    expect(doc.rows).to.equal(10);
    expect(doc.rows_before_limit_at_least).to.be.at.least(10);
    expect(doc.statistics, 'statistics').to.equal(undefined);
    // A document is answered whole, so it is bounded (300 MB of result here); the same rows stream in another format.
    const big = "SELECT number, concat(toString(number), repeat('x', 1000)) AS padding FROM numbers(300000)";
    const refused = await c.query({ query: big, format: 'JSON' }).then(
      () => undefined,
      (err: { code?: string }) => err.code,
    );
    expect(refused).to.equal('396');
    const streamed = await fetch(`${url}/?default_format=Parquet`, { method: 'POST', headers: auth(), body: big });
    expect(streamed.status).to.equal(200);
    expect((await streamed.arrayBuffer()).byteLength).to.be.greaterThan(1000);
  });

  it('answers errors with the codes a readonly server user gets: invalid SQL 62, an unknown setting 115, a change 164; a setting at its value is taken', async () => {
    const c = client();
    const code = (query: string, settings: Record<string, string | number> = {}) =>
      c.query({ query, format: 'JSONEachRow', clickhouse_settings: settings }).then(
        (r) => r.json().then(() => 'ok'),
        (err: { code?: string }) => err.code,
      );
    expect(await code('foobar')).to.equal('62');
    expect(await code('SELECT 1', { foobar: 1 })).to.equal('115');
    expect(await code('SELECT 1', { join_use_nulls: 1 })).to.equal('164');
    expect(await code('SELECT 1', { http_write_exception_in_output_format: 0 })).to.equal('ok');
    expect(await code('SELECT 1', { output_format_json_quote_64bit_integers: 0 })).to.equal('ok');
    expect(await code('INSERT INTO events (id) VALUES (1)')).to.equal('164');
  });

  it('reads multipart/form-data as a form (query and param_ fields), as clients send large parameters; external data files are refused', async () => {
    const form = new FormData();
    form.append('query', 'SELECT {n:UInt8} + 1 AS n FORMAT TSV');
    form.append('param_n', '7');
    const res = await fetch(url, { method: 'POST', headers: auth(), body: form });
    expect(await res.text()).to.equal('8\n');
    // Large parameters: @clickhouse/client sends them as multipart/form-data when asked (use_multipart_params).
    const many = Array.from({ length: 800 }, (_, i) => `id-${i}'`);
    const rs = await client().query({ query: 'SELECT length({ids:Array(String)}) AS n, {ids:Array(String)}[800] AS last', query_params: { ids: many }, format: 'JSONEachRow', use_multipart_params: true });
    expect(await rs.json()).to.deep.equal([{ n: '800', last: "id-799'" }]);
    const withFile = new FormData();
    withFile.append('query', 'SELECT * FROM ext');
    withFile.append('ext', new Blob(['1\n2\n']), 'ext.tsv');
    const refused = await fetch(url, { method: 'POST', headers: auth(), body: withFile });
    expect(refused.status).to.equal(501);
    expect(refused.headers.get('x-clickhouse-exception-code')).to.equal('48');
    expect(await refused.text()).to.match(/^Code: 48\. DB::Exception: External data .*\(NOT_IMPLEMENTED\)/);
  });

  it("ends a stream that fails midway with the server's exception block, which @clickhouse/client reads as the engine's error", async () => {
    // Past the first blocks (so the answer has begun), well within the tests' 2 s time limit on a slow hour.
    const failing = "SELECT number, throwIf(number = 50000, 'boom') AS t FROM numbers(100000)";
    const err = await client()
      .query({ query: failing, format: 'JSONEachRow', clickhouse_settings: { max_block_size: '1000' } })
      .then((rs) => rs.json())
      .then(
        () => undefined,
        (e: { code?: string; type?: string; message: string }) => e,
      );
    expect(err, 'rejected').to.not.equal(undefined);
    expect(err).to.include({ code: '395', type: 'FUNCTION_THROW_IF_VALUE_IS_NON_ZERO' });
    expect(err!.message).to.match(/^boom/);
    // A JSON document is answered whole (for its statistics), so its failure is a plain error answer.
    const whole = await client()
      .query({ query: failing, format: 'JSON', clickhouse_settings: { max_block_size: '1000' } })
      .then((rs) => rs.json())
      .then(
        () => undefined,
        (e: { code?: string; type?: string }) => e,
      );
    expect(whole).to.include({ code: '395', type: 'FUNCTION_THROW_IF_VALUE_IS_NON_ZERO' });
    for (const format of ['JSONEachRow', 'TabSeparated']) {
      const { status, headers, body, complete } = await cutAnswer(`${url}/?default_format=${format}&max_block_size=1000`, failing);
      expect(status).to.equal(200);
      expect(complete, 'the chunked body ends without its last chunk').to.equal(false);
      const tag = String(headers['x-clickhouse-exception-tag']);
      expect(tag, format).to.match(/^[a-z0-9]{16}$/);
      const text = body.toString('utf8');
      const block = new RegExp(`\\r\\n__exception__\\r\\n${tag}\\r\\n(Code: 395\\. DB::Exception: boom[^]*\\n)(\\d+) ${tag}\\r\\n__exception__\\r\\n$`);
      const match = block.exec(text);
      expect(match, `${format}: ${text.slice(-300)}`).to.not.equal(null);
      expect(Number(match![2]), 'length of the message').to.equal(Buffer.byteLength(match![1]!));
    }
  });
});
