import { ClickHouseLogLevel, createClient, type ClickHouseClient, type ClickHouseSettings } from '@clickhouse/client';
import { createChdbConnection } from 'chdb/connection';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { sqlString } from './clickhouse-literal.js';
import type { ClickHouseConfig } from '../config.js';

/**
 * The event store: the one module the rest of the code uses to reach ClickHouse, whether the
 * embedded engine (chdb) or a server over HTTP. Values always travel as `{name:Type}` parameters.
 */
export interface EventStore {
  readonly mode: ClickHouseConfig['mode'];
  readonly database: string;
  /**
   * Runs a SELECT and returns its rows; 64-bit integers and Decimals come back as strings. No
   * settings argument: the embedded connection applies a query's settings with SET on the shared
   * session, where they would stay for every later query. A query that needs one says it in its
   * own SETTINGS clause.
   */
  query<Row>(sql: string, params?: Record<string, unknown>): Promise<Row[]>;
  /** Runs a statement that returns no rows (DDL, ALTER, INSERT ... SELECT). */
  command(sql: string, params?: Record<string, unknown>): Promise<void>;
  /** Inserts objects as JSONEachRow (small, occasional writes: migrations records). */
  insert(table: string, rows: readonly object[]): Promise<void>;
  /**
   * Inserts TabSeparated lines (the loader's blocks of log chunks written in the older TSV format) with query-level settings such as
   * insert_deduplication_token. Embedded: the bytes go to the engine as they are (no copy, parsed
   * on the engine's threads); server: the body of one HTTP request.
   */
  insertTsv(table: string, columns: readonly string[], body: Buffer, settings: Record<string, string | number>): Promise<void>;
  /**
   * Inserts RowBinary rows (src/ingest/rowbinary.ts), with settings as insertTsv. Embedded: chDB's
   * raw insert takes text formats only and its inline data fails past about 1 MiB, so the block is
   * written to a file beside the engine's folder and read with `INSERT ... FROM INFILE` (from the
   * page cache; the log holds the durable copy, so the file is not synced); server: the body of one
   * HTTP request.
   */
  insertRowBinary(table: string, columns: readonly string[], body: Buffer, settings: Record<string, string | number>): Promise<void>;
  /** Throws when the store does not answer. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Money and counts must not pass through a JS number: quote Decimals and 64-bit integers. */
const READ_SETTINGS: ClickHouseSettings = {
  output_format_json_quote_decimals: 1,
  output_format_json_quote_64bit_integers: 1,
  date_time_input_format: 'best_effort',
};

/** Failures reach our callers as errors and are logged once there; the client must not print them too. */
const CLIENT_LOG = { level: ClickHouseLogLevel.OFF };

/** Builds the client; no I/O happens until `ensureDatabase` or the first query. */
export function createEventStore(config: ClickHouseConfig): EventStore {
  if (config.mode === 'embedded') {
    const connection = embeddedConnection(config.path);
    // READ_SETTINGS are given per query (see sessionSettings), not to the client: the embedded
    // connection would prefix every statement with them as SET statements.
    const client = createClient({ connection: connection as unknown as ClientConnection, log: CLIENT_LOG });
    return clientStore(client, config, connection);
  }
  const client = createClient({
    url: config.url,
    username: config.user,
    password: config.password,
    database: config.database,
    clickhouse_settings: READ_SETTINGS,
    request_timeout: 30_000,
    log: CLIENT_LOG,
  });
  return clientStore(client, config);
}

/**
 * Creates the configured database when missing and makes it the default one. The embedded
 * connection ignores the client's `database` option, so its session is switched with USE
 * (a session setting that persists for the life of the engine).
 */
export async function ensureDatabase(store: EventStore, config: ClickHouseConfig): Promise<void> {
  if (config.mode === 'embedded') {
    await store.command(`CREATE DATABASE IF NOT EXISTS ${config.database}`);
    await store.command(`USE ${config.database}`);
    return;
  }
  // The server rejects requests naming a database that does not exist yet: create it without one.
  const bootstrap = createClient({ url: config.url, username: config.user, password: config.password, log: CLIENT_LOG });
  try {
    await bootstrap.command({ query: `CREATE DATABASE IF NOT EXISTS ${config.database}` });
  } finally {
    await bootstrap.close();
  }
}

/**
 * chdb implements the client's Connection contract but is typed against its own copy of
 * @clickhouse/client-common; the shapes are the same, the declarations are not one.
 */
function embeddedConnection(path: string): ChdbConnection {
  try {
    return createChdbConnection({ path });
  } catch (err) {
    // The engine locks its directory: the usual cause is a server (or seed script) already running.
    throw new EventStoreOpenError(
      `cannot open the embedded ClickHouse in ${path}: another process may be using it ` +
        '(one process at a time: stop the running server, or point CLICKHOUSE_URL at a ClickHouse server)',
      { cause: err },
    );
  }
}

/** The event store could not be opened at start; the message says what to do. */
export class EventStoreOpenError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'EventStoreOpenError';
  }
}

