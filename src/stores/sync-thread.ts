/**
 * fdatasync on a thread of its own, never on libuv's pool. The pool (UV_THREADPOOL_SIZE, 4 by
 * default) also runs every embedded ClickHouse query: chdb's async calls hold a pool thread for
 * as long as the engine works on them (a heavy BI query, for its whole run). With four of them
 * running, an `fs.fdatasync` queued behind them would wait for one to end, and so would every
 * acknowledgement of the ingest log. Here one worker thread does `fdatasyncSync` on request and
 * answers through its port: a message each way per flush, and nothing else ever queues on it.
 *
 * Owned by the ingest pipeline, which closes it; it does not keep the process alive while no
 * flush is pending.
 */
import { Worker } from 'node:worker_threads';

// CommonJS, evaluated: nothing to resolve at run time, from src/ or dist/ alike.
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const fs = require('node:fs');
parentPort.on('message', ({ id, fd }) => {
  try {
    fs.fdatasyncSync(fd);
    parentPort.postMessage({ id });
  } catch (err) {
    parentPort.postMessage({ id, error: { message: err.message, code: err.code, errno: err.errno, syscall: err.syscall } });
  }
});
`;

interface Pending {
  resolve: () => void;
  reject: (err: Error) => void;
}

type WorkerError = { message: string; code?: string; errno?: number; syscall?: string };

interface Thread {
  worker: Worker;
  pending: Map<number, Pending>;
}

/** The thread, started at the first flush (and again after one died); closed with its owner. */
export class SyncThread {
  private thread: Thread | undefined;
  private nextId = 0;

  /** Resolves once `fd`'s data is on disk, as fs.fdatasync, without taking a thread of libuv's pool. */
  fdatasync(fd: number): Promise<void> {
    const { worker, pending } = (this.thread ??= this.start());
    const id = this.nextId++;
    return new Promise<void>((resolve, reject) => {
      // Kept alive while a flush is pending: a caller awaiting it must not see the process exit first.
      if (pending.size === 0) worker.ref();
      pending.set(id, { resolve, reject });
      worker.postMessage({ id, fd });
    });
  }

  /** Ends the thread; a flush still pending fails. */
  async close(): Promise<void> {
    const thread = this.thread;
    this.thread = undefined;
    if (thread) await thread.worker.terminate();
  }

  private start(): Thread {
    const worker = new Worker(WORKER_SOURCE, { eval: true, name: 'fdatasync' });
    const started: Thread = { worker, pending: new Map() };
    worker.unref();
    worker.on('message', ({ id, error }: { id: number; error?: WorkerError }) => {
      const request = started.pending.get(id);
      if (!request) return;
      started.pending.delete(id);
      if (started.pending.size === 0) worker.unref();
      if (error) request.reject(Object.assign(new Error(error.message), { code: error.code, errno: error.errno, syscall: error.syscall }));
      else request.resolve();
    });
    // A thread that died fails what it held; the next flush starts another.
    const fail = (err: Error) => {
      if (this.thread === started) this.thread = undefined;
      for (const request of started.pending.values()) request.reject(err);
      started.pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the fdatasync thread exited (code ${code})`)));
    return started;
  }
}
