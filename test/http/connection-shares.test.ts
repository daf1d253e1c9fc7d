/**
 * Each client's share of the connections, and new connections (no whole request head yet) held to
 * a smaller share and a shorter time. Clients are told apart by their address: the loopback
 * addresses 127.0.0.2, .3, … are distinct clients to the server.
 */
import { expect } from 'chai';
import type http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { HttpLimits } from '../../src/config.js';
import { clientOf } from '../../src/http/connection-shares.js';
import { createHttpServer, listen } from '../../src/http/listen.js';
import { sleep } from '../helpers/common.js';
import { testEnv } from '../helpers/context.js';

/** Timeouts far beyond the tests' length, but for the new-connection one where a test sets it. */
const LIMITS: HttpLimits = {
  headersTimeoutMs: 20_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 20_000,
  idleTimeoutMs: 60_000,
  maxConnections: 12,
  maxConnectionsPerClient: 4,
  maxNewConnections: 6,
  newConnectionTimeoutMs: 20_000,
};
/** A request head that never ends: what a slowloris client sends, then nothing more. */
const UNFINISHED = 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: 1\r\n';
const HEALTHZ = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n';

interface Connection {
  from: string;
  socket: net.Socket;
  received: () => string;
  isClosed: () => boolean;
  /** Ms from connecting to the close. */
  closed: Promise<number>;
}

function connectFrom(port: number, localAddress: string): Promise<Connection> {
  return new Promise((resolve, reject) => {
    const start = Date.now();
    let text = '';
    let done = false;
    const socket = net.connect({ port, host: '127.0.0.1', localAddress });
    socket.on('data', (d) => (text += d.toString()));
    socket.on('error', () => undefined); // a reset is a close here
    const closed = new Promise<number>((r) =>
      socket.on('close', () => {
        done = true;
        r(Date.now() - start);
      }),
    );
    socket.once('connect', () => resolve({ from: localAddress, socket, received: () => text, isClosed: () => done, closed }));
    socket.once('error', reject);
  });
}

/** One request from `localAddress` on a connection of its own: everything the server sent until it closed. */
async function healthzFrom(port: number, localAddress: string): Promise<string> {
  const c = await connectFrom(port, localAddress);
  c.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  await c.closed;
  return c.received();
}

/** Resolves once `count` of the connections have closed. */
function closedCount(connections: Connection[], count: number): Promise<void> {
  let seen = 0;
  return new Promise((resolve) => {
    for (const c of connections) void c.closed.then(() => ++seen === count && resolve());
  });
}

async function until(check: () => boolean): Promise<void> {
  while (!check()) await sleep(10);
}

