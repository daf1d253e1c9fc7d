/**
 * A ClickHouse server for the tests: scripts/clickhouse-endpoint.ts (the service's ClickHouse HTTP
 * protocol module, unrestricted) over an embedded engine of its own, run as a process of its own on
 * a loopback port, as clickhouse-server is to a deployment (issue 30). Lets the suite run the
 * service in server mode (CLICKHOUSE_URL) against a real engine, and stop it under the instances
 * (kill -9: connections cut, the port closed) and start it again on the same port and data.
 */
import fs from 'node:fs';
import { spawnClickHouseEndpoint, type ClickHouseEndpointProcess } from '../../scripts/clickhouse-endpoint.js';
import { tempDir } from './processes.js';

export interface TestClickHouseServer {
  url: string;
  /** Stops answering (the process killed: connections cut, the port closed), as a server going down. */
  stop(): Promise<void>;
  /** Answers again on the same port, over the same data. */
  resume(): Promise<void>;
  /** What the processes wrote to stderr (for a failed test). */
  errors(): string;
  close(): Promise<void>;
}

export async function startClickHouseServer(): Promise<TestClickHouseServer> {
  const dataDir = tempDir('clickhouse');
  const earlier: string[] = [];
  let running: ClickHouseEndpointProcess | undefined = await spawnClickHouseEndpoint(dataDir);
  const { url } = running;
  const port = Number(new URL(url).port);
  const kill = async (signal: NodeJS.Signals) => {
    const was = running;
    running = undefined;
    if (!was) return;
    was.child.kill(signal);
    await was.exited;
    earlier.push(was.errors());
  };
  return {
    url,
    stop: () => kill('SIGKILL'),
    async resume() {
      running ??= await spawnClickHouseEndpoint(dataDir, port);
    },
    errors: () => [...earlier, running?.errors() ?? ''].join(''),
    async close() {
      await kill('SIGTERM');
      fs.rmSync(dataDir, { recursive: true, force: true });
      // The endpoint's folder for binary INSERT data sits beside the engine's (scripts/clickhouse-endpoint.ts).
      fs.rmSync(`${dataDir}-inserts`, { recursive: true, force: true });
    },
  };
}
