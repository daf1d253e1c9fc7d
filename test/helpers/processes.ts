/** Runs the built service and scripts as child processes, as a user would. */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PROJECT_ROOT } from '../../src/paths.js';

export const MAIN = path.join(PROJECT_ROOT, 'dist/src/main.js');

/** The folders tempDir made in this run: removed once it ends (removeTempDirs, the root hooks). */
const made = new Set<string>();

/** A new folder in the system temp folder, removed when the run ends (a test may remove it sooner). */
export function tempDir(label: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `spendscope-${label}-`));
  made.add(dir);
  return dir;
}

/** Removes every folder tempDir made (the run's services and engines are stopped by then). */
export function removeTempDirs(): void {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
  made.clear();
}

export interface RunningService {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  baseUrl: string;
  exited: Promise<number | null>;
}

/**
 * Starts `node dist/src/main.js` on a free port and waits until it listens. `launcher`: a command
 * that runs it, given node and the script as its last arguments (a shell, as `npm start` has);
 * `child` is then the launcher.
 */
export async function startService(env: Record<string, string>, launcher: string[] = []): Promise<RunningService> {
  const [command, ...args] = [...launcher, process.execPath, MAIN];
  const child = spawn(command!, args, {
    env: { PATH: process.env.PATH ?? '', PORT: '0', LOG_LEVEL: 'info', ...env },
    cwd: PROJECT_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`service did not start: ${out}\n${err}`)), 30_000);
    const check = () => {
      // JSON lines, or the readable ones of LOG_FORMAT=pretty.
      const match = /"port":(\d+).*listening/.exec(out) ?? /listening on http:\/\/\S+:(\d+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    };
    child.stdout!.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`service exited with ${code} before listening: ${out}\n${err}`));
    });
  });
  return { child, stdout: () => out, stderr: () => err, baseUrl: `http://127.0.0.1:${port}`, exited };
}

/** Runs a command to completion and returns its output. */
export function run(
  command: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      env: { ...process.env, ...env },
      cwd: PROJECT_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** One API call to a service started here, with a key; the body parsed (undefined for a 204). */
export async function callWithKey(baseUrl: string, key: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { Authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: res.status === 204 ? undefined : await res.json() };
}
