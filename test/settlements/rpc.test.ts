/**
 * The settlement verifier's JSON-RPC client (src/settlements/rpc.ts) against a node.js HTTP server
 * the test scripts: batches of at most batchSize calls per request, answers matched by id whatever
 * their order, at most `concurrency` requests in flight, a 429 tried again after its Retry-After,
 * a 5xx tried again, a node that never answers timed out per request and then unavailable, a
 * call's own error beside the others' results, and what the observer is told.
 */
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Metrics } from '../../src/metrics/metrics.js';
import { JsonRpc, RpcCallError, RpcUnavailable, type RpcObserver, type RpcOptions } from '../../src/settlements/rpc.js';

type Call = { jsonrpc: string; id: number; method: string; params: unknown[] };

interface Seen {
  at: number;
  body: Call[];
}

interface ScriptedNode {
  url: string;
  /** Every request, in the order they arrived. */
  requests: Seen[];
  /** Requests being answered now, and the most at once. */
  inFlight: number;
  maxInFlight: number;
  close(): Promise<void>;
}

/** Answers a request: `n` is its index among the requests the node received. */
type Script = (body: Call[], res: http.ServerResponse, n: number) => void;

async function scriptedNode(script: Script): Promise<ScriptedNode> {
  const state = { requests: [] as Seen[], inFlight: 0, maxInFlight: 0 };
  const server = http.createServer((req, res) => {
    state.inFlight++;
    state.maxInFlight = Math.max(state.maxInFlight, state.inFlight);
    res.on('close', () => state.inFlight--);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString()) as Call[];
      const n = state.requests.push({ at: Date.now(), body }) - 1;
      script(body, res, n);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return Object.assign(state, {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

const json = (res: http.ServerResponse, body: unknown, status = 200, headers: Record<string, string> = {}) =>
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));

/** Each call answered with its method and first parameter (so a result shows which call it is). */
const echo = (c: Call) => ({ jsonrpc: '2.0', id: c.id, result: `${c.method}:${String(c.params[0])}` });

/** An observer that counts what it is told. */
function counting(): RpcObserver & { requests: number; calls: number; failures: Record<string, number> } {
  const seen = { requests: 0, calls: 0, failures: {} as Record<string, number> };
  return Object.assign(seen, {
    requested(network: string, calls: number) {
      expect(network).to.equal('eip155:8453');
      seen.requests++;
      seen.calls += calls;
    },
    failed(network: string, kind: string) {
      expect(network).to.equal('eip155:8453');
      seen.failures[kind] = (seen.failures[kind] ?? 0) + 1;
    },
  });
}

const calls = (n: number, method = 'eth_getTransactionReceipt') => Array.from({ length: n }, (_, i) => ({ method, params: [`0x${i}`] }));

describe('settlements: the JSON-RPC client against a scripted node', function () {
  this.timeout(20_000);
  let node: ScriptedNode | undefined;
  afterEach(async () => {
    await node?.close();
    node = undefined;
  });

  const client = (url: string, options: Partial<RpcOptions> = {}) => new JsonRpc('eip155:8453', url, { timeoutMs: 2_000, concurrency: 4, batchSize: 3, backoffMs: [10, 10], ...options });

  it('sends the calls of a batch in requests of at most batchSize calls, and gives the results in the calls\' order though the node answers out of order', async () => {
    node = await scriptedNode((body, res) => json(res, [...body].reverse().map(echo)));
    const observer = counting();
    const rpc = client(node.url, { observer });
    const results = await rpc.batch<string>(calls(7));
    expect(results).to.deep.equal(calls(7).map((c) => `${c.method}:${c.params[0]}`));
    expect(node.requests.map((r) => r.body.length).sort()).to.deep.equal([1, 3, 3]);
    const sent = node.requests.flatMap((r) => r.body);
    expect(sent.every((c) => c.jsonrpc === '2.0')).to.equal(true);
    expect(sent.map((c) => c.params[0]).sort()).to.deep.equal(calls(7).map((c) => c.params[0]).sort());
    expect(new Set(sent.map((c) => c.id)).size, 'ids unique across the requests').to.equal(7);
    expect(observer).to.deep.include({ requests: 3, calls: 7, failures: {} });

    // One call is one request of one call; a batch within batchSize is one request.
    expect(await rpc.call('eth_blockNumber', ['latest'])).to.equal('eth_blockNumber:latest');
    await rpc.batch(calls(3));
    expect(node.requests.slice(3).map((r) => r.body.length)).to.deep.equal([1, 3]);
  });

  it('never has more than `concurrency` requests in flight, however many batches are asked at once', async () => {
    node = await scriptedNode((body, res) => setTimeout(() => json(res, body.map(echo)), 60));
    const rpc = client(node.url, { concurrency: 2, batchSize: 1 });
    const started = Date.now();
    // One batch of 8 requests, and two more batches asked while it is under way.
    const first = rpc.batch<string>(calls(8));
    await new Promise((resolve) => setTimeout(resolve, 30));
    const more = await Promise.all([rpc.batch<string>(calls(2, 'eth_getBlockByNumber')), first, rpc.batch<string>(calls(2, 'eth_chainId'))]);
    expect(more[1]).to.have.length(8);
    expect(more[0]).to.deep.equal(['eth_getBlockByNumber:0x0', 'eth_getBlockByNumber:0x1']);
    expect(node.requests).to.have.length(12);
    expect(node.maxInFlight).to.equal(2);
    // Two at a time, 60 ms each: at least six rounds.
    expect(Date.now() - started).to.be.at.least(6 * 60 - 10);
  });

  it('a 429 is tried again after its Retry-After (longer than the backoff); without one, after the backoff', async () => {
    node = await scriptedNode((body, res, n) => {
      if (n === 0) json(res, { error: 'slow down' }, 429, { 'retry-after': '1' });
      else if (n === 2) json(res, { error: 'slow down' }, 429);
      else json(res, body.map(echo));
    });
    const observer = counting();
    const rpc = client(node.url, { observer, backoffMs: [20, 20] });
    expect(await rpc.call('eth_blockNumber', [])).to.equal('eth_blockNumber:undefined');
    expect(node.requests).to.have.length(2);
    const waited = node.requests[1]!.at - node.requests[0]!.at;
    expect(waited, 'ms between the 429 and the next try').to.be.within(950, 1_900);

    expect(await rpc.call('eth_chainId', [])).to.equal('eth_chainId:undefined');
    expect(node.requests).to.have.length(4);
    expect(node.requests[3]!.at - node.requests[2]!.at).to.be.below(600);
    expect(observer).to.deep.include({ requests: 4, calls: 4, failures: { rate_limited: 2 } });
  });

  it('a 503 and a call answered -32005 (rate-limited) are tried again, and the answer after them stands', async () => {
    node = await scriptedNode((body, res, n) => {
      if (n === 0) res.writeHead(503).end('busy');
      else if (n === 1) json(res, body.map((c, i) => (i === 1 ? { jsonrpc: '2.0', id: c.id, error: { code: -32005, message: 'limit exceeded' } } : echo(c))));
      else json(res, body.map(echo));
    });
    const observer = counting();
    const rpc = client(node.url, { observer });
    expect(await rpc.batch(calls(3))).to.deep.equal(['eth_getTransactionReceipt:0x0', 'eth_getTransactionReceipt:0x1', 'eth_getTransactionReceipt:0x2']);
    expect(node.requests).to.have.length(3);
    // The same calls each time, with new ids.
    for (const r of node.requests) expect(r.body.map((c) => c.params[0])).to.deep.equal(['0x0', '0x1', '0x2']);
    expect(new Set(node.requests.flatMap((r) => r.body.map((c) => c.id))).size).to.equal(9);
    expect(observer).to.deep.include({ requests: 3, calls: 9, failures: { http: 1, rate_limited: 1 } });
  });

  it('a node that never answers times out per request, and after the last try RpcUnavailable is thrown', async () => {
    node = await scriptedNode(() => undefined);
    const observer = counting();
    const rpc = client(node.url, { observer, timeoutMs: 300, backoffMs: [10, 10] });
    const started = Date.now();
    const err = await rpc.call('eth_blockNumber', []).then(
      () => expect.fail('answered'),
      (e: unknown) => e,
    );
    const took = Date.now() - started;
    expect(err).to.be.instanceOf(RpcUnavailable);
    expect((err as Error).message).to.contain('eip155:8453').and.contain('no answer within 300 ms').and.contain('after 3 tries');
    expect(node.requests).to.have.length(3);
    // Each try waited its own timeout (not one timeout over all the tries).
    for (let i = 1; i < 3; i++) expect(node.requests[i]!.at - node.requests[i - 1]!.at).to.be.at.least(290);
    expect(took).to.be.within(3 * 300 - 10, 3_000);
    expect(observer).to.deep.include({ requests: 3, calls: 3, failures: { timeout: 3 } });
  });

  it("a call's own error is an RpcCallError in its place while the others' results stand; call() throws it", async () => {
    node = await scriptedNode((body, res) =>
      json(res, [...body].reverse().map((c) => (c.params[0] === '0x1' ? { jsonrpc: '2.0', id: c.id, error: { code: -32000, message: 'invalid transaction hash' } } : echo(c)))),
    );
    const observer = counting();
    const rpc = client(node.url, { observer });
    const results = await rpc.batch<string>(calls(3));
    expect(results[0]).to.equal('eth_getTransactionReceipt:0x0');
    expect(results[1]).to.be.instanceOf(RpcCallError);
    expect(results[1]).to.include({ code: -32000, message: 'invalid transaction hash' });
    expect(results[2]).to.equal('eth_getTransactionReceipt:0x2');
    const thrown = await rpc.call('eth_getTransactionReceipt', ['0x1']).catch((e: unknown) => e);
    expect(thrown).to.be.instanceOf(RpcCallError).and.include({ code: -32000 });
    // Not tried again: the node answered.
    expect(node.requests).to.have.length(2);
    expect(observer.failures).to.deep.equal({});
  });

  it('the observer (the service\'s metrics) counts requests, calls, and failures by kind', async () => {
    node = await scriptedNode((body, res, n) => {
      if (n === 0) res.writeHead(502).end();
      else if (n === 1) res.writeHead(200, { 'content-type': 'application/json' }).end('<html>');
      else if (n === 2) json(res, body.slice(1).map(echo)); // a call left out of the answer
      else if (n === 3) json(res, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'batches not allowed' } });
      else json(res, body.map(echo));
    });
    const metrics = new Metrics({ processMetrics: false });
    const rpc = client(node.url, { observer: metrics, backoffMs: [5, 5, 5, 5] });
    expect(await rpc.batch(calls(2))).to.have.length(2);
    expect(await rpc.batch(calls(4))).to.have.length(4); // two requests: 3 and 1 calls
    const refused = client('http://127.0.0.1:1', { observer: metrics, backoffMs: [5] });
    const err = await refused.call('eth_blockNumber', []).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(RpcUnavailable);
    expect((err as Error).message).to.contain('cannot reach the node');

    const text = await metrics.registry.metrics();
    const value = (line: string) => {
      const found = text.split('\n').find((l) => l.startsWith(`${line} `));
      return found === undefined ? undefined : Number(found.slice(line.length + 1));
    };
    // 5 requests of 2 calls, then 2 of 3 and 1, then 2 that reached nothing.
    expect(value('spendscope_chain_rpc_requests_total{network="eip155:8453"}')).to.equal(9);
    expect(value('spendscope_chain_rpc_calls_total{network="eip155:8453"}')).to.equal(16);
    expect(value('spendscope_chain_rpc_errors_total{network="eip155:8453",kind="http"}')).to.equal(1);
    expect(value('spendscope_chain_rpc_errors_total{network="eip155:8453",kind="invalid"}')).to.equal(3);
    expect(value('spendscope_chain_rpc_errors_total{network="eip155:8453",kind="network"}')).to.equal(2);
    expect(value('spendscope_chain_rpc_errors_total{network="eip155:8453",kind="timeout"}')).to.equal(undefined);
  });
});
