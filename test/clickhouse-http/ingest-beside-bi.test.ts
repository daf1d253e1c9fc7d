/**
 * BI never stalls ingest: small batches through POST /api/v1/events on a listening server while
 * four heavy BI queries (two read keys, each at its limit of two) run through the ClickHouse HTTP
 * interface. Each running engine query holds one of libuv's pool threads, and an acknowledgement
 * that needed one (the ingest log's fsync) used to wait for a BI query to end: here the queries run
 * longer than any answer may take, so such a wait fails the test. How fast ingest is beside them
 * (rate and p99 against ingest alone) is measured by npm run bench:bi.
 */
import http from 'node:http';
import { expect } from 'chai';
import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import { startBiServer, teamScopedInterface } from '../../src/clickhouse-http/interface.js';
import { issueKey } from '../../src/teams/repository.js';
import { sdkId, sleep } from '../helpers/common.js';
import { listenOnce, newTeam, testEnv } from '../helpers/context.js';

const WINDOW_MS = 6_000;
const INGEST_CLIENTS = 4;
const BATCH = 10;
/** The heavy queries' time limit: past the window, so all four run while every batch is sent. */
const HEAVY_SECONDS = 8;
/** Far above an answer's latency (tens of ms on a busy machine): only a stall reaches it. */
const STALL_MS = 5_000;
/** One core's worth of work for as long as the query may run (its time limit ends it). */
const HEAVY = 'SELECT sum(cityHash64(number)) FROM numbers(20000000000)';

describe('ingest beside heavy BI queries', function () {
  this.timeout(120_000);
  let server: Awaited<ReturnType<typeof listenOnce>>;
  let bi: Awaited<ReturnType<typeof startBiServer>>;
  const clients: ClickHouseClient[] = [];
  const agent = new http.Agent({ keepAlive: true, maxSockets: INGEST_CLIENTS });

  before(async () => {
    const { config, deps } = testEnv();
    server = await listenOnce();
    const limits = { ...config.bi.limits, maxExecutionSeconds: HEAVY_SECONDS };
    const handler = teamScopedInterface({ config: { ...config, bi: { ...config.bi, limits } }, db: deps.db, events: deps.events, rateLimiter: deps.rateLimiter });
    bi = await startBiServer(handler!, config, 0);
  });

  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await bi?.close();
    await server?.close();
    agent.destroy();
  });

  function post(path: string, key: string, body: string): Promise<{ status: number; body: string }> {
    const { port } = new URL(server.url);
    return new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', agent, headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, body: text }));
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  /** A batch of client `c`, with ids as the SDK sends them. */
  const batch = (c: number) => {
    const now = Date.now();
    return Array.from({ length: BATCH }, (_, i) => ({ id: sdkId(), agent_id: `agent-${c}`, endpoint: 'https://api.example.com/v1/search', method: 'POST', amount: '0.001', created_at: now - i }));
  };

  /** Latencies (ms) of INGEST_CLIENTS clients sending batches back to back for WINDOW_MS, each answered 200. */
  async function ingestFor(key: string): Promise<number[]> {
    const latencies: number[] = [];
    const end = performance.now() + WINDOW_MS;
    await Promise.all(
      Array.from({ length: INGEST_CLIENTS }, async (_, c) => {
        while (performance.now() < end) {
          const t0 = performance.now();
          const res = await post('/api/v1/events', key, JSON.stringify({ events: batch(c) }));
          latencies.push(performance.now() - t0);
          expect(res.status, res.body).to.equal(200);
        }
      }),
    );
    return latencies;
  }

  /** Keeps a heavy query running on this client until `until`: each ends at the interface's time limit. */
  async function heavyQueriesUntil(client: ClickHouseClient, until: number): Promise<{ ran: number }> {
    let ran = 0;
    while (performance.now() < until) {
      try {
        await client.query({ query: HEAVY, format: 'TabSeparated' }).then((r) => r.text());
        ran++;
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (code === '159') ran++; // TIMEOUT_EXCEEDED: the query ran its full time
        else if (code === '202') await sleep(20); // the key's previous query is still being released
        else throw err;
      }
    }
    return { ran };
  }

  it('answers every batch while four heavy BI queries run, none held until a query ends', async () => {
    const team = await newTeam('ingest-bi');
    // Two read keys (the per-key limit is two queries): four heavy queries at once.
    const readKeys = await Promise.all(
      [await newTeam('bi-reader-a'), await newTeam('bi-reader-b')].map(async (t) => (await issueKey(testEnv().deps.db, t.teamId, { name: 'bi', scopes: ['read'] })).apiKey),
    );
    const biUrl = `http://127.0.0.1:${bi.port}`;
    const biClients = readKeys.flatMap((key) =>
      [0, 1].map(() => createClient({ url: biUrl, username: 'bi', password: key, request_timeout: 60_000, max_open_connections: 1, log: { level: ClickHouseLogLevel.OFF } })),
    );
    clients.push(...biClients);

    // Warm-up: the team's first claims, before the queries start.
    expect((await post('/api/v1/events', team.apiKey, JSON.stringify({ events: batch(0) }))).status).to.equal(200);

    const until = performance.now() + WINDOW_MS + 500;
    const heavy = Promise.all(biClients.map((c) => heavyQueriesUntil(c, until)));
    await sleep(500); // all four running
    const beside = await ingestFor(team.apiKey);
    const ran = (await heavy).reduce((n, r) => n + r.ran, 0);

    expect(ran, 'heavy queries that ran their full time').to.be.at.least(4);
    expect(beside.length, 'batches answered').to.be.at.least(INGEST_CLIENTS);
    expect(Math.max(...beside), 'the slowest answer (ms)').to.be.below(STALL_MS);
  });
});
