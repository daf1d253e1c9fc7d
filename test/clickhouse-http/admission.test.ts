/**
 * What BI queries may hold at once: a query is a request of its key's holder (a rotated key goes
 * on from its predecessor's bucket and running queries), bounded per holder, per team and for the
 * process, with a memory total each query's bound is carved from.
 */
import { expect } from 'chai';
import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import { startBiServer } from '../../src/clickhouse-http/interface.js';
import { serveClickHouseHttp } from '../../src/clickhouse-http/protocol.js';
import { BiAdmission } from '../../src/clickhouse-http/admission.js';
import { engineCatalog, TeamScopedPolicy, type BiLimits } from '../../src/clickhouse-http/team-policy.js';
import { RateLimiter } from '../../src/limits/rate-limiter.js';
import { bearer, keyWith, sleep, type KeyOptions, type Team } from '../helpers/common.js';
import { api, appWith, newTeam, testEnv } from '../helpers/context.js';

const MiB = 1024 ** 2;
/** Runs until its time limit (the test env's 2 s) or until cancelled: it holds its place meanwhile. */
const LONG = "SELECT sum(cityHash64(number)) FROM numbers(1000000000000)";

describe('BI admission: holders, teams, the process and memory', function () {
  this.timeout(60_000);
  const clients: ClickHouseClient[] = [];
  const servers: { close(): Promise<void> }[] = [];

  /** A BI server over the run's engine with these limits (the run's own for the rest). */
  async function biWith(limits: Partial<BiLimits> = {}, rateLimiter?: RateLimiter): Promise<string> {
    const { config, deps } = testEnv();
    if (config.clickhouse.mode !== 'embedded') throw new Error('the BI interface serves the embedded engine');
    const { path: enginePath, database } = config.clickhouse;
    const policy = new TeamScopedPolicy(deps.db, rateLimiter ?? deps.rateLimiter, database, { ...config.bi.limits, ...limits }, engineCatalog((sql, params) => deps.events.query(sql, params), database));
    const bi = await startBiServer((req, res) => void serveClickHouseHttp(req, res, { enginePath, policy, maxBodyBytes: config.maxBodyBytes }), config, 0);
    servers.push(bi);
    return `http://127.0.0.1:${bi.port}`;
  }

  const clientOf = (url: string, key: string) => {
    const client = createClient({ url, password: key, log: { level: ClickHouseLogLevel.OFF }, request_timeout: 30_000 });
    clients.push(client);
    return client;
  };

  /** The outcome of one query: 'ok' or ClickHouse's error code. */
  const outcome = (client: ClickHouseClient, query: string) =>
    client.query({ query, format: 'JSONEachRow' }).then(
      (r) => r.json().then(() => 'ok'),
      (err: { code?: string }) => err.code ?? 'no code',
    );

  /** Starts a long query and resolves once the server holds its place, with the query's outcome to come (wrapped: an async function would wait for it). */
  async function hold(client: ClickHouseClient): Promise<{ done: Promise<string> }> {
    const done = outcome(client, LONG);
    await sleep(300);
    return { done };
  }
  const ended = (held: { done: Promise<string> }[]) => Promise.all(held.map((h) => h.done));

  const readKey = async (team: Team, rateLimit?: KeyOptions['rateLimit']): Promise<string> => (await keyWith(team, { name: 'bi', scopes: ['read'], rateLimit })).apiKey;

  async function rotate(key: string, app = testEnv().app): Promise<string> {
    const res = await api(app).post('/api/v1/team/rotate-key').set(...bearer(key)).expect(200);
    return res.body.apiKey;
  }

  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await Promise.all(servers.map((s) => s.close()));
  });

  it('a BI query is a request of the key: counted in its bucket (201 QUOTA_EXCEEDED past it), and a rotated key goes on from it', async () => {
    // One limiter for the BI server and the API, on a clock the test moves: the bucket refills when it says.
    const clock = { now: Date.now() };
    const limiter = new RateLimiter(testEnv().config.rateLimits, () => clock.now);
    const url = await biWith({}, limiter);
    const app = appWith([], { rateLimiter: limiter });
    const team = await newTeam('bi-rate');
    const key = await readKey(team, { requests_per_second: 2 });
    const first = clientOf(url, key);
    expect(await outcome(first, 'SELECT 1')).to.equal('ok');
    // The REST API draws on the same bucket: its second token.
    await api(app).get('/api/v1/team').set(...bearer(key)).expect(200);
    expect(await outcome(first, 'SELECT 1')).to.equal('201');
    clock.now += 1_100;
    const rotated = await rotate(key, app); // a request: one of the two tokens refilled
    const second = clientOf(url, rotated);
    expect(await outcome(second, 'SELECT 1')).to.equal('ok');
    expect(await outcome(second, 'SELECT 1'), 'the rotated key has no fresh bucket').to.equal('201');
  });

  it('running queries belong to the holder: a rotated key does not get fresh places', async () => {
    const url = await biWith({ concurrentQueriesPerKey: 2, concurrentQueries: 6, maxMemoryBytes: 256 * MiB, totalMemoryBytes: 4096 * MiB });
    const team = await newTeam('bi-holder');
    const key = await readKey(team);
    const old = clientOf(url, key);
    const running = [await hold(old), await hold(old)];
    const rotated = clientOf(url, await rotate(key));
    expect(await outcome(rotated, 'SELECT 1')).to.equal('202');
    // Another key of the team is another holder.
    expect(await outcome(clientOf(url, await readKey(team)), 'SELECT 1')).to.equal('ok');
    expect(await ended(running)).to.deep.equal(['159', '159']);
    expect(await outcome(rotated, 'SELECT 1'), 'places given back when the queries end').to.equal('ok');
  });

  it("a team holds at most half the places, whatever its keys and BI_CONCURRENT_QUERIES_PER_TEAM: another team's query is answered meanwhile", async () => {
    // As configured by default: a team's limit equal to the process's.
    const url = await biWith({ concurrentQueriesPerKey: 2, concurrentQueriesPerTeam: 4, concurrentQueries: 4, maxMemoryBytes: 256 * MiB, totalMemoryBytes: 4096 * MiB });
    const team = await newTeam('bi-team');
    const [k1, k2] = [clientOf(url, await readKey(team)), clientOf(url, await readKey(team))];
    // Two keys of one team try to hold all four places.
    const running = [await hold(k1), await hold(k1), await hold(k2), await hold(k2)];
    const other = clientOf(url, await readKey(await newTeam('bi-other')));
    expect(await outcome(other, 'SELECT 1'), "another team's query while the first holds its share").to.equal('ok');
    const refused = await k2.query({ query: 'SELECT 1', format: 'JSONEachRow' }).then(
      () => undefined,
      (err: Error & { code?: string }) => err,
    );
    expect(refused?.code).to.equal('202');
    expect(refused?.message).to.match(/for this team\. Maximum: 2/);
    expect((await ended(running)).sort()).to.deep.equal(['159', '159', '202', '202']);
  });

  it('a query that finds the process full waits for a place instead of being refused, and is refused when none frees in time', async () => {
    const url = await biWith({ concurrentQueriesPerKey: 2, concurrentQueriesPerTeam: 2, concurrentQueries: 2, maxMemoryBytes: 256 * MiB, totalMemoryBytes: 4096 * MiB, queueWaitMs: 8_000 });
    const running = [await hold(clientOf(url, await readKey(await newTeam('bi-full-a')))), await hold(clientOf(url, await readKey(await newTeam('bi-full-b'))))];
    // Both places run until their 2 s limit: the third team's query waits for one, then runs.
    expect(await outcome(clientOf(url, await readKey(await newTeam('bi-full-c'))), 'SELECT 1')).to.equal('ok');
    await ended(running);
    const short = await biWith({ concurrentQueriesPerKey: 1, concurrentQueriesPerTeam: 1, concurrentQueries: 1, maxMemoryBytes: 256 * MiB, totalMemoryBytes: 4096 * MiB, queueWaitMs: 300 });
    const held = await hold(clientOf(short, await readKey(await newTeam('bi-short-a'))));
    const late = await clientOf(short, await readKey(await newTeam('bi-short-b'))).query({ query: 'SELECT 1', format: 'JSONEachRow' }).then(
      () => undefined,
      (err: Error & { code?: string }) => err,
    );
    expect(late?.code).to.equal('202');
    expect(late?.message).to.match(/none ended within 0\.3 s/);
    await ended([held]);
  });

  it('places that free up go to the waiting teams in turn, not to the team that asked most', async () => {
    const admission = new BiAdmission({ perHolder: 4, perTeam: 4, total: 4, maxMemoryBytes: 64 * MiB, totalMemoryBytes: 4096 * MiB, queueWaitMs: 60_000 });
    expect(admission.perTeam, 'half of four').to.equal(2);
    const a = [await admission.admit('a1', 'A'), await admission.admit('a2', 'A')];
    const b = [await admission.admit('b1', 'B'), await admission.admit('b2', 'B')];
    const served: string[] = [];
    const wait = (holder: string, team: string) => admission.admit(holder, team).then((place) => (served.push(holder), place));
    const waiting = [wait('c1', 'C'), wait('c2', 'C'), wait('d1', 'D')];
    const refused = await admission.admit('b3', 'B').then(
      () => undefined,
      (err: Error) => err,
    );
    expect(refused?.message).to.match(/for this team/);
    await new Promise((r) => setImmediate(r));
    expect(served).to.deep.equal([]);
    a[0]!.release();
    a[1]!.release();
    await new Promise((r) => setImmediate(r));
    expect(served, 'C first (it waited first), then D, before C again').to.deep.equal(['c1', 'd1']);
    b[0]!.release();
    await new Promise((r) => setImmediate(r));
    expect(served).to.deep.equal(['c1', 'd1', 'c2']);
    for (const place of [...(await Promise.all(waiting)), b[1]!]) place.release();
  });

  it('memory: each query gets at most what the BI total has left, and none starts with too little', async () => {
    const url = await biWith({ maxMemoryBytes: 400 * MiB, totalMemoryBytes: 500 * MiB, concurrentQueriesPerKey: 4, concurrentQueries: 4 });
    const team = await newTeam('bi-memory');
    const client = clientOf(url, await readKey(team));
    // About 80 MB of array (192 MiB at its peak): within a whole query's bound, not within the 100 MB left beside a running one.
    const heavy = 'SELECT length(groupArray(number)) FROM numbers(10000000)';
    expect(await outcome(client, heavy), 'alone').to.equal('ok');
    const running = await hold(client);
    expect(await outcome(client, heavy), 'beside a query holding 400 MB').to.equal('241');
    const second = await hold(client); // the last 100 MB
    expect(await outcome(client, 'SELECT 1'), 'nothing left').to.equal('202');
    await ended([running, second]);
    expect(await outcome(client, heavy), 'alone again').to.equal('ok');
  });
});