type ClientConnection = NonNullable<Parameters<typeof createClient>[0]>['connection'];
type ChdbConnection = ReturnType<typeof createChdbConnection>;

/** A setting's value as a ClickHouse literal: a number as it is, text quoted. */
function settingLiteral(value: string | number): string {
  if (typeof value !== 'number') return sqlString(value);
  if (!Number.isFinite(value)) throw new Error(`setting value ${value} is not a finite number`);
  return String(value);
}

/**
 * The files through which the embedded engine takes RowBinary blocks, in `<engine folder>-blocks`:
 * one per insert, named by the process, removed once the engine has read it. The engine locks its
 * folder to one process, so another process's file there was left by one that died mid-insert:
 * each insert removes those (a look at a folder of a file or two).
 */
const blockFiles = {
  made: new Map<string, Promise<string>>(),
  next: 0,
  async folder(enginePath: string): Promise<string> {
    let made = this.made.get(enginePath);
    if (!made) {
      const dir = `${enginePath}-blocks`;
      made = fs.promises.mkdir(dir, { recursive: true }).then(() => dir);
      this.made.set(enginePath, made);
    }
    const dir = await made;
    const own = `block-${process.pid}-`;
    for (const name of await fs.promises.readdir(dir)) if (!name.startsWith(own)) await fs.promises.rm(path.join(dir, name), { force: true, recursive: true });
    return dir;
  },
  async insert(enginePath: string, into: string, body: Buffer, settings: Record<string, string | number>, run: (sql: string) => Promise<unknown>): Promise<void> {
    // Settings inline: the embedded connection would SET them on the shared session (see query).
    const clause = Object.entries(settings)
      .map(([name, value]) => {
        if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`setting name ${JSON.stringify(name)} is not an identifier`);
        return `${name} = ${settingLiteral(value)}`;
      })
      .join(', ');
    const file = path.join(await this.folder(enginePath), `block-${process.pid}-${this.next++}.bin`);
    await fs.promises.writeFile(file, body);
    try {
      await run(`${into} FROM INFILE ${sqlString(file)}${clause ? ` SETTINGS ${clause}` : ''} FORMAT RowBinary`);
    } finally {
      await fs.promises.rm(file, { force: true });
    }
  },
};

/**
 * The settings a query of this store must carry. The embedded connection runs a query's settings
 * as SET statements before it, on the session, where they stay, each a statement for the engine to
 * run. So the embedded store's queries carry READ_SETTINGS until one of them has run, and none after:
 * a query sent before that one finished carries them too, so none runs without them. (A server
 * gets them on every request, from the client's own settings: there is no session to keep them.)
 */
function sessionSettings(embedded: boolean): { current(): ClickHouseSettings | undefined; ran(settings: ClickHouseSettings | undefined): void } {
  let set = !embedded;
  return {
    current: () => (set ? undefined : READ_SETTINGS),
    ran: (settings) => {
      if (settings) set = true;
    },
  };
}

/**
 * Each store built here is its own engine session (embedded) or client (server): the service
 * opens one for reads and one for the loader, so a read never queues behind an insert (chDB runs
 * sessions on one data path in parallel).
 */
