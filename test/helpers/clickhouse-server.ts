/**
 * A ClickHouse server for the tests: the service's own ClickHouse HTTP protocol module over the
 * run's embedded engine, with no restrictions, on a loopback port. Lets the suite run the service
 * in server mode (CLICKHOUSE_URL) against a real engine. Test helpers only: nothing in the
 * service's configuration can start it.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { serveClickHouseHttp, settingStatements } from '../../src/clickhouse-http/protocol.js';
import { testEnv } from './context.js';

export async function startClickHouseServer(): Promise<{ url: string; close: () => Promise<void> }> {
  const { config } = testEnv();
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
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
