import { Backpressure } from '../domain/errors.js';
import type { EventStore } from '../stores/clickhouse.js';
import type { LogChunk } from './log.js';
import type { TimeWindow } from '../domain/windows.js';

export type { TimeWindow };

/** The unloaded part of the log: what back-pressure and /healthz look at. */
export interface Backlog {
  rows: number;
  bytes: number;
  /** Unix ms of the oldest unloaded commit; null when everything is loaded. */
  oldestCommittedAt: number | null;
}

/**
 * Chunk bodies kept in memory for the loader, at most: a second or two of a busy ingest (about 425
 * bytes a record), and far less than a backlog may grow to while ClickHouse is down, when the
 * loader reads what is past this from the log again.
 */
export const KEPT_BODY_BYTES = 128 * 1024 * 1024;

interface Waiter {
  pos: number;
  resolve: () => void;
}

/** Positions and time up to which every record of the log is in ClickHouse (see Freshness.loadFrontier). */
export interface LoadFrontier {
  /** Every record at or below this log position is in ClickHouse, and none can still come below it. */
  pos: number;
  /** Unix ms: every record committed before it is at or below `pos`. */
  at: number;
}

/**
 * "Has the loader passed position P?": the log tells it what each team committed, the loader what
 * ClickHouse has. A read waits until the loader has passed the team's last acknowledged record,
 * so it sees everything acknowledged before it began; a waiting read makes the loader go at once.
 */
export class Freshness {
  private readonly committedByTeam = new Map<string, number>();
  /** Unloaded chunks in position order (summaries only; bodies stay in SQLite). */
  private readonly unloaded: LogChunk[] = [];
  private head = 0;
  private rows = 0;
  private bytes = 0;
  private keptBytes = 0;
  private loadedPos: number;
  private waiters: Waiter[] = [];
  /** Set by the loader: load now, a reader is waiting. */
  wakeLoader: () => void = () => undefined;

  constructor(
    loadedPos: number,
    unloaded: readonly LogChunk[] = [],
    private readonly keepBodyBytes = KEPT_BODY_BYTES,
  ) {
    this.loadedPos = loadedPos;
    this.committed(unloaded);
  }

  /** Records chunks the group commit has just made durable. */
  committed(chunks: readonly LogChunk[]): void {
    for (const chunk of chunks) {
      if (chunk.lastPos <= this.loadedPos) continue;
      if (chunk.body) {
        if (this.keptBytes + chunk.body.length > this.keepBodyBytes) chunk.body = undefined;
        else this.keptBytes += chunk.body.length;
      }
      this.unloaded.push(chunk);
      this.rows += chunk.rows;
      this.bytes += chunk.bytes;
      this.committedByTeam.set(chunk.teamId, Math.max(this.committedByTeam.get(chunk.teamId) ?? 0, chunk.lastPos));
    }
  }

  /** The loader has every record up to `pos` in ClickHouse. */
  loaded(pos: number): void {
    if (pos <= this.loadedPos) return;
    this.loadedPos = pos;
    while (this.head < this.unloaded.length && this.unloaded[this.head]!.lastPos <= pos) {
      const chunk = this.unloaded[this.head++]!;
      this.rows -= chunk.rows;
      this.bytes -= chunk.bytes;
      if (chunk.body) {
        this.keptBytes -= chunk.body.length;
        chunk.body = undefined;
      }
    }
    if (this.head > 1024 && this.head * 2 > this.unloaded.length) {
      this.unloaded.splice(0, this.head);
      this.head = 0;
    }
    const still: Waiter[] = [];
    for (const w of this.waiters) (w.pos <= pos ? w.resolve() : still.push(w));
    this.waiters = still;
  }

  backlog(): Backlog {
    const oldest = this.unloaded[this.head];
    return { rows: this.rows, bytes: this.bytes, oldestCommittedAt: oldest ? oldest.committedAt : null };
  }

  /**
   * How far ClickHouse surely holds the log: every record at or below `pos` is loaded (chunks load
   * in order, and one being committed now gets a later position), and so is every record committed
   * before `at`.
   */
  loadFrontier(now = Date.now()): LoadFrontier {
    const oldest = this.unloaded[this.head];
    return { pos: this.loadedPos, at: oldest ? Math.min(oldest.committedAt - 1, now) : now };
  }

