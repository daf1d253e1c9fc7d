/**
 * How the log is written: JSON lines (pino's own, for collectors) or readable lines for a person
 * at a terminal. `LOG_FORMAT=auto` (the default) picks readable lines when stdout is a terminal and
 * JSON otherwise, so `npm start` in a shell reads well and a container's log stays machine-readable.
 *
 * The readable form is a pino destination that turns each JSON line into
 * `12:00:04.123 INFO  message  key=value …` in the process itself: no transport thread, no extra
 * package, and it runs only where a person reads the output.
 */
import { pino, type DestinationStream } from 'pino';

import type { LogFormat } from '../config.js';

export { LOG_FORMATS, type LogFormat } from '../config.js';

const LEVELS: Record<number, { name: string; color: string }> = {
  10: { name: 'TRACE', color: '\x1b[90m' },
  20: { name: 'DEBUG', color: '\x1b[36m' },
  30: { name: 'INFO ', color: '\x1b[32m' },
  40: { name: 'WARN ', color: '\x1b[33m' },
  50: { name: 'ERROR', color: '\x1b[31m' },
  60: { name: 'FATAL', color: '\x1b[41m' },
};
const DIM = '\x1b[2m';
const RESET = '\x1b[0m';

/** Fields every line has, shown in their own places or not at all. */
const OMITTED = new Set(['level', 'time', 'msg', 'pid', 'hostname']);

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

function clock(ms: number): string {
  const d = new Date(ms);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

function value(v: unknown): string {
  if (typeof v === 'string') return /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v);
  return JSON.stringify(v) ?? String(v);
}

/** One log line as a person reads it. A request's line reads `GET /api/v1/team 200 3ms`. */
export function prettyLine(json: string, color: boolean): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  const level = LEVELS[entry.level as number] ?? { name: String(entry.level).toUpperCase().padEnd(5), color: '' };
  const parts: string[] = [];
  const req = entry.req as { method?: string; path?: string; id?: unknown } | undefined;
  const res = entry.res as { statusCode?: number } | undefined;
  let message = typeof entry.msg === 'string' ? entry.msg : '';
  if (req && res && typeof entry.responseTime === 'number') {
    // pino-http's line: the request in front, its id and team among the fields.
    message = `${req.method} ${req.path} ${res.statusCode} ${entry.responseTime}ms`;
  }
  for (const [key, v] of Object.entries(entry)) {
    if (OMITTED.has(key) || v === undefined) continue;
    if (req && res && (key === 'req' || key === 'res' || key === 'responseTime')) {
      if (key === 'req' && req.id !== undefined) parts.push(`requestId=${value(req.id)}`);
      continue;
    }
    if (key === 'err' && v && typeof v === 'object' && typeof (v as { stack?: unknown }).stack === 'string') {
      parts.push(`\n${(v as { stack: string }).stack.replace(/^/gm, '    ')}`);
      continue;
    }
    parts.push(`${key}=${value(v)}`);
  }
  const time = clock(typeof entry.time === 'number' ? entry.time : Date.now());
  const fields = parts.length > 0 ? `  ${color ? DIM : ''}${parts.join(' ')}${color ? RESET : ''}` : '';
  return color ? `${DIM}${time}${RESET} ${level.color}${level.name}${RESET} ${message}${fields}\n` : `${time} ${level.name} ${message}${fields}\n`;
}

/**
 * JSON lines are written to stdout in chunks of at least 4 KiB, or every 100 ms, whichever comes
 * first: the request log is a line per request, and a write of each would wake a libuv thread and
 * the reader for every request.
 * Pino writes what is buffered when the process exits; a kill -9 loses at most those 100 ms of
 * log lines (never data: nothing acknowledged waits on the log).
 */
const JSON_LOG = { minLength: 4096, periodicFlush: 100 };

/** JSON lines to a file descriptor (stdout), buffered as above. */
export function jsonLogDestination(fd = 1): DestinationStream {
  return pino.destination({ dest: fd, sync: false, ...JSON_LOG });
}

/** Where pino writes: readable lines (coloured on a terminal), or undefined for JSON (jsonLogDestination). */
export function logDestination(format: LogFormat, out: NodeJS.WriteStream = process.stdout): DestinationStream | undefined {
  const pretty = format === 'pretty' || (format === 'auto' && out.isTTY === true);
  if (!pretty) return undefined;
  const color = out.isTTY === true && !process.env.NO_COLOR;
  return { write: (line: string) => void out.write(prettyLine(line, color)) };
}

/**
 * The first start's key banner: set apart from the log by a rule above and below, so the one
 * moment a key is shown does not scroll by among request lines.
 */
export function banner(lines: readonly string[]): string {
  const rule = '─'.repeat(Math.min(100, Math.max(40, ...lines.map((l) => l.length))));
  return `\n${rule}\n${lines.join('\n')}\n${rule}\n\n`;
}
