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
import fs from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import zlib from 'node:zlib';
import { Session, type ChdbQueryStream } from 'chdb';
import { ClickHouseException } from './exception.js';
import { leadingKeyword, outputFormat, singleStatement } from './statement.js';
import { sqlString } from '../stores/clickhouse-literal.js';

export { sqlString };

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
  /**
   * An INSERT's data in a binary format (RowBinary, Native), kept as bytes apart from `sql`: only
   * where the options give `binaryInsertFolder`.
   */
  data?: Buffer;
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
  /** Rows and bytes read are not told (X-ClickHouse-Summary): they count rows the caller may not see. */
  hideReadCounts?: boolean;
}

export interface ClickHouseHttpOptions {
  /** The data directory of the process's embedded engine. */
  enginePath: string;
  policy: ClickHouseHttpPolicy;
  /** Largest request body taken (an INSERT's data is part of it). */
  maxBodyBytes: number;
  /**
   * Where an INSERT's binary data (RowBinary, Native: the statement in the URL, the data as the
   * body) is written for the engine to read with `FROM INFILE`; the statement and the data cannot
   * travel as one text. Unset (the service's own /clickhouse, whose keys are read-only): such a
   * body is read as text, as any other.
   */
  binaryInsertFolder?: string;
}

/** An INSERT naming a binary input format at its end: its data cannot be joined to it as text. */
const BINARY_INSERT = /^\s*INSERT\b[\s\S]*\bFORMAT\s+(RowBinary\w*|Native)\s*;?\s*$/i;

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

/**
 * The Content-Type a server sends for a format's result: the output format's own (IOutputFormat::
 * getContentType), as the engine lists it in system.formats under the session's settings
 * (JSONEachRow is application/x-ndjson, CSVWithNames text/csv with header=present, and so on).
 */
async function contentType(session: Session, format: string): Promise<string> {
  try {
    const found = (await session.queryAsync(`SELECT content_type FROM system.formats WHERE lower(name) = lower(${sqlString(format)}) ORDER BY name = ${sqlString(format)} DESC LIMIT 1`, { format: 'TabSeparatedRaw' })).text().trim();
    if (found) return found;
  } catch {
    // An unknown format: the query itself will say so.
  }
  return 'text/plain; charset=UTF-8';
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

/**
 * The fields of a multipart/form-data body, as ClickHouse's HTTPHandler reads one (HTMLForm with an
 * ExternalTablesHandler): each field is a parameter like those of the URL; a part with a file name
 * is external data for a temporary table, which this interface does not take.
 */
async function formFields(body: Buffer, type: string): Promise<[string, string][]> {
  let form: FormData;
  try {
    form = await new Response(new Uint8Array(body), { headers: { 'content-type': type } }).formData();
  } catch (err) {
    throw new ClickHouseException(27, 'CANNOT_PARSE_INPUT_ASSERTION_FAILED', `Cannot read the multipart/form-data body: ${err instanceof Error ? err.message : String(err)}`);
  }
  const fields: [string, string][] = [];
  for (const [name, value] of form) {
    if (typeof value !== 'string') throw new ClickHouseException(48, 'NOT_IMPLEMENTED', `External data for query processing ('${name}') is not supported by this interface`);
    fields.push([name, value]);
  }
  return fields;
}

/** Parses a request as ClickHouse's HTTP handler does. */
export async function parseRequest(req: IncomingMessage, url: URL, maxBodyBytes: number, binaryInserts = false): Promise<ClickHouseRequest> {
  const body = req.method === 'POST' ? await readBody(req, maxBodyBytes) : Buffer.alloc(0);
  const type = String(req.headers['content-type'] ?? '');
  const multipart = /^multipart\/form-data\b/i.test(type);
  // URL parameters first, then a form's fields: where a name repeats, the first is taken.
  const fields: [string, string][] = [...url.searchParams, ...(multipart ? await formFields(body, type) : [])];
  const first = (name: string) => fields.find(([n]) => n === name)?.[1];
  const queries = fields.filter(([n]) => n === 'query').map(([, v]) => v);
  // Multipart: the query is the 'query' fields joined; otherwise the URL's query, a newline and the body.
  const inUrl = first('query');
  const binary = binaryInserts && !multipart && inUrl !== undefined && body.length > 0 && BINARY_INSERT.test(inUrl);
  const sql = multipart ? queries.join('') : inUrl === undefined ? body.toString('utf8') : body.length > 0 && !binary ? `${inUrl}\n${body.toString('utf8')}` : inUrl;
  if (sql.trim() === '') throw new ClickHouseException(62, 'SYNTAX_ERROR', 'Empty query');
  const params: Record<string, string> = {};
  const settings: Record<string, string> = {};
  for (const [name, value] of fields) {
    if (name.startsWith('param_')) {
      const param = name.slice('param_'.length);
      if (!(param in params)) params[param] = value;
    } else if (!PROTOCOL_PARAMETERS.has(name)) {
      if (!SETTING_NAME.test(name)) throw new ClickHouseException(115, 'UNKNOWN_SETTING', `Unknown setting '${name}'`);
      settings[name] = value;
    }
  }
  const headerFormat = req.headers['x-clickhouse-format'];
  const headerDatabase = req.headers['x-clickhouse-database'];
  return {
    sql,
    database: first('database') ?? (typeof headerDatabase === 'string' ? headerDatabase : undefined),
    format: first('default_format') ?? (typeof headerFormat === 'string' ? headerFormat : 'TabSeparated'),
    params,
    settings,
    credentials: credentialsOf(req, url),
    queryId: first('query_id') || crypto.randomUUID(),
    ...(binary ? { data: body } : {}),
  };
}

/**
 * Where the embedded engine's defaults differ from a ClickHouse server's, the server's: clients
 * read 64-bit integers in JSON as strings, as a server sends them.
 */
const SERVER_DEFAULTS = ['SET output_format_json_quote_64bit_integers = 1'];

/**
 * Formats whose result is one document that ends with the run's statistics and
 * rows_before_limit_at_least: the engine writes those right only when it runs the query whole, so
 * these are answered whole (their size bounded by the policy), as clients read them whole anyway.
 */
export const WHOLE_DOCUMENT_FORMATS = new Set(['JSON', 'JSONStrings', 'JSONCompact', 'JSONCompactStrings', 'JSONColumnsWithMetadata', 'XML']);

/** Statements whose result the engine can stream (DDL and INSERT cannot be). */
const STREAMABLE = new Set(['SELECT', 'WITH']);


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

/**
 * Query parameters as the session's own (`SET param_<name> = '<text>'`): the engine then reads each
 * value exactly as a server reads `param_<name>`, in the escaped (TSV) text form of its declared
 * type (`\'`, `\t`, `\N` for NULL, quoted elements of arrays, tuples and maps). chdb's own
 * binding (queryBind) escapes a string value once more, so `co\'n` would arrive as `co\\'n`.
 */
function parameterStatements(params: Record<string, string>): string[] {
  return Object.entries(params).map(([name, value]) => {
    const setting = /^\w+$/.test(name) ? `param_${name}` : `\`param_${name.replace(/\\/g, '\\\\').replace(/`/g, '\\`')}\``;
    return `SET ${setting} = ${sqlString(value)}`;
  });
}

