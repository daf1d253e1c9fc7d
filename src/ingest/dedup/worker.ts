/**
 * The thread that writes runs (run-file.ts) for the claim index (index.ts): sorting a frozen
 * level-0 table, or merging runs, takes seconds of CPU that must not hold the event loop. It reads
 * the registry through a read-only connection of its own (WAL: it sees what was committed, and
 * takes no lock a group commit waits for) and writes only its own new file. It answers with the
 * run's row count and its filter's words (transferred, not copied).
 */
import { parentPort } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { mergeRuns, readRun, writeRun, type ClaimRow } from './run-file.js';

/** A job of this thread: the rows of a registry table, or of runs, written as one new run. */
export type RunJob =
  | { id: number; kind: 'table'; registry: string; table: string; rowid: boolean; file: string }
  | { id: number; kind: 'merge'; sources: string[]; keys: number; file: string };

/** A job as the index makes it: the worker's id is added when it is handed over. */
export type RunJobSpec = RunJob extends infer J ? (J extends RunJob ? Omit<J, 'id'> : never) : never;

export type RunJobResult = { id: number; rows: number; words: ArrayBuffer } | { id: number; error: string };

function run(job: RunJob): { rows: number; words: Uint32Array } {
  if (job.kind === 'merge') {
    const { rows, filter } = writeRun(job.file, mergeRuns(job.sources.map(readRun)), job.keys);
    return { rows, words: filter.words };
  }
  const db = new Database(job.registry, { readonly: true, fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    const { keys } = db.prepare(`SELECT count(*) AS keys FROM ${job.table}`).get() as { keys: number };
    // A level-0 table may hold a key twice (claimed again after its day left the window): the
    // later row (higher rowid) is written last and kept.
    const order = job.rowid ? 'team_id, id, rowid' : 'team_id, id';
    const rows = db.prepare(`SELECT team_id, id, record_fp FROM ${job.table} ORDER BY ${order}`).safeIntegers(true).iterate() as Iterable<ClaimRow>;
    const written = writeRun(job.file, rows, keys);
    return { rows: written.rows, words: written.filter.words };
  } finally {
    db.close();
  }
}

parentPort?.on('message', (job: RunJob) => {
  try {
    const { rows, words } = run(job);
    const buffer = words.buffer as ArrayBuffer;
    parentPort!.postMessage({ id: job.id, rows, words: buffer } satisfies RunJobResult, [buffer]);
  } catch (err) {
    parentPort!.postMessage({ id: job.id, error: err instanceof Error ? err.message : String(err) } satisfies RunJobResult);
  }
});
