/**
 * One way to reach the registry's tables whichever database holds them: the SQLite file of a
 * single instance, or PostgreSQL shared by several (issue 30). A feature's store is written once
 * against `Database`; its SQL is written once with `?` placeholders where the dialects read it
 * alike, and side by side (`{ sqlite, postgres }`) where they differ.
 *
 * Transactions. On PostgreSQL a transaction holds a connection of the pool, and row locks order
 * the instances. On SQLite there is one connection, so transactions take turns, and a transaction
 * must not wait for anything but its own statements: they run synchronously, so its whole body
 * runs before the event loop turns, and the group commit (which writes from timers and I/O
 * callbacks, on the same connection) can never find it half done. One that awaits real I/O is
 * rolled back and refused, loudly, rather than left open across a turn of the loop.
 */
import type BetterSqlite3 from 'better-sqlite3';
import type pg from 'pg';
import type { Registry } from './sqlite.js';
import { inTransaction, type SharedStore } from './postgres.js';

export type Dialect = 'sqlite' | 'postgres';

/**
 * A statement with `?` placeholders, or one per dialect where they differ, each written in its
 * own dialect's placeholders (`?` for SQLite, `$1, $2, …` for PostgreSQL, which may then use `?`
 * as an operator).
 */
export type Statement = string | { readonly sqlite: string; readonly postgres: string };

export interface Sql {
  readonly dialect: Dialect;
  /** The database this reaches, the same for a Database and its transactions: what caches are kept per. */
  readonly origin: object;
  all<T = Record<string, unknown>>(statement: Statement, params?: readonly unknown[]): Promise<T[]>;
  get<T = Record<string, unknown>>(statement: Statement, params?: readonly unknown[]): Promise<T | undefined>;
  /** Runs a statement; resolves to the number of rows it changed. */
  run(statement: Statement, params?: readonly unknown[]): Promise<number>;
}

export interface Database extends Sql {
  /** `fn`'s statements commit together if it resolves, and none of them if it throws. */
  transaction<T>(fn: (sql: Sql) => Promise<T>): Promise<T>;
}

/** A transaction on SQLite waited for I/O: see the comment at the top. */
export class TransactionSpannedIo extends Error {
  constructor() {
    super('a SQLite transaction awaited something other than its own statements; it was rolled back');
    this.name = 'TransactionSpannedIo';
  }
}

function textOf(statement: Statement, dialect: Dialect): string {
  return typeof statement === 'string' ? statement : statement[dialect];
}

/** PostgreSQL's text of a statement: a shared one with its `?` numbered; its own as written. */
function postgresText(statement: Statement): string {
  return typeof statement === 'string' ? numberedPlaceholders(statement) : statement.postgres;
}

/** `?` placeholders as PostgreSQL's `$1, $2, …`, leaving quoted text, identifiers and comments alone. */
export function numberedPlaceholders(sql: string): string {
  let out = '';
  let n = 0;
  for (let i = 0; i < sql.length; i++) {
    const ch = sql[i]!;
    const close = ch === "'" || ch === '"' ? ch : ch === '-' && sql[i + 1] === '-' ? '\n' : ch === '/' && sql[i + 1] === '*' ? '*/' : null;
    if (close) {
      const end = sql.indexOf(close, i + (close === '*/' ? 2 : 1));
      const stop = end === -1 ? sql.length : end + close.length;
      out += sql.slice(i, stop);
      i = stop - 1;
    } else out += ch === '?' ? `$${++n}` : ch;
  }
  return out;
}

export function sqliteDatabase(db: Registry): Database {
  const statements = new Map<string, BetterSqlite3.Statement<unknown[]>>();
  const prepared = (statement: Statement) => {
    const text = textOf(statement, 'sqlite');
    let found = statements.get(text);
    if (!found) statements.set(text, (found = db.prepare<unknown[]>(text)));
    return found;
  };
  const sql: Sql = {
    dialect: 'sqlite',
    origin: db,
    all: async <T>(statement: Statement, params: readonly unknown[] = []) => prepared(statement).all(...(params as unknown[])) as T[],
    get: async <T>(statement: Statement, params: readonly unknown[] = []) => prepared(statement).get(...(params as unknown[])) as T | undefined,
    run: async (statement: Statement, params: readonly unknown[] = []) => prepared(statement).run(...(params as unknown[])).changes,
  };
  // Transactions take turns; statements outside one wait for the one in progress, never join it.
  let turn: Promise<unknown> = Promise.resolve();
  const inTurn = <T>(fn: () => Promise<T>): Promise<T> => {
    const result = turn.then(fn, fn);
    turn = result.catch(() => {});
    return result;
  };
  return {
    dialect: 'sqlite',
    origin: db,
    all: (s, p) => inTurn(() => sql.all(s, p)),
    get: (s, p) => inTurn(() => sql.get(s, p)),
    run: (s, p) => inTurn(() => sql.run(s, p)),
    transaction: <T>(fn: (sql: Sql) => Promise<T>) =>
      inTurn(
        () =>
          new Promise<T>((resolve, reject) => {
            db.exec('BEGIN IMMEDIATE');
            let settled = false;
            const end = (commit: boolean) => {
              settled = true;
              clearImmediate(watch);
              if (commit) db.exec('COMMIT');
              else if (db.inTransaction) db.exec('ROLLBACK');
            };
            // The loop turned with the body still running: it waits for I/O (or for itself, by
            // calling the Database instead of its `sql`). Roll back now, before other code can
            // write into the open transaction, free the turn, and refuse its later statements.
            const watch = setImmediate(() => {
              if (settled) return;
              end(false);
              reject(new TransactionSpannedIo());
            });
            const guarded: Sql = {
              dialect: 'sqlite',
              origin: db,
              all: (s, p) => (settled ? Promise.reject(new TransactionSpannedIo()) : sql.all(s, p)),
              get: (s, p) => (settled ? Promise.reject(new TransactionSpannedIo()) : sql.get(s, p)),
              run: (s, p) => (settled ? Promise.reject(new TransactionSpannedIo()) : sql.run(s, p)),
            };
            Promise.resolve()
              .then(() => fn(guarded))
              .then(
                (result) => {
                  if (settled) return;
                  try {
                    end(true);
                    resolve(result);
                  } catch (err) {
                    end(false);
                    reject(err);
                  }
                },
                (err) => {
                  if (settled) return;
                  end(false);
                  reject(err);
                },
              );
          }),
      ),
  };
}

function postgresSql(client: pg.Pool | pg.PoolClient, origin: object): Sql {
  const query = async <T>(statement: Statement, params: readonly unknown[]) =>
    client.query(postgresText(statement), params as unknown[]) as unknown as Promise<pg.QueryResult<T & pg.QueryResultRow>>;
  return {
    dialect: 'postgres',
    origin,
    all: async <T>(statement: Statement, params: readonly unknown[] = []) => (await query<T>(statement, params)).rows as T[],
    get: async <T>(statement: Statement, params: readonly unknown[] = []) => (await query<T>(statement, params)).rows[0] as T | undefined,
    run: async (statement: Statement, params: readonly unknown[] = []) => (await query(statement, params)).rowCount ?? 0,
  };
}

export function postgresDatabase(pool: SharedStore): Database {
  return {
    ...postgresSql(pool, pool),
    transaction: (fn) => inTransaction(pool, (client) => fn(postgresSql(client, pool))),
  };
}
