/**
 * The docs' examples, run against a real install, so the answers they show cannot drift.
 *
 * In README.md and docs/*.md, a fenced block whose info string is `sh run` is a command a reader
 * types; the block right after it whose info string has `output` is its answer. This module runs
 * each file's commands in order, literally (bash, curl), against a started service and writes what
 * they printed into the output blocks. `npm run docs:examples` rewrites the files; the test
 * (test/docs/examples.test.ts) runs the same and fails when a file shows another answer than the
 * service gives now, ids, keys and times aside (they differ on every run).
 *
 * Attributes, after the info string's words:
 * - `sh run background`: a process a reader starts in another terminal (the webhook receiver). It
 *   runs until the file is done; the output block marked `from=background` (anywhere after it)
 *   shows what it printed by then.
 * - `output ignore=a,b`: those JSON fields vary from run to run (a latency); compared as present.
 * - `output set=VAR:path`: the shell variable VAR of the later commands is this answer's value at
 *   `path` (dots; the prose tells the reader to set it).
 * - `output lines=N`: (background) wait until it printed N lines.
 * - `output fields=a,b`: show only these fields of a long JSON answer (the prose says so).
 *
 * The commands name the service as http://127.0.0.1:8080 and the receiver as :9000, as a reader's
 * install does; here both run on free ports, substituted in the commands and back in the answers.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { PROJECT_ROOT } from '../../src/paths.js';

export const DOCUMENTED_URL = 'http://127.0.0.1:8080';
export const DOCUMENTED_RECEIVER = '127.0.0.1:9000';

/** One fenced block of a markdown file, by line numbers (the fence lines included). */
interface Fence {
  info: string[];
  start: number;
  end: number;
  body: string;
}

export interface Example {
  command: Fence;
  output?: Fence;
  background: boolean;
}

export interface FileRun {
  file: string;
  /** The file with every output block as the service answered now. */
  rendered: string;
  /** What each command printed and exited with, in order. */
  steps: { command: string; exitCode: number | null; stdout: string; stderr: string }[];
}

export interface Install {
  url: string;
  dataDir: string;
  /** The bootstrap team's admin key (the README's tour uses it, as a first start would). */
  key: string;
  /** The operator key (OPERATOR_API_KEY_FILE), as $OPERATOR_KEY in every page's commands. */
  operatorKey: string;
  /** A new team with its admin key, so each page starts from nothing. */
  newTeam(name: string): Promise<string>;
  stop(): Promise<void>;
}

