/**
 * A ClickHouse HTTP endpoint over the embedded engine, for the tests and `bench:cluster`: the
 * service's ClickHouse protocol module (src/clickhouse-http/protocol.ts) in front of a chDB data
 * directory, unrestricted, as a ClickHouse server's default user, on loopback. Instances of the
 * service reach it with CLICKHOUSE_URL, as they would reach clickhouse-server, which is what
 * production runs. Nothing in the service's configuration starts it.
 *
 * As a process of its own (the engine locks its directory to one process):
 *   node dist/scripts/clickhouse-endpoint.js <data dir> [port]
 * prints `listening on http://127.0.0.1:PORT` once it answers.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveClickHouseHttp, settingStatements } from '../src/clickhouse-http/protocol.js';

export interface ClickHouseEndpoint {
  url: string;
  close(): Promise<void>;
}

/** Serves the engine of `enginePath` on 127.0.0.1:`port` (0: any free port). */
export async function serveEmbeddedClickHouse(enginePath: string, port = 0): Promise<ClickHouseEndpoint> {
  const server = http.createServer((req, res) => {
    void serveClickHouseHttp(req, res, {
      enginePath,
      maxBodyBytes: 256 * 1024 * 1024,
      // Everything the client asks for, as a ClickHouse server's default user may.
      policy: { prepare: (request) => ({ setup: settingStatements(request.settings) }) },
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [dir, port] = process.argv.slice(2);
  if (!dir) {
    process.stderr.write('usage: node dist/scripts/clickhouse-endpoint.js <data dir> [port]\n');
    process.exit(2);
  }
  fs.mkdirSync(dir, { recursive: true });
  const endpoint = await serveEmbeddedClickHouse(path.resolve(dir), Number(port ?? 0));
  process.stdout.write(`listening on ${endpoint.url}\n`);
  process.on('SIGTERM', () => void endpoint.close().then(() => process.exit(0)));
}
