import { perform, performInTransaction, type Database, type Steps } from '../stores/sql.js';
import { unsyncedTransaction, type Registry, type WalSyncer } from '../stores/sqlite.js';

/**
 * Where a group's transaction runs: the SQLite registry (synchronously, written without fsync, then
 * a WAL flush that the answers wait for), or a store several instances share (PostgreSQL: awaited,
 * durable at its commit).
 */
export interface CommitStore {
  transact<T>(steps: () => Steps<T>): Promise<{ result: T; durable: Promise<void> }>;
  /** Errors after which the same group may simply be committed again (deadlocks, changed policies). */
  retryable(err: unknown): boolean;
  /**
   * A flush under way that a group committed now could not join (it would wait for the next):
   * the group commit gathers requests until it ends. Absent: durable at commit (PostgreSQL).
   */
  flushing?(): Promise<void> | undefined;
}

/** Commits to the registry, durable once `syncWal` flushed the WAL after them. */
export function sqliteCommits(db: Registry, syncWal: WalSyncer): CommitStore {
  return {
    transact: async (steps) => {
      // The group's steps run in this transaction itself: a failure rolls the whole group back.
      const result = unsyncedTransaction(db, () => performInTransaction(db, steps()));
      return { result, durable: syncWal() };
    },
    retryable: () => false,
    flushing: () => syncWal.flushing(),
  };
}

/** PostgreSQL's deadlock_detected and serialization_failure: nothing was committed, try again. */
const RETRYABLE_SQLSTATES = new Set(['40P01', '40001']);

/** A group commit whose transactions run in PostgreSQL, shared by several instances. */
export function sharedCommits(db: Database): CommitStore {
  return {
    transact: async (steps) => ({ result: await db.transaction((sql) => perform(sql, steps())), durable: Promise.resolve() }),
    retryable: (err) =>
      (err instanceof Error && err.name === 'StalePolicies') || RETRYABLE_SQLSTATES.has(String((err as { code?: unknown } | undefined)?.code ?? '')),
  };
}

