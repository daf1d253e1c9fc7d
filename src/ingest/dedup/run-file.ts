/**
 * A run: an immutable, sorted set of claimed (team, id) keys with their prints, in a SQLite file
 * of its own beside the registry, with its Bloom filter (filter.ts) stored in the same file.
 *
 * Why a file of its own: a run is written once, in key order (sequential pages), by a worker
 * thread (worker.ts) without touching the registry's WAL or its write lock; it is registered in
 * the registry's manifest (`ingest_runs`) only once it is complete and synced, and dropping it
 * (expiry, or after a merge) is an unlink, not a DROP TABLE that reads every page of it.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { keyHash, RunFilter } from './filter.js';

/** A claimed key as stored: the print is 64 bits (log.ts ContentPrint), read as bigint. */
export interface ClaimRow {
  team_id: string;
  id: string;
  record_fp: bigint | null;
}

/**
 * Writes `rows` (in key order; a repeated key keeps its last row) as the run file `file`, with a
 * filter sized for `keys`, and syncs it (file and folder) before returning: a run is registered
 * only once it would survive a power loss.
 */
export function writeRun(file: string, rows: Iterable<ClaimRow>, keys: number): { rows: number; filter: RunFilter } {
  fs.rmSync(file, { force: true });
  const db = new Database(file);
  const filter = RunFilter.sized(keys);
  let written = 0;
  try {
    // No journal and no syncs while writing: an unfinished file is never registered (and is
    // removed at the next start); the whole file is synced once, below.
    db.pragma('journal_mode = OFF');
    db.pragma('synchronous = OFF');
    db.pragma('cache_size = -65536');
    db.exec(
      `CREATE TABLE claims (team_id TEXT NOT NULL, id TEXT NOT NULL, record_fp INTEGER, PRIMARY KEY (team_id, id)) WITHOUT ROWID;
       CREATE TABLE filter (words BLOB NOT NULL);`,
    );
    const insert = db.prepare('INSERT OR REPLACE INTO claims (team_id, id, record_fp) VALUES (?, ?, ?)');
    db.exec('BEGIN');
    let last = '';
    for (const row of rows) {
      insert.run(row.team_id, row.id, row.record_fp);
      filter.add(keyHash(row.team_id, row.id));
      const key = `${row.team_id}\u0000${row.id}`;
      if (key !== last) written++;
      last = key;
    }
    db.prepare('INSERT INTO filter (words) VALUES (?)').run(filter.bytes());
    db.exec('COMMIT');
  } finally {
    db.close();
  }
  syncFile(file);
  syncFile(path.dirname(file));
  return { rows: written, filter };
}

function syncFile(target: string): void {
  const fd = fs.openSync(target, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** The rows of run files in key order, read in the order given (for a merge). */
export function* readRun(file: string): Generator<ClaimRow> {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    yield* db.prepare('SELECT team_id, id, record_fp FROM claims ORDER BY team_id, id').safeIntegers(true).iterate() as Iterable<ClaimRow>;
  } finally {
    db.close();
  }
}

/**
 * The rows of several runs as one key-ordered stream. Runs are given oldest first; a key held by
 * more than one (never, as claims go: a key is claimed once within its day) comes once per run,
 * the newest last, so writeRun keeps the newest.
 */
export function* mergeRuns(sources: Iterable<ClaimRow>[]): Generator<ClaimRow> {
  const iterators = sources.map((s) => s[Symbol.iterator]());
  const heads = iterators.map((it) => it.next());
  for (;;) {
    let min = -1;
    for (let i = 0; i < heads.length; i++) {
      const head = heads[i]!;
      if (head.done) continue;
      if (min < 0) {
        min = i;
        continue;
      }
      const best = heads[min]!.value as ClaimRow;
      const row = head.value;
      if (row.team_id < best.team_id || (row.team_id === best.team_id && row.id < best.id)) min = i;
    }
    if (min < 0) return;
    yield heads[min]!.value as ClaimRow;
    heads[min] = iterators[min]!.next();
  }
}

/** A run opened for look-ups on the main thread: its filter in memory, its keys probed in the file. */
export class RunReader {
  private readonly db: Database.Database;
  private readonly probe: Database.Statement;
  readonly filter: RunFilter;

  constructor(
    readonly file: string,
    filter?: RunFilter,
  ) {
    this.db = new Database(file, { readonly: true, fileMustExist: true });
    this.probe = this.db.prepare('SELECT record_fp FROM claims WHERE team_id = ? AND id = ?').safeIntegers(true);
    this.filter = filter ?? RunFilter.fromBytes((this.db.prepare('SELECT words FROM filter').get() as { words: Buffer }).words);
  }

  /** The print of a key the run holds (null: claimed without one), or undefined: ask the filter first. */
  get(teamId: string, id: string): { fp: bigint | null } | undefined {
    const row = this.probe.get(teamId, id) as { record_fp: bigint | null } | undefined;
    return row && { fp: row.record_fp };
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
