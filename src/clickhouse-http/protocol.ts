/**
 * ClickHouse's HTTP interface over the embedded engine: what every ClickHouse client speaks
 * (`@clickhouse/client`, clickhouse-connect, Grafana, Metabase, Superset). A query arrives as `GET
 * ?query=`, as a POST body, or both (the two joined by a newline: an INSERT's data follows its
 * statement); `database`, `default_format` (or `X-ClickHouse-Format`), `param_<name>` values for
 * `{name:Type}` placeholders and any other parameter as a setting, as ClickHouse reads them. Each
 * query runs on an engine session of its own, so its settings end with it; a SELECT's result is
 * streamed as the engine produces it, never held whole. Errors are ClickHouse's own text and code
 * (`X-ClickHouse-Exception-Code`).
 *
 * This module is the protocol only: who may run what is the caller's (`ClickHouseHttpPolicy`).
 */
import crypto from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import zlib from 'node:zlib';
import { Session, type ChdbQueryStream } from 'chdb';
import { ClickHouseException } from './exception.js';
import { leadingKeyword } from './statement.js';

export { ClickHouseException } from './exception.js';
export { leadingKeyword } from './statement.js';

/** A query as the client sent it, parsed. */
export interface ClickHouseRequest {
  /** The statement, with an INSERT's data after it. */
  sql: string;
  database: string | undefined;
  format: string;
  /** Values for `{name:Type}` placeholders (`param_name`), as text. */
  params: Record<string, string>;
  /** Settings the client asked for. */
  settings: Record<string, string>;
  credentials: { user: string; password: string };
  queryId: string;
}

/**
 * What the engine session runs before the client's statement, and whether the statement may run
 * at all: the caller's rules. Throwing a ClickHouseException refuses the query with that error.
 */
export interface ClickHouseHttpPolicy {
  prepare(request: ClickHouseRequest): Promise<PreparedQuery> | PreparedQuery;
}

export interface PreparedQuery {
  /** Statements run first on the query's session (settings, filters). */
  setup: string[];
  /**
   * Run after the setup, on the same session (`run` answers TabSeparated, with the query's
   * parameters bound): throws to refuse the query, or answers the statement to run in its place
   * (the text it checked).
   */
  check?: (run: (sql: string) => Promise<string>) => Promise<string | void>;
  /** Called once the query has ended, however it ended. */
  release?: () => void;
}

export interface ClickHouseHttpOptions {
  /** The data directory of the process's embedded engine. */
  enginePath: string;
  policy: ClickHouseHttpPolicy;
  /** Largest request body taken (an INSERT's data is part of it). */
  maxBodyBytes: number;
}

/** URL parameters that are the protocol's own, not settings. */
const PROTOCOL_PARAMETERS = new Set([
  'query',
  'database',
  'default_format',
  'query_id',
  'user',
  'password',
  'quota_key',
  'session_id',
  'session_timeout',
  'session_check',
  'compress',
  'decompress',
  'buffer_size',
  'wait_end_of_query',
  'enable_http_compression',
  'http_zlib_compression_level',
  'send_progress_in_http_headers',
  'http_headers_progress_interval_ms',
  'http_response_buffer_size',
  'http_wait_end_of_query',
  'cancel_http_readonly_queries_on_client_close',
  'role',
]);

const SETTING_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The Content-Type ClickHouse sends for a format's result. */
function contentType(format: string): string {
  const f = format.toLowerCase();
  if (f.startsWith('json')) return 'application/json; charset=UTF-8';
  if (f.startsWith('csv')) return 'text/csv; charset=UTF-8; header=absent';
  if (f.startsWith('tabseparated') || f.startsWith('tsv')) return 'text/tab-separated-values; charset=UTF-8';
  if (f === 'xml') return 'application/xml; charset=UTF-8';
  return f.startsWith('pretty') || f === 'vertical' || f === 'markdown' ? 'text/plain; charset=UTF-8' : 'application/octet-stream';
}