function clientStore(client: ClickHouseClient, config: ClickHouseConfig, embedded?: ChdbConnection): EventStore {
  /** A block as the body of one HTTP request (server mode). */
  const insertOverHttp = async (table: string, columns: readonly string[], body: Buffer, settings: Record<string, string | number>, format: 'TabSeparated' | 'RowBinary') => {
    const result = await client.exec({
      query: `INSERT INTO ${table} (${columns.join(', ')}) FORMAT ${format}`,
      values: Readable.from([body], { objectMode: false }),
      clickhouse_settings: settings,
    });
    for await (const _chunk of result.stream) void _chunk;
  };
  const session = sessionSettings(embedded !== undefined);
  const command = async (sql: string, params?: Record<string, unknown>) => {
    const clickhouse_settings = session.current();
    await client.command({ query: sql, query_params: params, clickhouse_settings });
    session.ran(clickhouse_settings);
  };
  return {
    mode: config.mode,
    database: config.database,
    async query<Row>(sql: string, params?: Record<string, unknown>): Promise<Row[]> {
      const clickhouse_settings = session.current();
      const result = await client.query({ query: sql, query_params: params, format: 'JSONEachRow', clickhouse_settings });
      const rows = await result.json<Row>();
      session.ran(clickhouse_settings);
      return rows;
    },
    command,
    async insert(table: string, rows: readonly object[]): Promise<void> {
      if (rows.length === 0) return;
      const clickhouse_settings = session.current();
      await client.insert({ table, values: rows as object[], format: 'JSONEachRow', clickhouse_settings });
      session.ran(clickhouse_settings);
    },
    async insertTsv(table: string, columns: readonly string[], body: Buffer, settings: Record<string, string | number>): Promise<void> {
      if (body.length === 0) return;
      if (embedded) {
        await embedded.chdb.rawInsert({ table, columns, values: body, format: 'TSV', settings });
        return;
      }
      await insertOverHttp(table, columns, body, settings, 'TabSeparated');
    },
    async insertRowBinary(table: string, columns: readonly string[], body: Buffer, settings: Record<string, string | number>): Promise<void> {
      if (body.length === 0) return;
      if (embedded && config.mode === 'embedded') {
        await blockFiles.insert(config.path, `INSERT INTO ${table} (${columns.join(', ')})`, body, settings, (sql) => command(sql));
        return;
      }
      await insertOverHttp(table, columns, body, settings, 'RowBinary');
    },
    async ping(): Promise<void> {
      const result = await client.ping();
      if (!result.success) throw result.error;
    },
    async close(): Promise<void> {
      await client.close();
    },
  };
}

/**
 * ClickHouse's answers that mean "not now" rather than "not this": the server too busy or short of
 * memory, a timeout, a read-only replica, the network. The API answers them 503 with Retry-After,
 * as it does when ClickHouse does not answer at all; anything else it says is a fault of ours (500).
 * By number, since the embedded engine and the HTTP client word them alike ("Code: 241. ...").
 */
const UNAVAILABLE_CODES = new Set([
  159, // TIMEOUT_EXCEEDED
  160, // TOO_SLOW
  202, // TOO_MANY_SIMULTANEOUS_QUERIES
  209, // SOCKET_TIMEOUT
  210, // NETWORK_ERROR
  241, // MEMORY_LIMIT_EXCEEDED
  242, // TABLE_IS_READ_ONLY
  252, // TOO_MANY_PARTS
  279, // ALL_CONNECTION_TRIES_FAILED
  439, // CANNOT_SCHEDULE_TASK
  745, // SERVER_OVERLOADED
  999, // KEEPER_EXCEPTION
]);

/** The HTTP client's own timeout (request_timeout passed without an answer). */
const CLIENT_TIMEOUT = /^Timeout error\.$/;

/** Whether an error of the event store says ClickHouse cannot answer now (503), not that the query is wrong. */
export function eventStoreUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (CLIENT_TIMEOUT.test(err.message)) return true;
  const code = clickHouseErrorCode(err);
  return code !== undefined && UNAVAILABLE_CODES.has(code);
}

/**
 * ClickHouse's error number of a failure of the event store: the HTTP client's `code`, or the
 * engine's "Code: N." in the message; undefined when ClickHouse did not answer with an error.
 */
export function clickHouseErrorCode(err: unknown): number | undefined {
  const code = (err as { code?: unknown })?.code;
  if (typeof code === 'string' && /^\d+$/.test(code)) return Number(code);
  const match = /Code: (\d+)\./.exec(err instanceof Error ? err.message : String(err));
  return match ? Number(match[1]) : undefined;
}