const FENCE = /^(```+)(.*)$/;

function fences(text: string): Fence[] {
  const lines = text.split('\n');
  const found: Fence[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) continue;
    const ticks = open[1]!;
    let j = i + 1;
    while (j < lines.length && lines[j]!.trimEnd() !== ticks) j++;
    found.push({ info: open[2]!.trim().split(/\s+/).filter(Boolean), start: i, end: j, body: lines.slice(i + 1, j).join('\n') });
    i = j;
  }
  return found;
}

/** The runnable examples of a markdown text: each `sh run` block and the output block after it. */
export function examplesOf(text: string): Example[] {
  const lines = text.split('\n');
  const all = fences(text);
  const examples: Example[] = [];
  for (let i = 0; i < all.length; i++) {
    const fence = all[i]!;
    if (fence.info.includes('output') && fence.info.includes('from=background')) {
      // What the last background process printed, shown further down, after the commands it saw.
      const started = examples.filter((e) => e.background).at(-1);
      if (started) started.output = fence;
      continue;
    }
    if (fence.info[0] !== 'sh' || !fence.info.includes('run')) continue;
    const next = all[i + 1];
    const between = next ? lines.slice(fence.end + 1, next.start) : [];
    const background = fence.info.includes('background');
    const output = !background && next && next.info.includes('output') && between.every((l) => l.trim() === '') ? next : undefined;
    examples.push({ command: fence, output, background });
  }
  return examples;
}

function attribute(fence: Fence, name: string): string | undefined {
  const word = fence.info.find((w) => w.startsWith(`${name}=`));
  return word?.slice(name.length + 1);
}

/**
 * An answer as the docs show it: JSON with one top-level field (or array item) per line and
 * everything under it on that line, so a long answer stays readable and short; other text as is.
 */
export function formatAnswer(stdout: string): string {
  const text = stdout.replace(/\s+$/, '');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // Several commands in one block: curl ends no answer with a newline, so they run together.
    const values = splitJson(text);
    return values ? values.map((v) => formatValue(v)).join('\n') : text;
  }
  return formatValue(value);
}

/** Objects and arrays written one after another, split; undefined when the text is not that. */
function splitJson(text: string): unknown[] | undefined {
  const values: unknown[] = [];
  let depth = 0;
  let inString = false;
  let start = -1;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') {
      if (depth++ === 0) start = i;
    } else if (c === '}' || c === ']') {
      if (--depth === 0) {
        try {
          values.push(JSON.parse(text.slice(start, i + 1)));
        } catch {
          return undefined;
        }
      }
    } else if (depth === 0 && !/\s/.test(c)) return undefined;
  }
  return values.length > 1 && depth === 0 ? values : undefined;
}

function formatValue(value: unknown): string {
  // A short answer reads best on one line.
  if (JSON.stringify(value).length <= 100) return JSON.stringify(value);
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    return `[\n${value.map((v) => `  ${JSON.stringify(v)}`).join(',\n')}\n]`;
  }
  if (value && typeof value === 'object') {
    const entries = Object.entries(value);
    if (entries.length === 0) return '{}';
    // A list (`data` of a page of results) gets a line per item.
    const field = (v: unknown) =>
      Array.isArray(v) && v.length > 0 && v.every((item) => item && typeof item === 'object')
        ? `[\n${v.map((item) => `    ${JSON.stringify(item)}`).join(',\n')}\n  ]`
        : JSON.stringify(v);
    return `{\n${entries.map(([k, v]) => `  ${JSON.stringify(k)}: ${field(v)}`).join(',\n')}\n}`;
  }
  return JSON.stringify(value);
}

/**
 * What must be equal between the docs and a new run: everything but generated ids, keys and
 * secrets, times and request ids, and the fields an output block names in `ignore`.
 */
export function comparable(text: string, ignore: string[] = []): string {
  let out = text
    .replace(/\b(team|key|pol|alr|auth|dlv|evt|whk)_[0-9a-z]{20,}/g, '$1_<id>')
    .replace(/\bchg_[0-9A-Za-z_-]{8,}/g, 'chg_<id>')
    .replace(/\bopa_[0-9A-Za-z_-]{8,}/g, 'opa_<id>')
    .replace(/\bss_[A-Za-z0-9_-]{7,}/g, 'ss_<key>')
    .replace(/\bwhsec_[A-Za-z0-9+/=]+/g, 'whsec_<secret>')
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/g, '<time>')
    .replace(/\b1[6-9]\d{11}\b/g, '<ms>')
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>')
    .replace(/\b\d{2}:\d{2}:\d{2}(\.\d{3})?\b/g, '<clock>');
  for (const field of ignore) out = out.replace(new RegExp(`("${field}":\\s*)(?:"[^"]*"|[^,}\\]\\s]+)`, 'g'), '$1<any>');
  return out;
}

/** The answer with only these top-level fields, in this order (`fields=` on a long answer). */
function pick(text: string, fields: string[]): string {
  const value = JSON.parse(text) as Record<string, unknown>;
  return JSON.stringify(Object.fromEntries(fields.map((f) => [f, value[f]])));
}

function valueAt(text: string, dotted: string): string {
  let value: unknown = JSON.parse(text);
  for (const part of dotted.split('.')) value = (value as Record<string, unknown>)?.[part];
  if (typeof value !== 'string' && typeof value !== 'number') throw new Error(`no value at ${dotted} in ${text}`);
  return String(value);
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function runShell(script: string, env: NodeJS.ProcessEnv): Promise<{ exitCode: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    // -e: a failing line of a block fails the block, not only its last line. A command that hangs
    // is stopped (curl waits on a dead service otherwise), so the run ends and cleans up.
    const child = spawn('bash', ['--noprofile', '--norc', '-e', '-o', 'pipefail', '-c', script], {
      cwd: PROJECT_ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 60_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (exitCode) => resolve({ exitCode, stdout, stderr }));
  });
}

/** Lines a process printed itself: npm run's banner (`> name script`) and blank lines aside. */
function ownLines(stdout: string): number {
  return stdout.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('> ')).length;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Runs one markdown file's examples in order against `install`, as `key`'s team, and returns the
 * file with its output blocks filled in. A command that exits non-zero is reported in `steps`.
 */
