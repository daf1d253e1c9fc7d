/**
 * A ClickHouse server for the tests: the service's own ClickHouse HTTP protocol module over the
 * run's embedded engine, with no restrictions, on a loopback port. Lets the suite run the service
 * in server mode (CLICKHOUSE_URL) against a real engine. Test helpers only: nothing in the
 * service's configuration can start it.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { serveClickHouseHttp, settingStatements } from '../../src/clickhouse-http/protocol.js';
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
  const server = http.createServer((req, res) => {
    void serveClickHouseHttp(req, res, {
      enginePath,
      maxBodyBytes: 256 * 1024 * 1024,
      // Everything the client asks for, as a ClickHouse server's default user may.
      policy: { prepare: (request) => ({ setup: settingStatements(request.settings) }) },
    });
  });
  const listen = (port: number) => new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  await listen(0);
  const { port } = server.address() as AddressInfo;
  const stop = () =>
    new Promise<void>((resolve) => {
      if (!server.listening) return resolve();
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return { url: `http://127.0.0.1:${port}`, stop, resume: () => listen(port), close: stop };
}
