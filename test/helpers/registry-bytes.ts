import { execFileSync } from 'node:child_process';
import type { Registry } from '../../src/stores/sqlite.js';

/**
 * The registry's files as they are on disk now, read by another process: a close() of any
 * descriptor of the file in this one would drop SQLite's POSIX locks on it (and let other
 * processes corrupt the shared registry).
 */
export function registryBytes(db: Registry): Buffer {
  const read = 'for (const f of process.argv.slice(1)) { try { process.stdout.write(require("fs").readFileSync(f)); } catch {} }';
  return execFileSync(process.execPath, ['-e', read, ...['', '-wal', '-shm'].map((suffix) => `${db.name}${suffix}`)], { maxBuffer: 2 * 1024 ** 3 });
}
