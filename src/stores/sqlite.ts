import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { SyncThread } from './sync-thread.js';

/** The registry: teams, API keys, agents, policies and alerts in one SQLite file. */
export type Registry = Database.Database;

/** Opens (creating if needed) `DATA_DIR/registry.db` in WAL mode. */
export function openRegistry(dataDir: string): Registry {
  fs.mkdirSync(dataDir, { recursive: true });
  const db = new Database(path.join(dataDir, 'registry.db'));
  // WAL lets the team CLI write while the server reads; busy_timeout makes the two wait, not fail.
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 5000');
  db.pragma('foreign_keys = ON');
  // FULL: a commit is on disk when it returns. The ingest log acknowledges records on it, and
  // NORMAL (WAL) could lose the last commits on a power loss.
  db.pragma('synchronous = FULL');
  // A memory map, so the dedup index's randomly probed level-0 tables cost no read() per page.
  db.pragma('mmap_size = 4294967296');
  // Small on purpose: a commit that splits a B-tree page scans the whole cache (SQLite's pending-byte page).
  db.pragma('cache_size = -16384');
  // Savepoints' statement journals in memory, not a temporary file opened and unlinked on the event loop per group.
  db.pragma('temp_store = MEMORY');
  return db;
}

/** Throws when the registry cannot answer a query (closed handle, unreadable file). */
export function pingRegistry(db: Registry): void {
  db.prepare('SELECT 1').get();
}

/**
 * Makes committed WAL frames durable off the main thread. The ingest log commits with
 * synchronous=NORMAL (the commit writes the WAL but does not fsync it) and then calls this, which
 * fdatasyncs the WAL file on a thread of its own (sync-thread.ts: not libuv's pool, where engine
 * queries hold threads for their whole run): the same guarantee as synchronous=FULL (every frame
 * written before the call is on disk when it resolves), but the event loop keeps parsing requests
 * during the disk flush, and one flush covers every commit made before it started. Concurrent
 * callers share flushes: a call resolves after a flush that began after the call. One per
 * registry, shared by the group commit and the loader.
 */
export function walSyncer(db: Registry, thread: SyncThread): WalSyncer {
  const walPath = `${db.name}-wal`;
  let fd: number | undefined;
  let running: Promise<void> | undefined;
  let next: Promise<void> | undefined;
  const flush = async () => {
    // The WAL file exists once the first transaction wrote it; SQLite keeps it (same inode) while open.
    fd ??= fs.openSync(walPath, 'r');
    await thread.fdatasync(fd);
  };
  const sync = () => {
    if (!running) {
      running = flush().finally(() => (running = undefined));
      return running;
    }
    // A flush is under way and may have started before this commit: queue one more after it.
    next ??= running.then(
      () => undefined,
      () => undefined,
    ).then(() => {
      next = undefined;
      running = flush().finally(() => (running = undefined));
      return running;
    });
    return next;
  };
  // With one queued, a commit made now is covered by it: nothing to gather for.
  return Object.assign(sync, { flushing: () => (next ? undefined : running) });
}

export interface WalSyncer {
  /** Resolves once every frame written before the call is on disk. */
  (): Promise<void>;
  /**
   * The flush under way (and the one queued after it), if any; it settles when the disk is idle
   * again. A commit made meanwhile is durable only after the next flush, so a group commit gathers
   * requests until then rather than committing (and paying a transaction) for each few.
   */
  flushing(): Promise<void> | undefined;
}

/**
 * Runs `work` as one transaction written without fsync (synchronous=NORMAL); the caller awaits
 * the registry's WalSyncer where the transaction must be durable. Other writes keep synchronous=FULL.
 */
export function unsyncedTransaction<T>(db: Registry, work: () => T): T {
  // Never inside another transaction on this connection (a Database transaction whose body
  // waited for I/O, src/stores/sql.ts): a savepoint in it would be rolled back after this
  // commit's records were acknowledged. Fail this commit instead; its callers retry or answer 503.
  if (db.inTransaction) throw new Error('registry: another transaction is open on this connection; not committing inside it');
  let pragmas = synchronousPragmas.get(db);
  if (!pragmas) synchronousPragmas.set(db, (pragmas = { normal: db.prepare('PRAGMA synchronous = NORMAL'), full: db.prepare('PRAGMA synchronous = FULL') }));
  pragmas.normal.run();
  try {
    return db.transaction(work)();
  } finally {
    pragmas.full.run();
  }
}

/** Prepared once per connection: unsyncedTransaction runs for every ingest commit. */
const synchronousPragmas = new WeakMap<Registry, { normal: Database.Statement; full: Database.Statement }>();

