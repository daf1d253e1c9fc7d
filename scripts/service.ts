/** Runs the built service as a child process for the benchmark scripts, and calls it. */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { PROJECT_ROOT } from '../src/paths.js';

export interface ChildService {
  pid: number;
  port: number;
  /** SIGTERM, then the exit code once the service has closed its stores. */
  stop(): Promise<number | null>;
}

export interface ChildServiceOptions {
  dataDir: string;
  env?: Record<string, string>;
  /** Extra node flags, e.g. a CPU profile. */
  nodeArgs?: string[];
  /** Keep the service's log here; otherwise it is drained and dropped. */
  logFile?: string;
  /** The project whose build (`dist/src/main.js`) runs; this one by default (another worktree for a before/after). */
  root?: string;
}

/**
 * NODE_OPTIONS as `npm start` and the Docker image set it when the environment does not
 * (docs/configuration.md): the benchmarks measure the service as it ships, and a NODE_OPTIONS of
 * the caller's (an A/B of another pool size) replaces it.
 */
export const SERVICE_NODE_OPTIONS = '--v8-pool-size=1';

/** Starts `node dist/src/main.js` on a free port and resolves once it listens. */
export async function startChildService(options: ChildServiceOptions): Promise<ChildService> {
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), path.join(options.root ?? PROJECT_ROOT, 'dist/src/main.js')], {
    // The start-up line with the port is logged at info, so the level is at least info.
    env: { NODE_OPTIONS: SERVICE_NODE_OPTIONS, ...process.env, LOG_LEVEL: 'info', ...options.env, DATA_DIR: options.dataDir, PORT: '0' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stopping = false;
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code, signal) => {
      // A service that dies under a benchmark says how, before the benchmark's own errors.
      if (!stopping) console.error(`the service exited by itself: code ${code}, signal ${signal}`);
      resolve(code);
    }),
  );
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    const watch = (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening on http:\/\/[^:]+:(\d+)/.exec(out);
      if (match) {
        child.stdout!.off('data', watch);
        resolve(Number(match[1]));
      }
    };
    child.stdout!.on('data', watch);
    void exited.then((code) => reject(new Error(`service exited with ${code}: ${out}`)));
  });
  if (options.logFile) child.stdout!.pipe(fs.createWriteStream(options.logFile));
  else child.stdout!.resume();
  return {
    pid: child.pid!,
    port,
    stop: () => {
      stopping = true;
      child.kill('SIGTERM');
      return exited;
    },
  };
}

/**
 * The yardstick (scripts/null-server.ts): a bare Node JSON server, or with `express` the same
 * answer from a bare express app. Resolves once it listens.
 */
export async function startNullServer(kind: 'node' | 'express' = 'node'): Promise<{ pid: number; port: number; stop(): void }> {
  const child = spawn(process.execPath, [path.join(PROJECT_ROOT, 'dist/scripts/null-server.js'), ...(kind === 'express' ? ['--express'] : [])], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const match = /listening (\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.on('exit', (code) => reject(new Error(`null server exited with ${code}`)));
  });
  return { pid: child.pid!, port, stop: () => child.kill('SIGTERM') };
}

export interface ServiceAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/**
 * One request to the service over a keep-alive agent. A reused connection that the server closes for
 * idleness (HTTP_KEEP_ALIVE_TIMEOUT_MS) just as a request goes out on it is reset: the request never
 * reached the service, so it is sent again once on a new connection, as Node's documentation of
 * `request.reusedSocket` advises. Safe for what the benchmarks send: ingest is idempotent by record id.
 */
export function callService(
  agent: http.Agent,
  port: number,
  method: string,
  route: string,
  headers: Record<string, string | number>,
  body?: string,
): Promise<ServiceAnswer> {
  const attempt = (retry: boolean): Promise<ServiceAnswer> =>
    new Promise((resolve, reject) => {
      const all = { ...headers };
      if (body !== undefined) Object.assign(all, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
      const req = http.request({ host: '127.0.0.1', port, method, path: route, agent, headers: all }, (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      });
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (retry && req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) resolve(attempt(false));
        else reject(err);
      });
      req.end(body);
    });
  return attempt(true);
}
