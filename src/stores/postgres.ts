/**
 * PostgreSQL, the shared store of several instances (DATABASE_URL): the state one
 * process keeps in its SQLite registry today moves here feature by feature, behind the same store
 * interface, so every instance reads and writes one ledger with row locks.
 *
 * Step 1 (this file): the connection pool and the error it maps to, and the migrations of
 * schema/postgres, applied safely when several instances start at once.
 */
import pg from 'pg';

export type SharedStore = pg.Pool;

/**
 * bigint columns hold Unix ms, sequence numbers and counts, far below 2^53: this store's pools read
 * them as numbers, as SQLite gives them (pg's default is a string), and refuse one that a number
 * cannot hold rather than round it. Money is `numeric`, which stays a string, never a number.
 */
const TYPES = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    if (oid !== pg.types.builtins.INT8 || format === 'binary') return pg.types.getTypeParser(oid, format as 'text');
    return (text: string) => {
      const value = Number(text);
      if (!Number.isSafeInteger(value)) throw new RangeError(`a bigint of ${text} is past what a number holds exactly`);
      return value;
    };
  }) as pg.CustomTypesConfig['getTypeParser'],
};

export interface SharedStoreOptions {
  /** Connections of this instance; each instance holds its own pool. */
  max?: number;
  /** A statement running longer is cancelled (ms): a stuck lock must not hold a request forever. */
  statementTimeoutMs?: number;
  /** How long to wait for a connection from the pool, or to open one (ms). */
  connectTimeoutMs?: number;
}

/** A pool on DATABASE_URL. Connections are opened on first use; `ping` tells whether it answers. */
export function openSharedStore(url: string, options: SharedStoreOptions = {}): SharedStore {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5_000,
    statement_timeout: options.statementTimeoutMs ?? 30_000,
    application_name: 'spendscope',
    types: TYPES,
  });
  // An idle connection that the server closes (a restart) emits here; the pool drops it and opens
  // another on the next query. Without a listener the process would exit on it.
  pool.on('error', () => {});
  return pool;
}

/**
 * Runs `fn` on one connection checked out of the pool. The pool listens for errors only on idle
 * connections: a server that goes away (a restart, a failover) under a checked-out one emits an
 * 'error' that, with no listener, would end the process. Here it is heard while the connection is
 * out (the caller learns of it from its query), and a connection that failed is destroyed rather
 * than returned.
 */
export async function withConnection<T>(
  store: SharedStore,
  fn: (client: pg.PoolClient) => Promise<T>,
  /** Destroyed whatever happens: a session whose locks must end with it. */
  destroy = false,
): Promise<T> {
  const client = await store.connect();
  let failed: unknown;
  const onError = (err: unknown) => {
    failed = err;
  };
  client.on('error', onError);
  try {
    return await fn(client);
  } catch (err) {
    if (sharedStoreUnavailable(err)) failed ??= err;
    throw err;
  } finally {
    client.off('error', onError);
    client.release(destroy || failed !== undefined ? true : undefined);
  }
}

/** Runs `fn` in a transaction on one connection: committed if it returns, rolled back if it throws. */
export async function inTransaction<T>(store: SharedStore, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  return withConnection(store, async (client) => {
    await client.query('BEGIN');
    try {
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw err;
    }
  });
}

/** SQLSTATE classes and codes of a server that is gone, restarting, or too busy to answer now. */
const UNAVAILABLE_STATES = /^(08|53|57P0[1-3]$|57014$)/;
const UNAVAILABLE_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);
const UNAVAILABLE_MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection ended|Query read timeout)/;

/**
 * Whether an error says PostgreSQL cannot answer now (down, restarting, out of connections, a
 * statement past its timeout), as opposed to a fault of the request or of the code: the API
 * answers the first with 503 and Retry-After, and the client's retry finds it back.
 */
export function sharedStoreUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && (UNAVAILABLE_STATES.test(code) || UNAVAILABLE_ERRNOS.has(code))) return true;
  if (err instanceof AggregateError) return err.errors.some(sharedStoreUnavailable);
  return UNAVAILABLE_MESSAGES.test(err.message);
}