export async function runFile(file: string, install: Install, key: string): Promise<FileRun> {
  const text = fs.readFileSync(file, 'utf8');
  const examples = examplesOf(text);
  const receiverPort = await freePort();
  const localUrl = (s: string) => s.replaceAll(DOCUMENTED_URL, install.url).replaceAll(DOCUMENTED_RECEIVER, `127.0.0.1:${receiverPort}`);
  const documentedUrl = (s: string) => s.replaceAll(install.url, DOCUMENTED_URL).replaceAll(`127.0.0.1:${receiverPort}`, DOCUMENTED_RECEIVER);
  const vars: Record<string, string> = {};
  const env = (): NodeJS.ProcessEnv => ({
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    LANG: 'C.UTF-8',
    KEY: key,
    OPERATOR_KEY: install.operatorKey,
    RECEIVER_PORT: String(receiverPort),
    ...vars,
  });
  const outputs = new Map<Example, string>();
  const steps: FileRun['steps'] = [];
  const background: { example: Example; child: ChildProcess; stdout: () => string }[] = [];
  try {
    for (const example of examples) {
      const script = localUrl(example.command.body);
      if (example.background) {
        // Its own process group, so stopping it stops what it started (npm runs node under a shell).
        const child = spawn('bash', ['--noprofile', '--norc', '-c', script], { cwd: PROJECT_ROOT, env: env(), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
        let out = '';
        let err = '';
        child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
        child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
        background.push({ example, child, stdout: () => out });
        // Started once it says so (its first line), as a reader would wait for it.
        for (let waited = 0; ownLines(out) < 1; waited += 50) {
          if (waited > 30_000 || child.exitCode !== null) throw new Error(`${path.basename(file)}: "${script}" did not start: ${out}${err}`);
          await sleep(50);
        }
        steps.push({ command: example.command.body, exitCode: null, stdout: out, stderr: err });
        continue;
      }
      const result = await runShell(script, env());
      steps.push({ command: example.command.body, ...result });
      if (result.exitCode !== 0) throw new Error(`${path.basename(file)}: "${example.command.body}" exited with ${result.exitCode}: ${result.stdout}${result.stderr}`);
      // HTTP headers (curl -D -) end their lines with CRLF; the docs' lines end with LF.
      const answer = documentedUrl(result.stdout).replace(/\r\n/g, '\n');
      if (example.output) {
        const fields = attribute(example.output, 'fields')?.split(',');
        outputs.set(example, formatAnswer(fields ? pick(answer, fields) : answer));
        const set = attribute(example.output, 'set');
        if (set) {
          const [name, dotted] = set.split(':') as [string, string];
          try {
            vars[name] = valueAt(result.stdout, dotted);
          } catch (err) {
            const before = steps.slice(0, -1).map((s) => `$ ${s.command}\n${s.stdout}`).join('\n');
            throw new Error(`${path.basename(file)}: ${(err as Error).message}\nafter:\n${before}`);
          }
        }
      }
    }
    for (const { example, stdout } of background) {
      if (!example.output) continue;
      const lines = Number(attribute(example.output, 'lines') ?? 1);
      for (let waited = 0; ownLines(stdout()) < lines && waited < 20_000; waited += 100) await sleep(100);
      const own = stdout().split('\n').filter((l) => l.trim() !== '' && !l.startsWith('> '));
      outputs.set(example, documentedUrl(own.join('\n')));
    }
  } finally {
    for (const { child } of background) {
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        // Already gone.
      }
    }
  }
  const lines = text.split('\n');
  // From the end, so earlier line numbers stay right.
  for (const example of [...examples].sort((a, b) => (b.output?.start ?? -1) - (a.output?.start ?? -1))) {
    const answer = outputs.get(example);
    if (!example.output || answer === undefined) continue;
    lines.splice(example.output.start + 1, example.output.end - example.output.start - 1, ...answer.split('\n'));
  }
  return { file, rendered: lines.join('\n'), steps };
}

/** Differences between a file and a new run of it, ids and times aside: empty when it is current. */
export function staleOutputs(current: string, rendered: string): { line: number; shown: string; now: string }[] {
  const shown = examplesOf(current);
  const now = examplesOf(rendered);
  const stale: { line: number; shown: string; now: string }[] = [];
  shown.forEach((example, i) => {
    const fresh = now[i];
    if (!example.output || !fresh?.output) return;
    const ignore = (attribute(example.output, 'ignore') ?? '').split(',').filter(Boolean);
    if (comparable(example.output.body, ignore) !== comparable(fresh.output.body, ignore)) {
      stale.push({ line: example.output.start + 1, shown: example.output.body, now: fresh.output.body });
    }
  });
  return stale;
}

/**
 * The new run's answers written into the file, but only where they differ from the ones shown (ids
 * and times aside): an unchanged answer keeps its old ids, so rerunning changes nothing in git.
 */
export function withNewAnswers(current: string, rendered: string): string {
  const lines = current.split('\n');
  const now = examplesOf(rendered);
  const shown = examplesOf(current);
  const byLine = new Map(staleOutputs(current, rendered).map((d) => [d.line, d]));
  shown
    .map((example, i) => ({ example, fresh: now[i] }))
    .filter(({ example }) => example.output && (byLine.has(example.output.start + 1) || example.output.body.trim() === ''))
    .sort((a, b) => b.example.output!.start - a.example.output!.start)
    .forEach(({ example, fresh }) => {
      const output = example.output!;
      lines.splice(output.start + 1, output.end - output.start - 1, ...(fresh?.output?.body ?? '').split('\n'));
    });
  return lines.join('\n');
}

/** The files whose examples run: the README first (the tour, on the bootstrap team), then docs/. */
export function documentedFiles(root = PROJECT_ROOT): string[] {
  const docs = path.join(root, 'docs');
  const pages = fs.existsSync(docs) ? fs.readdirSync(docs).filter((f) => f.endsWith('.md')).sort().map((f) => path.join(docs, f)) : [];
  return [path.join(root, 'README.md'), ...pages].filter((f) => examplesOf(fs.readFileSync(f, 'utf8')).length > 0);
}

/** A fresh install for the examples: its own data directory, local webhooks allowed (the tour's receiver). */
export async function startInstall(): Promise<Install> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spendscope-docs-'));
  const key = `ss_docs_${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
  const operatorKey = crypto.randomBytes(32).toString('hex');
  // Beside the data directory, as a secret file of the deployment would be.
  const operatorKeyFile = `${dataDir}.operator-key`;
  fs.writeFileSync(operatorKeyFile, `${operatorKey}\n`, { mode: 0o600 });
  const child = spawn(process.execPath, [path.join(PROJECT_ROOT, 'dist/src/main.js')], {
    cwd: PROJECT_ROOT,
    env: {
      PATH: process.env.PATH,
      UV_THREADPOOL_SIZE: '8',
      DATA_DIR: dataDir,
      PORT: '0',
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'info',
      BOOTSTRAP_API_KEY: key,
      OPERATOR_API_KEY_FILE: operatorKeyFile,
      WEBHOOK_ALLOW_HTTP: '1',
      WEBHOOK_ALLOW_PRIVATE: '1',
      WEBHOOK_RETRY_SCHEDULE: '1s',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const killAtExit = () => child.kill('SIGKILL');
  process.once('exit', killAtExit);
  let port: number | undefined;
  for (let waited = 0; port === undefined; waited += 50) {
    const match = /"port":(\d+).*listening/.exec(out);
    if (match) port = Number(match[1]);
    else if (waited > 60_000 || child.exitCode !== null) {
      child.kill('SIGKILL');
      throw new Error(`the service did not start: ${out}`);
    } else await sleep(50);
  }
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    dataDir,
    key,
    operatorKey,
    async newTeam(name) {
      const created = await runShell(`node dist/scripts/team-create.js --name ${JSON.stringify(name)}`, { PATH: process.env.PATH, DATA_DIR: dataDir });
      if (created.exitCode !== 0) throw new Error(`team:create failed: ${created.stderr}`);
      return (JSON.parse(created.stdout) as { apiKey: string }).apiKey;
    },
    async stop() {
      process.off('exit', killAtExit);
      child.kill('SIGTERM');
      await exited;
      fs.rmSync(dataDir, { recursive: true, force: true });
      fs.rmSync(operatorKeyFile, { force: true });
    },
  };
}

/** Runs every documented file, each page on a team of its own, the README on the bootstrap team. */
export async function runAll(files = documentedFiles()): Promise<FileRun[]> {
  // The answers count spend per UTC day (the tour's daily limit): a run must not straddle midnight.
  // A whole run takes seconds, so one starting in the last minute of the day waits for the next.
  const toMidnight = 86_400_000 - (Date.now() % 86_400_000);
  if (toMidnight < 60_000) await sleep(toMidnight + 1_000);
  const install = await startInstall();
  try {
    const runs: FileRun[] = [];
    for (const file of files) {
      const key = path.basename(file) === 'README.md' ? install.key : await install.newTeam(path.basename(file, '.md'));
      runs.push(await runFile(file, install, key));
    }
    return runs;
  } finally {
    await install.stop();
  }
}
