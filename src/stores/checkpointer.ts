/**
 * WAL checkpoints of the registry on a thread of their own. SQLite's automatic checkpoint runs in
 * the commit that crosses 1,000 WAL pages, on the event loop: it copies the pages into the
 * database file and fsyncs both files, which makes that commit slow for every request of its
 * group. Here a worker with
 * its own connection runs a PASSIVE checkpoint a few times a second while the registry changes:
 * it takes no lock a writer waits for, and the event loop never copies or syncs.
 *
 * A passive checkpoint that runs while the writer commits cannot finish the whole log, and SQLite
 * starts the WAL over only once a checkpoint has; so the writer's own automatic checkpoint stays,
 * at a higher mark (FALLBACK_PAGES): under steady load it finds the pages already copied, and if
 * this thread stops or fails, the WAL is still bounded.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { Registry } from './sqlite.js';

/** The writer's automatic checkpoint, past what this thread keeps up with: 64 MiB of 4 KiB pages. */
export const FALLBACK_PAGES = 16_384;

// CommonJS, evaluated: nothing to resolve at run time, from src/ or dist/ alike (the driver's path is passed).
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
// A checkpoint that meets a writer or another checkpointer gives up at once and tries next time.
db.pragma('busy_timeout = 0');
const version = db.prepare('PRAGMA data_version').pluck();
let seen;
let behind = false;
const timer = setInterval(() => {
  try {
    const now = version.get();
    if (now === seen && !behind) return;
    seen = now;
    const [result] = db.pragma('wal_checkpoint(PASSIVE)');
    // Frames left (a reader's snapshot, a commit meanwhile): look again next time even if nothing changes.
    behind = result.busy !== 0 || result.checkpointed < result.log;
  } catch (err) {
    behind = true;
    parentPort.postMessage({ error: { message: err.message, code: err.code } });
  }
}, workerData.intervalMs);
parentPort.on('message', () => {
  clearInterval(timer);
  db.close();
  parentPort.postMessage({ stopped: true });
});
`;

export class Checkpointer {
  private readonly worker: Worker;
  private lastError: string | undefined;
  private exited = false;

  constructor(
    db: Registry,
    private readonly logger: Logger,
    intervalMs = 200,
  ) {
    db.pragma(`wal_autocheckpoint = ${FALLBACK_PAGES}`);
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(WORKER_SOURCE, { eval: true, name: 'wal-checkpoint', workerData: { driver, file: db.name, intervalMs } });
    // Never what keeps the process alive.
    this.worker.unref();
    this.worker.on('message', (message: { error?: { message: string; code?: string } }) => {
      // Logged once per distinct failure, not every tick: the writer's own checkpoint still bounds the WAL.
      if (message.error && message.error.message !== this.lastError) {
        this.lastError = message.error.message;
        this.logger.warn({ err: message.error }, 'WAL checkpoint thread: a checkpoint failed; the writer checkpoints past 64 MiB meanwhile');
      }
    });
    this.worker.on('exit', () => (this.exited = true));
    this.worker.on('error', (err) => this.logger.error({ err }, 'WAL checkpoint thread failed; the writer checkpoints past 64 MiB'));
  }

  /** Stops the thread and closes its connection (before the registry's own, so the last close can remove the WAL). */
  async stop(): Promise<void> {
    if (this.exited) return;
    await new Promise<void>((resolve) => {
      this.worker.once('exit', () => resolve());
      this.worker.on('message', (message: { stopped?: boolean }) => {
        if (message.stopped) void this.worker.terminate();
      });
      this.worker.postMessage('stop');
    });
  }
}
