/**
 * One way to reach the registry's tables whichever database holds them: the SQLite file of a
 * single instance, or PostgreSQL shared by several. A feature's store is written once
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

/**
 * What a database's committed transactions announce to whoever listens in this process (the
 * webhook dispatcher, woken once deliveries are queued). One per Database, shared by its
 * transactions; a topic is announced only after the transaction that raised it commits.
 */
export class CommitSignals {
  private readonly listeners = new Map<string, Set<(subject: string) => void>>();

  /** Calls `fn` with the subject after each commit that announces `topic`; returns what stops it. */
  on(topic: string, fn: (subject: string) => void): () => void {
    let set = this.listeners.get(topic);
    if (!set) this.listeners.set(topic, (set = new Set()));
    set.add(fn);
    return () => set.delete(fn);
  }

  emit(topic: string, subject = ''): void {
    for (const fn of this.listeners.get(topic) ?? []) fn(subject);
  }
}

export interface Sql {
  readonly dialect: Dialect;
  /** The database this reaches, the same for a Database and its transactions: what caches are kept per. */
  readonly origin: object;
  /** The database's signals (the same for a Database and its transactions). */
  readonly signals: CommitSignals;
  all<T = Record<string, unknown>>(statement: Statement, params?: readonly unknown[]): Promise<T[]>;
  get<T = Record<string, unknown>>(statement: Statement, params?: readonly unknown[]): Promise<T | undefined>;
  /** Runs a statement; resolves to the number of rows it changed. */
  run(statement: Statement, params?: readonly unknown[]): Promise<number>;
  /**
   * Calls `fn` once what was written is committed (at once outside a transaction; never if the
   * transaction rolls back): caches and wake-ups must not act on what others cannot read yet.
   */
  afterCommit(fn: () => void): void;
}

export interface Database extends Sql {
  /** `fn`'s statements commit together if it resolves, and none of them if it throws. */
  transaction<T>(fn: (sql: Sql) => Promise<T>): Promise<T>;
  /** Closes the connection (SQLite) or the pool (PostgreSQL), once what is in progress is done. */
  close(): Promise<void>;
}

/** A transaction on SQLite waited for I/O: see the comment at the top. */
export class TransactionSpannedIo extends Error {
  constructor() {
    super('a SQLite transaction awaited something other than its own statements; it was rolled back');
    this.name = 'TransactionSpannedIo';
  }
}

/**
 * A statement of a store that exists only in the shared store (the partitions of the ingest
 * claims): SQLite cannot prepare it, so running it there fails at once, naming why.
 */
export function postgresOnly(text: string): Statement {
  return { sqlite: `SELECT "this statement is written for PostgreSQL only" FROM nowhere`, postgres: text };
}