  /**
   * The first unloaded chunks, up to about `rows` records (at least one chunk), all of the first
   * one's format (a block is inserted in one format).
   */
  nextChunks(rows: number): LogChunk[] {
    const out: LogChunk[] = [];
    let n = 0;
    for (let i = this.head; i < this.unloaded.length; i++) {
      const chunk = this.unloaded[i]!;
      if (out.length > 0 && (n + chunk.rows > rows || chunk.format !== out[0]!.format)) break;
      out.push(chunk);
      n += chunk.rows;
    }
    return out;
  }

  /** Resolves once ClickHouse holds every record the team had acknowledged when this was called. */
  waitForTeam(teamId: string, timeoutMs: number): Promise<boolean> {
    return this.waitFor(this.awaitedBy(teamId, undefined), timeoutMs);
  }

  /**
   * The last position a read of the team's records must wait for: with `times`, of the chunks
   * holding records of event times in it (a chunk of unknown times counts); 0 when none.
   */
  private awaitedBy(teamId: string, times: TimeWindow | undefined): number {
    if (!times) return this.committedByTeam.get(teamId) ?? 0;
    let pos = 0;
    for (let i = this.head; i < this.unloaded.length; i++) {
      const chunk = this.unloaded[i]!;
      if (chunk.teamId !== teamId) continue;
      const known = chunk.eventTimes;
      if (known && (known.last < times.from || known.first >= times.to)) continue;
      pos = chunk.lastPos;
    }
    return pos;
  }

  /** Resolves true once the loader has passed `pos`, false after `timeoutMs`. */
  waitFor(pos: number, timeoutMs: number): Promise<boolean> {
    if (pos <= this.loadedPos) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        resolve(false);
      }, timeoutMs);
      const waiter: Waiter = {
        pos,
        resolve: () => {
          clearTimeout(timer);
          resolve(true);
        },
      };
      this.waiters.push(waiter);
      this.wakeLoader();
    });
  }

  /**
   * For a read: resolves once the team's acknowledged records (with `times`, those of event times
   * in it) are in ClickHouse, with the milliseconds that took (0: nothing to wait for); a 503 with
   * Retry-After when the loader cannot get there in time (ClickHouse down or far behind).
   */
  async caughtUp(teamId: string, timeoutMs: number, times?: TimeWindow): Promise<number> {
    const pos = this.awaitedBy(teamId, times);
    if (pos <= this.loadedPos) return 0;
    const started = performance.now();
    if (!(await this.waitFor(pos, timeoutMs))) throw behind(this.rows);
    return performance.now() - started;
  }
}

/** A read that cannot wait longer for the loader (ClickHouse down or far behind): 503 with Retry-After. */
export function behind(backlogRows: number): Backpressure {
  return new Backpressure(`Records acknowledged before this read are not in the event store yet (backlog ${backlogRows} records); retry shortly`, 5);
}

/** `AppDeps.readEvents`: the read session, after the team's acknowledged records are loaded. */
export function freshReads(events: EventStore, freshness: Pick<Freshness, 'caughtUp'>, waitMs: number): (teamId: string) => Promise<EventStore> {
  return async (teamId) => {
    await freshness.caughtUp(teamId, waitMs);
    return events;
  };
}

/** A read session that holds what a read counts, and how long the read waited for the loader (0: not at all). */
export interface FreshEvents {
  events: EventStore;
  waitedMs: number;
}

/**
 * `AppDeps.readEventsIn`: the read session, once the team's acknowledged records of event times in
 * `times` are loaded; records of other times do not hold the read up.
 */
export function freshReadsIn(events: EventStore, freshness: { caughtUp(teamId: string, timeoutMs: number, times?: TimeWindow): Promise<number> }, waitMs: number) {
  return async (teamId: string, times: TimeWindow): Promise<FreshEvents> => ({ events, waitedMs: await freshness.caughtUp(teamId, waitMs, times) });
}
