/**
 * ClickHouse's HTTP interface for BI tools on a running install: the protocol module with the
 * team-scoped policy over the service's embedded engine, under /clickhouse on the main port and,
 * when BI_HTTP_PORT is set, at the root of a port of its own (where ClickHouse clients expect it).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Config } from '../config.js';
import type { RateLimiter } from '../limits/rate-limiter.js';
import type { EventStore } from '../stores/clickhouse.js';
import type { Database } from '../stores/sql.js';
import { createHttpServer, listen } from '../http/listen.js';
import { serveClickHouseHttp } from './protocol.js';
import { engineCatalog, TeamScopedPolicy } from './team-policy.js';

export type ClickHouseHttpHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** What the interface is built from. */
export interface BiInterfaceDeps {
  config: Config;
  db: Database;
  events: EventStore;
  /** The HTTP routes' limiter (AppDeps.rateLimiter): a BI query is a request of its key's holder, counted in the same bucket. */
  rateLimiter: RateLimiter;
}

/** The interface over the embedded engine; undefined with a ClickHouse server (BI tools use that server). */
export function teamScopedInterface(deps: BiInterfaceDeps): ClickHouseHttpHandler | undefined {
  const { config } = deps;
  if (config.clickhouse.mode !== 'embedded') return undefined;
  const { path: enginePath, database } = config.clickhouse;
  const policy = new TeamScopedPolicy(deps.db, deps.rateLimiter, database, config.bi.limits, engineCatalog((sql, params) => deps.events.query(sql, params), database));
  return (req, res) => void serveClickHouseHttp(req, res, { enginePath, policy, maxBodyBytes: config.maxBodyBytes });
}

/** Serves the interface at the root of BI_HTTP_PORT on HOST, with the main port's connection limits. */
export async function startBiServer(handler: ClickHouseHttpHandler, config: Config, port: number): Promise<{ port: number; close(): Promise<void> }> {
  const server = createHttpServer(handler, config.http);
  await listen(server, port, config.host);
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : port,
    // Running BI queries are cut off: their sessions close, and the stores can close after them.
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

