import http from 'node:http';
import type { HttpLimits } from '../config.js';
import { shareConnections } from './connection-shares.js';

/**
 * An HTTP server for the app with every limit a slow or abusive client could otherwise outlast:
 * headers, the whole request (a body sent a byte at a time is cut off with 408), idle keep-alive,
 * idle sockets (a client that stops reading its answer), and the connections each client, and
 * connections that have not sent a request yet, may hold (src/http/connection-shares.ts).
 */
export function createHttpServer(app: http.RequestListener, limits: HttpLimits): http.Server {
  const server = http.createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      // Node checks those two timeouts on this interval (30 s by default): a second keeps them close.
      connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMs),
    },
    app,
  );
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  // Without a 'timeout' listener, Node destroys a socket idle this long.
  server.timeout = limits.idleTimeoutMs;
  shareConnections(server, limits);
  return server;
}

/** Listens on host:port and resolves once it does. */
export function listen(server: http.Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
