/**
 * ClickHouse's HTTP interface for BI tools on a running install: the protocol module with the
 * team-scoped policy over the service's embedded engine, under /clickhouse on the main port and,
 * when BI_HTTP_PORT is set, at the root of a port of its own (where ClickHouse clients expect it).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Config } from '../config.js';
import type { EventStore } from '../stores/clickhouse.js';
import type { Registry } from '../stores/sqlite.js';
import { createHttpServer, listen } from '../http/listen.js';
import { serveClickHouseHttp, type ClickHouseHttpPolicy } from './protocol.js';
import { databaseTables, TeamScopedPolicy } from './team-policy.js';

export type ClickHouseHttpHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** The interface over the embedded engine; undefined with a ClickHouse server (BI tools use that server). */
export function teamScopedInterface(deps: { config: Config; registry: Registry; events: EventStore }): ClickHouseHttpHandler | undefined {
  const { config } = deps;
  if (config.clickhouse.mode !== 'embedded') return undefined;
  const { path: enginePath, database } = config.clickhouse;
  const teamScoped = new TeamScopedPolicy(deps.registry, database, config.bi.limits, databaseTables((sql, params) => deps.events.query(sql, params), database));
  const policy = atLowestCpuPriority(teamScoped);
  return (req, res) => void serveClickHouseHttp(req, res, { enginePath, policy, maxBodyBytes: config.maxBodyBytes });
}

/**
 * BI queries run at the lowest CPU priority (nice 19 on the engine threads that execute them), so
 * on a busy machine they take the CPU the service leaves, not the event loop's share: beside four
 * heavy queries on 2 cores, ingest kept a median 0.2 of its requests/s at nice 0 and 0.6 at nice
 * 19, p50 2.2 ms instead of 10 ms (6 runs each of test/clickhouse-http/ingest-beside-bi.test.ts).
 * First in the setup, so the policy's own `readonly` keeps the query from changing it.
 */
function atLowestCpuPriority(policy: ClickHouseHttpPolicy): ClickHouseHttpPolicy {
  return {
    async prepare(request) {
      const prepared = await policy.prepare(request);
      return { ...prepared, setup: ['SET os_thread_priority = 19', ...prepared.setup] };
    },
  };
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