describe('connection shares: per client, and for connections that have not sent a request', function () {
  this.timeout(30_000);
  let server: http.Server | undefined;

  async function serve(limits: HttpLimits): Promise<number> {
    server = createHttpServer(testEnv().app, limits);
    await listen(server, 0, '127.0.0.1');
    return (server.address() as AddressInfo).port;
  }
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    server = undefined;
  });

  it('one client holding unfinished requests keeps its share only, and another client is served meanwhile', async () => {
    const port = await serve(LIMITS);
    // As many as the whole server takes, from one address.
    const held = await Promise.all(Array.from({ length: LIMITS.maxConnections }, () => connectFrom(port, '127.0.0.2')));
    for (const c of held) c.socket.write(UNFINISHED);
    expect(await healthzFrom(port, '127.0.0.3')).to.match(/^HTTP\/1\.1 200 /);

    const beyond = LIMITS.maxConnections - LIMITS.maxConnectionsPerClient;
    await closedCount(held, beyond);
    // A round trip more, so a close still on its way would show.
    expect(await healthzFrom(port, '127.0.0.3')).to.match(/^HTTP\/1\.1 200 /);
    const open = held.filter((c) => !c.isClosed());
    expect(open).to.have.length(LIMITS.maxConnectionsPerClient);
    // Those past the share were closed on arrival, with nothing sent.
    for (const c of held.filter((c) => c.isClosed())) expect(c.received()).to.equal('');
  });

  it('new connections of many clients hold at most their share: the busiest client\'s oldest gives way, a connection that sent a request never does', async () => {
    const port = await serve(LIMITS);
    const regular = await connectFrom(port, '127.0.0.9');
    regular.socket.write(HEALTHZ);
    await until(() => /^HTTP\/1\.1 200 /.test(regular.received()));

    // Three clients, each within its share, together more than the server has left.
    const stalled: Connection[] = [];
    for (const address of ['127.0.0.2', '127.0.0.3', '127.0.0.4']) {
      for (let i = 0; i < LIMITS.maxConnectionsPerClient; i++) {
        const c = await connectFrom(port, address);
        c.socket.write(UNFINISHED);
        stalled.push(c);
      }
    }
    expect(await healthzFrom(port, '127.0.0.5')).to.match(/^HTTP\/1\.1 200 /);

    // Room was made for the other stalled ones and for 127.0.0.5: one more than the share's overflow.
    const madeRoom = stalled.length - LIMITS.maxNewConnections + 1;
    await closedCount(stalled, madeRoom);
    expect(await healthzFrom(port, '127.0.0.5')).to.match(/^HTTP\/1\.1 200 /);
    const open = stalled.filter((c) => !c.isClosed());
    expect(open).to.have.length(LIMITS.maxNewConnections - 1);
    for (const c of stalled.filter((c) => c.isClosed())) expect(c.received()).to.match(/^HTTP\/1\.1 503 /);
    // The busiest gave way each time, so every stalled client still holds some.
    expect(new Set(open.map((c) => c.from))).to.have.keys('127.0.0.2', '127.0.0.3', '127.0.0.4');

    regular.socket.write(HEALTHZ);
    await until(() => regular.received().match(/HTTP\/1\.1 200 /g)?.length === 2 || regular.isClosed());
    expect(regular.isClosed()).to.equal(false);
  });

  it('a server full of new connections makes room for a newcomer: the busiest client\'s oldest gives way', async () => {
    const limits = { ...LIMITS, maxNewConnections: LIMITS.maxConnections };
    const port = await serve(limits);
    const stalled: Connection[] = [];
    for (const address of ['127.0.0.2', '127.0.0.3', '127.0.0.4']) {
      for (let i = 0; i < limits.maxConnectionsPerClient; i++) {
        const c = await connectFrom(port, address);
        c.socket.write(UNFINISHED);
        stalled.push(c);
      }
    }
    expect(stalled).to.have.length(limits.maxConnections);
    expect(await healthzFrom(port, '127.0.0.5')).to.match(/^HTTP\/1\.1 200 /);
    await closedCount(stalled, 1);
    expect(await healthzFrom(port, '127.0.0.5')).to.match(/^HTTP\/1\.1 200 /);
    expect(stalled.filter((c) => c.isClosed()).map((c) => [c.from, c.received()])).to.deep.equal([['127.0.0.2', 'HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\r\n']]);
  });

  it('a new connection is cut off at the new-connection timeout, before the headers timeout; a later request of the connection is not', async () => {
    const limits = { ...LIMITS, headersTimeoutMs: 10_000, newConnectionTimeoutMs: 300 };
    const port = await serve(limits);
    const fresh = await connectFrom(port, '127.0.0.2');
    fresh.socket.write(UNFINISHED);
    const closedAfter = await fresh.closed;
    expect(fresh.received()).to.match(/^HTTP\/1\.1 408 /);
    expect(closedAfter).to.be.below(limits.headersTimeoutMs);

    const regular = await connectFrom(port, '127.0.0.3');
    regular.socket.write(HEALTHZ);
    await until(() => /^HTTP\/1\.1 200 /.test(regular.received()));
    regular.socket.write(UNFINISHED);
    await sleep(limits.newConnectionTimeoutMs * 3);
    expect(regular.isClosed()).to.equal(false);
    regular.socket.write('\r\n');
    await until(() => regular.received().match(/HTTP\/1\.1 200 /g)?.length === 2 || regular.isClosed());
    expect(regular.isClosed()).to.equal(false);
  });

  it('counts an IPv4 client by its address (mapped into IPv6 too) and an IPv6 client by its /64', () => {
    expect(clientOf('203.0.113.7')).to.equal('203.0.113.7');
    expect(clientOf('::ffff:203.0.113.7')).to.equal('203.0.113.7');
    expect(clientOf('2001:db8:1:2:aaaa::1')).to.equal('2001:db8:1:2::/64');
    expect(clientOf('2001:0db8:0001:0002:bbbb:cccc:dddd:eeee')).to.equal('2001:db8:1:2::/64');
    expect(clientOf('2001:db8::1')).to.equal('2001:db8:0:0::/64');
    expect(clientOf('::1')).to.equal('0:0:0:0::/64');
    expect(clientOf('fe80::1%eth0')).to.equal('fe80:0:0:0::/64');
    expect(clientOf('64:ff9b::203.0.113.7')).to.equal('64:ff9b:0:0::/64');
    expect(clientOf(undefined)).to.equal(undefined);
  });
});