/** Credentials as ClickHouse clients send them: basic auth, X-ClickHouse-User/Key, or user/password parameters. */
function credentialsOf(req: IncomingMessage, url: URL): { user: string; password: string } {
  const header = req.headers.authorization;
  if (header && /^basic\s+/i.test(header)) {
    const decoded = Buffer.from(header.replace(/^basic\s+/i, ''), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon < 0 ? { user: decoded, password: '' } : { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
  }
  const user = req.headers['x-clickhouse-user'];
  const key = req.headers['x-clickhouse-key'];
  if (user !== undefined || key !== undefined) return { user: String(user ?? 'default'), password: String(key ?? '') };
  return { user: url.searchParams.get('user') ?? 'default', password: url.searchParams.get('password') ?? '' };
}

async function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  const encoding = String(req.headers['content-encoding'] ?? '').toLowerCase();
  const source = encoding === 'gzip' ? req.pipe(zlib.createGunzip()) : encoding === 'deflate' ? req.pipe(zlib.createInflate()) : req;
  for await (const chunk of source as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw new ClickHouseException(307, 'TOO_MANY_BYTES', `The request body is larger than ${maxBytes} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** Parses a request as ClickHouse's HTTP handler does. */
export async function parseRequest(req: IncomingMessage, url: URL, maxBodyBytes: number): Promise<ClickHouseRequest> {
  const body = req.method === 'POST' ? await readBody(req, maxBodyBytes) : Buffer.alloc(0);
  const inUrl = url.searchParams.get('query');
  const sql = inUrl === null ? body.toString('utf8') : body.length > 0 ? `${inUrl}\n${body.toString('utf8')}` : inUrl;
  if (sql.trim() === '') throw new ClickHouseException(62, 'SYNTAX_ERROR', 'Empty query');
  const params: Record<string, string> = {};
  const settings: Record<string, string> = {};
  for (const [name, value] of url.searchParams) {
    if (name.startsWith('param_')) params[name.slice('param_'.length)] = value;
    else if (!PROTOCOL_PARAMETERS.has(name)) {
      if (!SETTING_NAME.test(name)) throw new ClickHouseException(115, 'UNKNOWN_SETTING', `Unknown setting '${name}'`);
      settings[name] = value;
    }
  }
  const headerFormat = req.headers['x-clickhouse-format'];
  const headerDatabase = req.headers['x-clickhouse-database'];
  return {
    sql,
    database: url.searchParams.get('database') ?? (typeof headerDatabase === 'string' ? headerDatabase : undefined),
    format: url.searchParams.get('default_format') ?? (typeof headerFormat === 'string' ? headerFormat : 'TabSeparated'),
    params,
    settings,
    credentials: credentialsOf(req, url),
    queryId: url.searchParams.get('query_id') || crypto.randomUUID(),
  };
}

/**
 * Where the embedded engine's defaults differ from a ClickHouse server's, the server's: clients
 * read 64-bit integers in JSON as strings, as a server sends them.
 */
const SERVER_DEFAULTS = ['SET output_format_json_quote_64bit_integers = 1'];

/** Statements whose result the engine can stream (DDL and INSERT cannot be). */
const STREAMABLE = new Set(['SELECT', 'WITH']);

/** A ClickHouse string literal. */
export const sqlString = (value: string) => `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** Where the client asked for it and said it takes it: gzip or deflate. */
function compressorFor(req: IncomingMessage, url: URL): { encoding: string; stream: zlib.Gzip | zlib.Deflate } | undefined {
  if (url.searchParams.get('enable_http_compression') !== '1') return undefined;
  const accepted = String(req.headers['accept-encoding'] ?? '').toLowerCase();
  const level = Number(url.searchParams.get('http_zlib_compression_level') ?? 3);
  const options = { level: Number.isInteger(level) && level >= 1 && level <= 9 ? level : 3 };
  if (/\bgzip\b/.test(accepted)) return { encoding: 'gzip', stream: zlib.createGzip(options) };
  if (/\bdeflate\b/.test(accepted)) return { encoding: 'deflate', stream: zlib.createDeflate(options) };
  return undefined;
}

/** Answers one request of ClickHouse's HTTP interface. Never throws: failures are ClickHouse error answers. */
export async function serveClickHouseHttp(req: IncomingMessage, res: ServerResponse, options: ClickHouseHttpOptions): Promise<void> {
  // Under /clickhouse, express has already cut the prefix off req.url.
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (url.pathname === '/ping' && (req.method === 'GET' || req.method === 'HEAD')) {
    res.writeHead(200, { 'Content-Type': 'text/plain; charset=UTF-8' }).end('Ok.\n');
    return;
  }
  let session: Session | undefined;
  let stream: ChdbQueryStream | undefined;
  let prepared: PreparedQuery | undefined;
  res.on('close', () => stream?.cancel());
  try {
    if (url.pathname !== '/' && url.pathname !== '') throw new ClickHouseException(0, 'NOT_FOUND', `There is no handler ${url.pathname}`);
    if (req.method !== 'GET' && req.method !== 'POST') throw new ClickHouseException(1, 'UNSUPPORTED_METHOD', `HTTP method ${req.method} is not supported`);
    const request = await parseRequest(req, url, options.maxBodyBytes);
    prepared = await options.policy.prepare(request);
    session = new Session(options.enginePath);
    const statements = [
      ...SERVER_DEFAULTS,
      ...(request.database ? [`USE ${/^[A-Za-z_][A-Za-z0-9_]*$/.test(request.database) ? request.database : `\`${request.database.replace(/`/g, '\\`')}\``}`] : []),
      ...prepared.setup,
    ];
    for (const statement of statements) await session.queryAsync(statement, { format: 'TabSeparated' });
    const open = session;
    // The check sees the query as it will run: its placeholders bound.
    const checked = await prepared.check?.(async (sql) =>
      (Object.keys(request.params).length > 0 ? await open.queryBindAsync(sql, request.params, { format: 'TabSeparated' }) : await open.queryAsync(sql, { format: 'TabSeparated' })).text(),
    );
    const headers: Record<string, string> = {
      'X-ClickHouse-Query-Id': request.queryId,
      'X-ClickHouse-Format': request.format,
      'X-ClickHouse-Timezone': 'UTC',
      'X-ClickHouse-Server-Display-Name': 'spendscope',
      'Content-Type': contentType(request.format),
    };
    const hasParams = Object.keys(request.params).length > 0;
    const sql = checked ?? request.sql;
    if (!STREAMABLE.has(leadingKeyword(sql))) {
      // DDL, INSERT and the rest answer at once, with whatever result they have.
      const result = hasParams ? await session.queryBindAsync(sql, request.params, { format: request.format }) : await session.queryAsync(sql, { format: request.format });
      const bytes = Buffer.from(result.bytes());
      headers['X-ClickHouse-Summary'] = summary(result.rowsRead ?? 0, result.bytesRead ?? 0, 0);
      send(req, res, url, 200, headers, bytes);
      return;
    }
    stream = hasParams ? session.queryStreamBind(sql, request.params, { format: request.format }) : session.queryStream(sql, { format: request.format });
    const chunks = stream[Symbol.asyncIterator]();
    // The first chunk decides between a result and an error answer (a query that fails at once).
    const first = await chunks.next();
    headers['X-ClickHouse-Summary'] = summary(0, 0, 0);
    const compressor = compressorFor(req, url);
    if (compressor) headers['Content-Encoding'] = compressor.encoding;
    res.writeHead(200, headers);
    const sink = compressor ? compressor.stream : res;
    if (compressor) compressor.stream.pipe(res);
    try {
      for (let chunk = first; !chunk.done; chunk = await chunks.next()) {
        if (res.destroyed) break;
        if (!sink.write(Buffer.from(chunk.value.raw()))) await new Promise((resolve) => sink.once('drain', resolve));
      }
    } catch (err) {
      // Mid-stream, as ClickHouse does: the error text ends the body (the status is already sent).
      sink.write(`\n${ClickHouseException.from(err).text}`);
    }
    sink.end();
  } catch (err) {
    const exception = ClickHouseException.from(err);
    if (res.headersSent) {
      res.end();
      return;
    }
    send(req, res, url, exception.status, { 'Content-Type': 'text/plain; charset=UTF-8', 'X-ClickHouse-Exception-Code': String(exception.code) }, Buffer.from(exception.text));
  } finally {
    stream?.cancel();
    session?.close();
    prepared?.release?.();
  }
}

function summary(readRows: number, readBytes: number, resultRows: number): string {
  return JSON.stringify({
    read_rows: String(readRows),
    read_bytes: String(readBytes),
    written_rows: '0',
    written_bytes: '0',
    total_rows_to_read: '0',
    result_rows: String(resultRows),
    result_bytes: '0',
  });
}

function send(req: IncomingMessage, res: ServerResponse, url: URL, status: number, headers: Record<string, string>, body: Buffer): void {
  const compressor = compressorFor(req, url);
  if (!compressor) {
    res.writeHead(status, { ...headers, 'Content-Length': String(body.length) }).end(body);
    return;
  }
  res.writeHead(status, { ...headers, 'Content-Encoding': compressor.encoding });
  compressor.stream.pipe(res);
  compressor.stream.end(body);
}

/** The settings a client asked for, as SET statements on the query's own session. */
export function settingStatements(settings: Record<string, string>): string[] {
  return Object.entries(settings).map(([name, value]) => `SET ${name} = ${sqlString(value)}`);
}
