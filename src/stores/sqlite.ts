import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';

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
  return db;
}

/** Throws when the registry cannot answer a query (closed handle, unreadable file). */
export function pingRegistry(db: Registry): void {
  db.prepare('SELECT 1').get();
}
