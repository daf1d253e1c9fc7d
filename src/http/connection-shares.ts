import type http from 'node:http';
import net from 'node:net';
import type { HttpLimits } from '../config.js';

export type ConnectionShares = Pick<HttpLimits, 'maxConnections' | 'maxConnectionsPerClient' | 'maxNewConnections' | 'newConnectionTimeoutMs'>;

/** What Node answers a request whose headers took too long; a stalled new connection gets the same. */
const REQUEST_TIMEOUT = 'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n';
/** A new connection closed to make room for another client's. */
const MADE_ROOM = 'HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\r\n';

/**
 * The client a connection counts against: its IPv4 address, or the /64 of its IPv6 address (one
 * host is routinely given a whole /64, so an address within it says nothing more). Undefined: the
 * socket has no address any more (closed before it was seen).
 */
export function clientOf(address: string | undefined): string | undefined {
  if (!address) return undefined;
  const ip = address.replace(/%.*$/, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1];
  if (!net.isIPv6(ip)) return ip;
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  const [head = '', tail] = ip.split('::');
  let all = groups(head);
  if (tail !== undefined) {
    const after = groups(tail);
    // A dotted IPv4 ending stands for two groups.
    const width = after.reduce((n, g) => n + (g.includes('.') ? 2 : 1), 0);
    all = [...all, ...Array<string>(8 - all.length - width).fill('0'), ...after];
  }
  return `${all.slice(0, 4).map((g) => parseInt(g, 16).toString(16)).join(':')}::/64`;
}

interface Client {
  key: string;
  open: number;
  /** Its new connections, oldest first (a Set keeps insertion order). */
  waiting: Set<net.Socket>;
}

interface Tracked {
  client: Client;
  /** Set while the connection is new: closes it when its first request's headers are late. */
  deadline: NodeJS.Timeout | undefined;
}

/**
 * Shares the server's connections between clients: each client (peer address) holds at most its
 * share; new connections, which have not yet sent a whole request head and prove nothing, hold at
 * most their own smaller share, for a shorter time, and are the ones that give way when the server
 * is full. Replaces Node's `maxConnections`, which refuses the newcomer whoever holds the slots.
 */
export function shareConnections(server: http.Server, limits: ConnectionShares): void {
  const clients = new Map<string, Client>();
  const tracked = new Map<net.Socket, Tracked>();
  let waiting = 0;

  const forget = (socket: net.Socket) => {
    const entry = tracked.get(socket);
    if (!entry) return;
    tracked.delete(socket);
    clearTimeout(entry.deadline);
    if (entry.client.waiting.delete(socket)) waiting--;
    if (--entry.client.open === 0) clients.delete(entry.client.key);
  };
  const close = (socket: net.Socket, answer: string) => {
    forget(socket);
    if (socket.writable) socket.write(answer);
    socket.destroy();
  };
  /** The oldest new connection of the client that holds the most of them. */
  const oldestOfBusiest = (): net.Socket | undefined => {
    let busiest: Client | undefined;
    for (const client of clients.values()) if (client.waiting.size > (busiest?.waiting.size ?? 0)) busiest = client;
    return busiest?.waiting.values().next().value;
  };

  server.on('connection', (socket: net.Socket) => {
    const key = clientOf(socket.remoteAddress);
    if (key === undefined) return void socket.destroy();
    const client = clients.get(key) ?? { key, open: 0, waiting: new Set<net.Socket>() };
    if (client.open >= limits.maxConnectionsPerClient) return void socket.destroy();
    if (tracked.size >= limits.maxConnections || waiting >= limits.maxNewConnections) {
      const stalled = oldestOfBusiest();
      // Full of connections that have each sent a request: the newcomer waits its turn, as with Node's cap.
      if (!stalled) return void socket.destroy();
      close(stalled, MADE_ROOM);
    }
    clients.set(key, client);
    client.open++;
    client.waiting.add(socket);
    waiting++;
    const deadline = setTimeout(() => close(socket, REQUEST_TIMEOUT), limits.newConnectionTimeoutMs);
    deadline.unref();
    tracked.set(socket, { client, deadline });
    socket.once('close', () => forget(socket));
  });

  // A whole request head has arrived: from now on the connection is held to the server's own timeouts.
  server.on('request', (req: http.IncomingMessage) => {
    const entry = tracked.get(req.socket);
    if (!entry?.deadline) return;
    clearTimeout(entry.deadline);
    entry.deadline = undefined;
    if (entry.client.waiting.delete(req.socket)) waiting--;
  });
}