/** A read that locks the rows it finds on PostgreSQL (SQLite's writes take turns anyway). */
export function forUpdate(text: string): Statement {
  return { sqlite: text, postgres: `${numberedPlaceholders(text)} FOR UPDATE` };
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

/** Statements prepared once per connection, by text: stores run the same few again and again. */
const preparedOf = new WeakMap<Registry, Map<string, BetterSqlite3.Statement<unknown[]>>>();

function prepared(db: Registry, statement: Statement): BetterSqlite3.Statement<unknown[]> {
  let statements = preparedOf.get(db);
  if (!statements) preparedOf.set(db, (statements = new Map()));
  const text = textOf(statement, 'sqlite');
  let found = statements.get(text);
  if (!found) statements.set(text, (found = db.prepare<unknown[]>(text)));
  return found;
}

/**
 * A store's logic that must run both inside SQLite's synchronous group commit and, awaited, on any
 * Sql (a management transaction; PostgreSQL): written once as a generator that yields each
 * statement it needs and gets its result back. `perform` runs it on a Sql, `performNow` on the
 * SQLite connection, within the current turn. Read results with `yield* all(…)`, `get`, `run`.
 */
export type Steps<T> = Generator<Step, T, unknown>;
export type Step =
  | { readonly kind: 'all' | 'get' | 'run'; readonly statement: Statement; readonly params: readonly unknown[] }
  /** A topic announced on the database's CommitSignals once the transaction commits. */
  | { readonly kind: 'signal'; readonly topic: string; readonly subject: string }
  | { readonly kind: 'dialect' }
  | { readonly kind: 'afterCommit'; readonly fn: () => void }
  /** Something else to wait for inside the transaction (PostgreSQL only: SQLite's never waits). */
  | { readonly kind: 'await'; readonly fn: () => Promise<unknown> };

export function* all<T = Record<string, unknown>>(statement: Statement, params: readonly unknown[] = []): Steps<T[]> {
  return (yield { kind: 'all', statement, params }) as T[];
}
export function* get<T = Record<string, unknown>>(statement: Statement, params: readonly unknown[] = []): Steps<T | undefined> {
  return (yield { kind: 'get', statement, params }) as T | undefined;
}
/** Resolves to the number of rows the statement changed. */
export function* run(statement: Statement, params: readonly unknown[] = []): Steps<number> {
  return (yield { kind: 'run', statement, params }) as number;
}
/** Announces `topic` (of `subject`) on the database's CommitSignals once the transaction commits. */
export function* signal(topic: string, subject = ''): Steps<void> {
  yield { kind: 'signal', topic, subject };
}
/** Which database the steps run on, for a value that one of them cannot hold as the other does. */
export function* dialectOf(): Steps<Dialect> {
  return (yield { kind: 'dialect' }) as Dialect;
}
/**
 * Sql.afterCommit. Under performNow: when the event loop next turns, by which time the caller's
 * synchronous transaction is over; if it rolled back, `fn` runs all the same, so it must be
 * harmless then (a wake-up that finds nothing new).
 */
export function* afterCommit(fn: () => void): Steps<void> {
  yield { kind: 'afterCommit', fn };
}

/**
 * Runs `steps` in a savepoint of the transaction they run in: if they throw, what they wrote is
 * rolled back and the error goes on, and the transaction stays usable (on PostgreSQL a failed
 * statement otherwise aborts the whole transaction).
 */
export function* savepoint<T>(steps: Steps<T>): Steps<T> {
  yield* run('SAVEPOINT steps');
  let result: T;
  try {
    result = yield* steps;
  } catch (err) {
    yield* run('ROLLBACK TO SAVEPOINT steps');
    yield* run('RELEASE SAVEPOINT steps');
    throw err;
  }
  yield* run('RELEASE SAVEPOINT steps');
  return result;
}

/** Steps that need no statement: a synchronous result, for an interface whose other side does. */
// eslint-disable-next-line require-yield
export function* done<T>(value: T): Steps<T> {
  return value;
}

/**
 * Waits for `fn` inside the transaction. Only for steps that run on PostgreSQL: under performNow
 * (SQLite's synchronous transactions) it throws.
 */
export function* awaited<T>(fn: () => Promise<T>): Steps<T> {
  return (yield { kind: 'await', fn }) as T;
}

/** Runs `steps` on `sql`, one statement at a time. */
export async function perform<T>(sql: Sql, steps: Steps<T>): Promise<T> {
  let next = steps.next();
  while (!next.done) {
    const step = next.value;
    let result: unknown;
    try {
      if (step.kind === 'signal') sql.afterCommit(() => sql.signals.emit(step.topic, step.subject));
      else if (step.kind === 'dialect') result = sql.dialect;
      else if (step.kind === 'afterCommit') sql.afterCommit(step.fn);
      else if (step.kind === 'await') result = await step.fn();
      else result = await sql[step.kind](step.statement, step.params);
    } catch (err) {
      next = steps.throw(err);
      continue;
    }
    next = steps.next(result);
  }
  return next.value;
}

/**
 * Runs `steps` on the SQLite connection now, synchronously, as one transaction (a savepoint inside
 * the caller's, when one is open).
 */
export function performNow<T>(db: Registry, steps: Steps<T>): T {
  const committed: (() => void)[] = [];
  const result = db.transaction(() => stepNow(db, steps, committed))();
  // Not when the steps threw: their savepoint rolled back.
  for (const fn of committed) setImmediate(fn);
  return result;
}

/**
 * Runs `steps` now as part of the transaction open on the connection (unsyncedTransaction's), with
 * no savepoint of their own: if they throw, the caller's transaction must fail whole, as the group
 * commit's does. A savepoint there would cost two statements and a copy of every page the group
 * changes (SQLite's statement journal).
 */
export function performInTransaction<T>(db: Registry, steps: Steps<T>): T {
  if (!db.inTransaction) throw new Error('performInTransaction: no transaction is open on this connection');
  const committed: (() => void)[] = [];
  const result = stepNow(db, steps, committed);
  // The caller commits synchronously, before any of these runs.
  for (const fn of committed) setImmediate(fn);
  return result;
}

/** The statements of `steps`, one at a time, on the connection now. */
function stepNow<T>(db: Registry, steps: Steps<T>, committed: (() => void)[]): T {
  let next = steps.next();
  while (!next.done) {
    const step = next.value;
    let result: unknown;
    try {
      if (step.kind === 'signal') committed.push(() => sqliteDatabase(db).signals.emit(step.topic, step.subject));
      else if (step.kind === 'dialect') result = 'sqlite';
      // The caller's transaction is synchronous: it is over when the event loop turns.
      else if (step.kind === 'afterCommit') committed.push(step.fn);
      else if (step.kind === 'await') throw new Error('a synchronous SQLite transaction cannot wait for anything');
      else {
        const statement = prepared(db, step.statement);
        const params = step.params as unknown[];
        result = step.kind === 'all' ? statement.all(...params) : step.kind === 'get' ? statement.get(...params) : statement.run(...params).changes;
      }
    } catch (err) {
      next = steps.throw(err);
      continue;
    }
    next = steps.next(result);
  }
  return next.value;
}

/**
 * The Database of a SQLite connection: one per connection, whoever asks, so that every caller's
 * transactions and statements take turns in one queue (a second queue on the same connection could
 * read or write inside another's open transaction while it awaits its own statements).
 */
export function sqliteDatabase(db: Registry): Database {
  let found = databases.get(db);
  if (!found) databases.set(db, (found = newSqliteDatabase(db)));
  return found;
}

const databases = new WeakMap<Registry, Database>();

function newSqliteDatabase(db: Registry): Database {
  const signals = new CommitSignals();
  const sql: Sql = {
    dialect: 'sqlite',
    origin: db,
    signals,
    all: async <T>(statement: Statement, params: readonly unknown[] = []) => prepared(db, statement).all(...(params as unknown[])) as T[],
    get: async <T>(statement: Statement, params: readonly unknown[] = []) => prepared(db, statement).get(...(params as unknown[])) as T | undefined,
    run: async (statement: Statement, params: readonly unknown[] = []) => prepared(db, statement).run(...(params as unknown[])).changes,
    afterCommit: (fn) => fn(),
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
    signals,
    all: (s, p) => inTurn(() => sql.all(s, p)),
    get: (s, p) => inTurn(() => sql.get(s, p)),
    run: (s, p) => inTurn(() => sql.run(s, p)),
    afterCommit: (fn) => fn(),
    close: () =>
      inTurn(async () => {
        db.close();
      }),
    transaction: <T>(fn: (sql: Sql) => Promise<T>) =>
      inTurn(
        () =>
          new Promise<T>((resolve, reject) => {
            db.exec('BEGIN IMMEDIATE');
            let settled = false;
            const committed: (() => void)[] = [];
            const end = (commit: boolean) => {
              settled = true;
              clearImmediate(watch);
              if (commit) {
                db.exec('COMMIT');
                for (const fn of committed) fn();
              } else if (db.inTransaction) db.exec('ROLLBACK');
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
              signals,
              all: (s, p) => (settled ? Promise.reject(new TransactionSpannedIo()) : sql.all(s, p)),
              get: (s, p) => (settled ? Promise.reject(new TransactionSpannedIo()) : sql.get(s, p)),
              run: (s, p) => (settled ? Promise.reject(new TransactionSpannedIo()) : sql.run(s, p)),
              afterCommit: (fn) => committed.push(fn),
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

/** The Sql of a pool, or of one connection (a transaction begun on it: a migration's). */
export function postgresSql(client: pg.Pool | pg.PoolClient, origin: object, signals = new CommitSignals()): Sql {
  const query = async <T>(statement: Statement, params: readonly unknown[]) =>
    client.query(postgresText(statement), params as unknown[]) as unknown as Promise<pg.QueryResult<T & pg.QueryResultRow>>;
  return {
    dialect: 'postgres',
    origin,
    signals,
    all: async <T>(statement: Statement, params: readonly unknown[] = []) => (await query<T>(statement, params)).rows as T[],
    get: async <T>(statement: Statement, params: readonly unknown[] = []) => (await query<T>(statement, params)).rows[0] as T | undefined,
    run: async (statement: Statement, params: readonly unknown[] = []) => (await query(statement, params)).rowCount ?? 0,
    afterCommit: (fn) => fn(),
  };
}

export function postgresDatabase(pool: SharedStore): Database {
  const signals = new CommitSignals();
  return {
    ...postgresSql(pool, pool, signals),
    close: () => pool.end(),
    transaction: async (fn) => {
      const committed: (() => void)[] = [];
      const result = await inTransaction(pool, (client) => fn({ ...postgresSql(client, pool, signals), afterCommit: (f) => committed.push(f) }));
      for (const f of committed) f();
      return result;
    },
  };
}
