import type { Server } from 'node:http';
import type { App } from './app.js';
import { createHttpServer, listen } from './http/listen.js';
import type { AppDeps } from './deps.js';
import { closeDeps } from './deps.js';

export interface RunningServer {
  server: Server;
  port: number;
  /** Stops accepting, lets in-flight requests finish (up to the timeout), then closes both stores. */
  shutdown(): Promise<void>;
}

/** Listens with the app and returns the means to stop it gracefully. */
export async function startServer(
  app: App,
  deps: Pick<AppDeps, 'config' | 'db' | 'events' | 'loaderEvents' | 'ingest' | 'webhooks'>,
): Promise<RunningServer> {
  const { config } = deps;
  const server: Server = createHttpServer(app, config.http);
  await listen(server, config.port, config.host);
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;

  let stopping: Promise<void> | undefined;
  const shutdown = () =>
    (stopping ??= new Promise<void>((resolve, reject) => {
      // Past the deadline, stop waiting for slow clients; the stores still close before we return.
      const deadline = setTimeout(() => server.closeAllConnections(), config.shutdownTimeoutMs);
      deadline.unref();
      server.close(() => {
        clearTimeout(deadline);
        closeDeps(deps).then(resolve, reject);
      });
      // Keep-alive connections with no request in progress would hold close() open until they time out.
      server.closeIdleConnections();
    }));
  return { server, port, shutdown };
}
