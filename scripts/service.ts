/** Runs the built service as a child process for the benchmark scripts. */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
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
}

/** Starts `node dist/src/main.js` on a free port and resolves once it listens. */
export async function startChildService(options: ChildServiceOptions): Promise<ChildService> {
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), path.join(PROJECT_ROOT, 'dist/src/main.js')], {
    // The start-up line with the port is logged at info, so the level is at least info.
    env: { ...process.env, LOG_LEVEL: 'info', ...options.env, DATA_DIR: options.dataDir, PORT: '0' },
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
