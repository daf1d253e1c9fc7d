/** Figures the benchmark scripts print: percentiles of latencies, medians of rounds, CPU time. */
import fs from 'node:fs';

/** The p-th percentile of values sorted ascending (nearest rank below; 0 for none). */
export const percentile = (sorted: readonly number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

/** The median (the mean of the two middle values for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** user+system CPU seconds of a process so far, from /proc (Linux; 0 where it cannot be read). */
export function cpuSeconds(pid: number): number {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/**
 * user+system CPU seconds so far of each thread of a process, by thread id, with the thread's
 * name (Linux; empty where /proc cannot be read). Threads that ended in between are not counted.
 */
export function threadCpuSeconds(pid: number): Map<number, { name: string; seconds: number }> {
  const threads = new Map<number, { name: string; seconds: number }>();
  let tids: string[];
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return threads;
  }
  for (const tid of tids) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      threads.set(Number(tid), { name, seconds: (Number(fields[11]) + Number(fields[12])) / 100 });
    } catch {
      // The thread ended while being read.
    }
  }
  return threads;
}

/**
 * The CPU of a Node process between two threadCpuSeconds samples, in three parts: the main thread
 * (the event loop), the other threads Node names after itself (libuv's pool, where an embedded
 * engine's queries run, worker threads, V8's collector threads), and threads with names of their
 * own (an embedded engine's pools).
 */
export function threadSplit(
  pid: number,
  before: Map<number, { name: string; seconds: number }>,
  after: Map<number, { name: string; seconds: number }>,
): { eventLoop: number; nodeThreads: number; namedThreads: number } {
  const split = { eventLoop: 0, nodeThreads: 0, namedThreads: 0 };
  for (const [tid, { name, seconds }] of after) {
    const used = seconds - (before.get(tid)?.seconds ?? 0);
    if (tid === pid) split.eventLoop += used;
    else if (name.startsWith('node') || name === 'MainThread') split.nodeThreads += used;
    else split.namedThreads += used;
  }
  return split;
}
