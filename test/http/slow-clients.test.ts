/** Slow and abusive clients: timeouts, the connection cap, and bodies whose shape would cost too much. */
import { expect } from 'chai';
import type http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { HttpLimits } from '../../src/config.js';
import { MAX_ARRAY_ITEMS, MAX_BODY_DEPTH } from '../../src/http/body-shape.js';
import { createHttpServer, listen } from '../../src/http/listen.js';
import { sleep, type Team } from '../helpers/common.js';
import { api, errorOf, newTeam, testEnv } from '../helpers/context.js';

const LIMITS: HttpLimits = {
  headersTimeoutMs: 500,
  requestTimeoutMs: 1_000,
  keepAliveTimeoutMs: 300,
  idleTimeoutMs: 5_000,
  maxConnections: 3,
  maxConnectionsPerClient: 3,
  maxNewConnections: 3,
  newConnectionTimeoutMs: 500,
};

/** A raw connection: what the server sent, and when it closed (ms after connecting). */
function connect(port: number): Promise<{ socket: net.Socket; received: () => string; closed: Promise<number> }> {
  return new Promise((resolve, reject) => {
    const start = Date.now();
    let text = '';
    const socket = net.connect(port, '127.0.0.1');
    socket.on('data', (d) => (text += d.toString()));
    socket.on('error', () => undefined); // a reset is a close here
    const closed = new Promise<number>((r) => socket.on('close', () => r(Date.now() - start)));
    socket.once('connect', () => resolve({ socket, received: () => text, closed }));
    socket.once('error', reject);
  });
}

describe('slow and abusive clients', function () {
  this.timeout(30_000);
  let server: http.Server;
  let port: number;
  let team: Team;

  before(async () => {
    server = createHttpServer(testEnv().app, LIMITS);
    await listen(server, 0, '127.0.0.1');
    port = (server.address() as AddressInfo).port;
    team = await newTeam();
  });
  after(() => new Promise<void>((r) => server.close(() => r())));
  afterEach(() => server.closeAllConnections());

  it('a client that sends its body a byte at a time is answered 408 and cut off at the request timeout', async () => {
    const c = await connect(port);
    c.socket.write(
      `POST /api/v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${team.apiKey}\r\nContent-Type: application/json\r\nContent-Length: 10000\r\n\r\n{`,
    );
    const drip = setInterval(() => c.socket.writable && c.socket.write(' '), 100);
    const closedAfter = await c.closed;
    clearInterval(drip);
    expect(c.received()).to.match(/^HTTP\/1\.1 408 /);
    // The timeout plus Node's check interval (1 s here), far below the 1,000 s the drip would take.
    expect(closedAfter).to.be.within(LIMITS.requestTimeoutMs, LIMITS.requestTimeoutMs + 2_500);
  });

  it('a client that never finishes its headers is cut off at the headers timeout', async () => {
    const c = await connect(port);
    c.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
    const drip = setInterval(() => c.socket.writable && c.socket.write('X-Slow: 1\r\n'), 100);
    const closedAfter = await c.closed;
    clearInterval(drip);
    expect(c.received()).to.match(/^HTTP\/1\.1 408 /);
    expect(closedAfter).to.be.within(LIMITS.headersTimeoutMs, LIMITS.headersTimeoutMs + 2_500);
  });

  it('an idle keep-alive connection is closed after the keep-alive timeout', async () => {
    const c = await connect(port);
    c.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    const closedAfter = await c.closed;
    expect(c.received()).to.match(/^HTTP\/1\.1 200 /);
    expect(closedAfter).to.be.below(LIMITS.idleTimeoutMs);
  });

  it('past the connection cap, new connections are closed at once and the open ones still work', async () => {
    const open = await Promise.all([connect(port), connect(port), connect(port)]);
    // Each of the three answers, so the server has accepted all of them.
    for (const c of open) c.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    await sleep(200);
    for (const c of open) expect(c.received()).to.match(/^HTTP\/1\.1 200 /);
    const extra = await connect(port);
    extra.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    const closedAfter = await extra.closed;
    expect(extra.received()).to.equal('');
    // Closed by the cap, not left open until the idle timeout (5 s): the bound catches a stall, not a speed.
    expect(closedAfter).to.be.below(LIMITS.idleTimeoutMs);
    open[0]!.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    await sleep(100);
    expect(open[0]!.received().match(/HTTP\/1\.1 200 /g)).to.have.length(2);
  });

  describe('bodies whose shape would cost too much', () => {
    it(`a body nested deeper than ${MAX_BODY_DEPTH} levels is a 400 naming where`, async () => {
      let metadata: unknown = 'x';
      for (let i = 0; i < 1_000; i++) metadata = { a: metadata };
      const record = { agent_id: 'a1', endpoint: 'https://x.example/p', method: 'GET', amount: '1', metadata };
      const res = await api().post('/api/v1/events').set(...team.auth).send({ events: [record] }).expect(400);
      const error = errorOf(res.body);
      expect(error.code).to.equal('validation_failed');
      expect(error.details).to.have.length(1);
      expect((error.details as { field: string }[])[0]!.field).to.match(/^events\[0\]\.metadata(\.a)+$/);
      // Every route with a body, the SDK's queries among them.
      const deep = JSON.stringify({ q: JSON.parse('['.repeat(100) + ']'.repeat(100)) });
      const query = await api().post('/api/v1/audit/query').set(...team.auth).type('json').send(deep).expect(400);
      expect(errorOf(query.body).details).to.deep.equal([{ field: `q${'[0]'.repeat(MAX_BODY_DEPTH - 1)}`, message: `nests deeper than ${MAX_BODY_DEPTH} levels` }]);
    });

    it(`an array of more than ${MAX_ARRAY_ITEMS.toLocaleString('en-US')} items is refused with one error, not one per item`, async () => {
      const body = `{"records":[${'0,'.repeat(MAX_ARRAY_ITEMS)}0]}`;
      const res = await api().post('/api/v1/audit/batch').set(...team.auth).type('json').send(body).expect(400);
      expect(errorOf(res.body).details).to.deep.equal([{ field: 'records', message: `has more than ${MAX_ARRAY_ITEMS} items` }]);
      const events = await api().post('/api/v1/events').set(...team.auth).type('json').send(`{"events":[${'1,'.repeat(200_000)}1]}`).expect(400);
      expect(errorOf(events.body).details).to.have.length(1);
    });

    it('within the limits, a batch of 1,000 SDK records with nested metadata is taken whole', async () => {
      const records = Array.from({ length: 1_000 }, (_, i) => ({
        id: `shape-${process.pid}-${i}`,
        agent_id: 'a1',
        endpoint: 'https://x.example/p',
        method: 'GET',
        amount: '0.01',
        metadata: { trace: { spans: [{ attrs: { k: 'v' } }] } },
      }));
      const res = await api().post('/api/v1/audit/batch').set(...team.auth).send({ records }).expect(200);
      expect(res.body.ingested).to.equal(1_000);
    });
  });
});
