/**
 * A ClickHouse server for the tests: scripts/clickhouse-endpoint.ts (the service's ClickHouse HTTP
 * protocol module, unrestricted) over the run's embedded engine, on a loopback port, as
 * clickhouse-server is to a deployment. Lets the suite run the service in server mode
 * (CLICKHOUSE_URL) against a real engine, and stop and start it under the instances. It is served
 * from the test run's process, which holds the engine (one process per data directory); the
 * instances reach it over HTTP from theirs.
 */
import { serveEmbeddedClickHouse, type ClickHouseEndpoint } from '../../scripts/clickhouse-endpoint.js';
import { embeddedEnv } from './context.js';

export interface TestClickHouseServer {
  url: string;
  /** Stops answering (connections cut, the port closed), as a ClickHouse server going down. */
  stop(): Promise<void>;
  /** Answers again on the same port. */
  resume(): Promise<void>;
  close(): Promise<void>;
}

export async function startClickHouseServer(): Promise<TestClickHouseServer> {
  const { config } = embeddedEnv();
  if (config.clickhouse.mode !== 'embedded') throw new Error('the test ClickHouse server needs the embedded engine');
  const enginePath = config.clickhouse.path;
  let running: ClickHouseEndpoint | undefined = await serveEmbeddedClickHouse(enginePath);
  const { url } = running;
  const port = Number(new URL(url).port);
  const stop = async () => {
    const was = running;
    running = undefined;
    await was?.close();
  };
  return {
    url,
    stop,
    async resume() {
      running ??= await serveEmbeddedClickHouse(enginePath, port);
    },
    close: stop,
  };
}