/** The format the statement's own FORMAT clause names, when it has one (never read in an INSERT's data). */
function statementFormat(sql: string): string | undefined {
  try {
    return leadingKeyword(sql) === 'INSERT' ? undefined : outputFormat(singleStatement(sql));
  } catch {
    return undefined;
  }
}

/** The per-response tag of a server's mid-stream exception block: 16 random lowercase letters and digits. */
function exceptionTag(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  return Array.from(crypto.randomBytes(16), (byte) => alphabet[byte % alphabet.length]).join('');
}

/**
 * An error after the status was sent, framed as a 25.11+ server frames it
 * (WriteBufferFromHTTP1ServerResponse::cancelWithException): `\r\n__exception__\r\n<tag>\r\n`,
 * the message ending in a newline, `<its length in bytes> <tag>\r\n__exception__\r\n`.
 */
export function exceptionBlock(tag: string, message: string): Buffer {
  const text = message.endsWith('\n') ? message : `${message}\n`;
  return Buffer.from(`\r\n__exception__\r\n${tag}\r\n${text}${Buffer.byteLength(text)} ${tag}\r\n__exception__\r\n`);
}

/** Answers one request of ClickHouse's HTTP interface. Never throws: failures are ClickHouse error answers. */
export async function serveClickHouseHttp(req: IncomingMessage, res: ServerResponse, options: ClickHouseHttpOptions): Promise<void> {
  // Under /clickhouse, express has already cut the prefix off req.url.
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (url.pathname === '/ping' && (req.method === 'GET' || req.method === 'HEAD')) {
    res.writeHead(200, { 'Content-Type': 'text/plain; charset=UTF-8' }).end('Ok.\n');
    return;
  }
  const tag = exceptionTag();
  let session: Session | undefined;
  let stream: ChdbQueryStream | undefined;
  let prepared: PreparedQuery | undefined;
  /** An INSERT's binary data, written for the engine to read (binaryInsertFolder). */
  let dataFile: string | undefined;
  // A client that goes away ends its query at once: the engine stream is cancelled and the write
  // loop stops waiting, so the query's slot is released (finally) without waiting for a drain.
  let gone = false;
  const clientGone = new Promise<void>((resolve) =>
    res.once('close', () => {
      if (!res.writableFinished) gone = true;
      stream?.cancel();
      resolve();
    }),
  );
  try {
    if (url.pathname !== '/' && url.pathname !== '') throw new ClickHouseException(0, 'NOT_FOUND', `There is no handler ${url.pathname}`);
    if (req.method !== 'GET' && req.method !== 'POST') throw new ClickHouseException(1, 'UNSUPPORTED_METHOD', `HTTP method ${req.method} is not supported`);
    const request = await parseRequest(req, url, options.maxBodyBytes, options.binaryInsertFolder !== undefined);
    prepared = await options.policy.prepare(request);
    session = new Session(options.enginePath);
    const statements = [
      ...SERVER_DEFAULTS,
      ...parameterStatements(request.params),
      ...(request.database ? [`USE ${/^[A-Za-z_][A-Za-z0-9_]*$/.test(request.database) ? request.database : `\`${request.database.replace(/`/g, '\\`')}\``}`] : []),
      ...prepared.setup,
    ];
    for (const statement of statements) await session.queryAsync(statement, { format: 'TabSeparated' });
    const open = session;
    // The check sees the query as it will run: its placeholders bound (the session holds the parameters).
    const checked = await prepared.check?.(async (sql) => (await open.queryAsync(sql, { format: 'TabSeparated' })).text());
    // What runs is what the policy checked, when it answers one.
    let sql = checked ?? request.sql;
    if (request.data && options.binaryInsertFolder) {
      dataFile = path.join(options.binaryInsertFolder, `insert-${request.queryId.replace(/[^\w-]/g, '_')}-${crypto.randomBytes(6).toString('hex')}.bin`);
      await fs.promises.mkdir(options.binaryInsertFolder, { recursive: true });
      await fs.promises.writeFile(dataFile, request.data);
      sql = sql.replace(/\bFORMAT\s+(\w+)\s*;?\s*$/i, (_all, format: string) => `FROM INFILE ${sqlString(dataFile!)} FORMAT ${format}`);
    }
    // The statement's own FORMAT clause names the result's format, as on a server.
    const format = statementFormat(sql) ?? request.format;
    const headers: Record<string, string> = {
      'X-ClickHouse-Query-Id': request.queryId,
      'X-ClickHouse-Format': format,
      'X-ClickHouse-Timezone': 'UTC',
      'X-ClickHouse-Server-Display-Name': 'spendscope',
      'X-ClickHouse-Exception-Tag': tag,
      'Content-Type': await contentType(open, format),
    };
    if (!STREAMABLE.has(leadingKeyword(sql)) || WHOLE_DOCUMENT_FORMATS.has(format)) {
      // DDL, INSERT and the rest answer at once, with whatever result they have; a JSON or XML
      // document too, whose statistics and rows_before_limit_at_least only the whole run knows.
      const result = await session.queryAsync(sql, { format: request.format });
      const bytes = Buffer.from(result.bytes());
      headers['X-ClickHouse-Summary'] = prepared.hideReadCounts ? summary(0, 0, 0) : summary(result.rowsRead ?? 0, result.bytesRead ?? 0, 0);
      send(req, res, url, 200, headers, bytes);
      return;
    }
    stream = session.queryStream(sql, { format: request.format });
    if (gone) stream.cancel();
    const chunks = stream[Symbol.asyncIterator]();
    // The first chunk decides between a result and an error answer (a query that fails at once).
    const first = await chunks.next();
    // A server sends the summary with the headers, before the result: the counts so far.
    headers['X-ClickHouse-Summary'] = summary(0, 0, 0);
    const compressor = compressorFor(req, url);
    if (compressor) headers['Content-Encoding'] = compressor.encoding;
    res.writeHead(200, headers);
    const sink = compressor ? compressor.stream : res;
    if (compressor) compressor.stream.pipe(res);
    try {
      for (let chunk = first; !chunk.done && !gone; chunk = await chunks.next()) {
        if (!sink.write(Buffer.from(chunk.value.raw())) && !gone) {
          await Promise.race([new Promise((resolve) => sink.once('drain', resolve)), clientGone]);
        }
      }
    } catch (err) {
      if (!gone) breakWithException(res, compressor?.stream, exceptionBlock(tag, ClickHouseException.from(err).text));
      return;
    }
    if (!gone) sink.end();
  } catch (err) {
    const exception = ClickHouseException.from(err);
    if (res.headersSent) {
      res.end();
      return;
    }
    send(
      req,
      res,
      url,
      exception.status,
      { 'Content-Type': 'text/plain; charset=UTF-8', 'X-ClickHouse-Exception-Code': String(exception.code), 'X-ClickHouse-Exception-Tag': tag },
      Buffer.from(exception.text),
    );
  } finally {
    stream?.cancel();
    session?.close();
    prepared?.release?.();
    if (dataFile) await fs.promises.rm(dataFile, { force: true });
  }
}

/**
 * Ends a started answer with the exception block and without the last chunk of the chunked
 * encoding, as a server does: the body is cut, so a client that knows nothing of the block still
 * sees a failed transfer rather than a complete one.
 */
function breakWithException(res: ServerResponse, compressor: zlib.Gzip | zlib.Deflate | undefined, block: Buffer): void {
  res.shouldKeepAlive = false;
  const cut = () => res.socket?.end();
  if (!compressor) {
    res.write(block);
    cut();
    return;
  }
  compressor.write(block);
  compressor.flush(() => setImmediate(cut));
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
