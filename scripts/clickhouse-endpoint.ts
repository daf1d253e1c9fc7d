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
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Session } from 'chdb';
import { serveClickHouseHttp, settingStatements } from '../src/clickhouse-http/protocol.js';
import { PROJECT_ROOT } from '../src/paths.js';

export interface ClickHouseEndpoint {
  url: string;
  close(): Promise<void>;
}

/** Serves the engine of `enginePath` on 127.0.0.1:`port` (0: any free port). */
export async function serveEmbeddedClickHouse(enginePath: string, port = 0): Promise<ClickHouseEndpoint> {
  // Each query runs on a session of its own; this one keeps the engine open between them. Without
  // it, the last session's close shuts the engine down and every query would pay its start.
  const holder = new Session(enginePath);
  const server = http.createServer((req, res) => {
    void serveClickHouseHttp(req, res, {
      enginePath,
      maxBodyBytes: 256 * 1024 * 1024,
      // A binary INSERT (the loader's RowBinary blocks) reaches the engine through a file here.
      binaryInsertFolder: `${enginePath}-inserts`,
      // Everything the client asks for, as a ClickHouse server's default user may.
      policy: { prepare: (request) => ({ setup: settingStatements(request.settings) }) },
    });
  });
  await new Promise<void>((resolve, reject) => {
    const failed = (err: Error) => {
      holder.close();
      reject(err);
    };
    server.once('error', failed);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', failed);
      resolve();
    });
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          holder.close();
          resolve();
        });
      }),
  };
}

export interface ClickHouseEndpointProcess {
  url: string;
  child: ChildProcess;
  exited: Promise<void>;
  /** What the process wrote to stderr so far. */
  errors(): string;
}

/**
 * Starts this file as a process of its own over `dir` on 127.0.0.1:`port` (0: any free port) and
 * waits until it answers: the engine then owns that directory in that process, as a ClickHouse
 * server owns its own, and the caller's process keeps its CPU and its engine to itself.
 */
export async function spawnClickHouseEndpoint(dir: string, port = 0): Promise<ClickHouseEndpointProcess> {
  const child = spawn(process.execPath, [path.join(PROJECT_ROOT, 'dist/scripts/clickhouse-endpoint.js'), dir, String(port)], {
    env: { PATH: process.env.PATH ?? '', UV_THREADPOOL_SIZE: '8' },
    cwd: PROJECT_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let errors = '';
  child.stderr!.on('data', (d: Buffer) => (errors += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`the ClickHouse endpoint did not start: ${out}${errors}`)), 60_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`the ClickHouse endpoint exited before listening: ${out}${errors}`));
    });
  });
  return { url, child, exited, errors: () => errors };
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
