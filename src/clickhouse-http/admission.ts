/**
 * How many BI queries run at once, and with how much memory: per key holder, per team and for the
 * process, and a memory total that every running BI query's bound is carved from. A team's share
 * is at most half the process's places (rounded up; never all of them when there are two or more),
 * so one tenant never holds every place. A query over its key's or its team's share is refused at
 * once; one that finds the process full waits for a place, and places that free up go to the
 * waiting teams in turn (one query of each team, round and round), not to whoever asks next.
 */
import { ClickHouseException } from './protocol.js';

export interface AdmissionLimits {
  /** BI queries of one key holder (a key and the keys rotated from it) running at once. */
  perHolder: number;
  /** BI queries of one team running at once, whatever its keys (at most half of `total`, rounded up). */
  perTeam: number;
  /** BI queries of the whole process running at once. */
  total: number;
  /** Memory one BI query may use. */
  maxMemoryBytes: number;
  /** Memory all running BI queries together may use: each query's bound is reserved from it. */
  totalMemoryBytes: number;
  /** How long a query waits for a place when the process is full before it is refused (10 s unless set). */
  queueWaitMs?: number;
}

/** A running query's place: its memory bound, and what gives the place back (once). */
export interface Admitted {
  memoryBytes: number;
  release(): void;
}

/** Below this share of the per-query bound, a query waits for memory rather than starting with too little to be useful. */
const SMALLEST_GRANT = 4;

const busy = (message: string) => new ClickHouseException(202, 'TOO_MANY_SIMULTANEOUS_QUERIES', message);

interface Waiter {
  holder: string;
  team: string;
  admitted(place: Admitted): void;
  timer: NodeJS.Timeout;
}

/** A team's share of `total` places: half, rounded up, and fewer than all of them when there are two or more. */
export function teamShare(perTeam: number, total: number): number {
  return Math.max(1, Math.min(perTeam, Math.ceil(total / 2), total > 1 ? total - 1 : 1));
}

export class BiAdmission {
  /** Queries running or waiting, by holder and by team. */
  private readonly held = new Map<string, number>();
  private runningTotal = 0;
  private memoryInUse = 0;
  /** Waiting queries by team, teams in the order they are served (the one served goes last). */
  private readonly waiting = new Map<string, Waiter[]>();
  readonly perTeam: number;

  constructor(private readonly limits: AdmissionLimits) {
    this.perTeam = teamShare(limits.perTeam, limits.total);
  }

  /** Takes a place for one query (waiting for one while the process is full), or refuses it with ClickHouse's 202 saying which bound is full. */
  async admit(holderId: string, teamId: string): Promise<Admitted> {
    const { perHolder, total } = this.limits;
    const holder = `holder ${holderId}`;
    const team = `team ${teamId}`;
    if ((this.held.get(holder) ?? 0) >= perHolder) throw busy(`Too many simultaneous queries for this key. Maximum: ${perHolder}`);
    if ((this.held.get(team) ?? 0) >= this.perTeam) throw busy(`Too many simultaneous queries for this team. Maximum: ${this.perTeam}`);
    this.count(holder, team, 1);
    const memoryBytes = this.waiting.size === 0 ? this.freeMemory() : undefined;
    if (memoryBytes !== undefined && this.runningTotal < total) return this.start(holder, team, memoryBytes);
    const wait = this.limits.queueWaitMs ?? 10_000;
    return new Promise<Admitted>((resolve, reject) => {
      const waiter: Waiter = {
        holder,
        team,
        admitted: resolve,
        timer: setTimeout(() => {
          const queue = this.waiting.get(team)!;
          queue.splice(queue.indexOf(waiter), 1);
          if (queue.length === 0) this.waiting.delete(team);
          this.count(holder, team, -1);
          reject(busy(`Too many simultaneous queries. Maximum: ${total}, or their memory (${this.limits.totalMemoryBytes} bytes in all) is in use; none ended within ${wait / 1000} s`));
        }, wait),
      };
      const queue = this.waiting.get(team);
      if (queue) queue.push(waiter);
      else this.waiting.set(team, [waiter]);
    });
  }

  /** The memory a query starting now gets, or undefined when too little is left. */
  private freeMemory(): number | undefined {
    const { maxMemoryBytes, totalMemoryBytes } = this.limits;
    const memoryBytes = Math.min(maxMemoryBytes, totalMemoryBytes - this.memoryInUse);
    return memoryBytes < maxMemoryBytes / SMALLEST_GRANT ? undefined : memoryBytes;
  }

  private count(holder: string, team: string, by: number): void {
    for (const id of [holder, team]) {
      const left = (this.held.get(id) ?? 0) + by;
      if (left > 0) this.held.set(id, left);
      else this.held.delete(id);
    }
  }

  private start(holder: string, team: string, memoryBytes: number): Admitted {
    this.runningTotal++;
    this.memoryInUse += memoryBytes;
    let released = false;
    return {
      memoryBytes,
      release: () => {
        if (released) return;
        released = true;
        this.count(holder, team, -1);
        this.runningTotal--;
        this.memoryInUse -= memoryBytes;
        this.serveWaiting();
      },
    };
  }

  /** Free places to the waiting teams in turn: the first team's first query, then that team goes last. */
  private serveWaiting(): void {
    while (this.waiting.size > 0 && this.runningTotal < this.limits.total) {
      const memoryBytes = this.freeMemory();
      if (memoryBytes === undefined) return;
      const [team, queue] = this.waiting.entries().next().value as [string, Waiter[]];
      const waiter = queue.shift()!;
      this.waiting.delete(team);
      if (queue.length > 0) this.waiting.set(team, queue);
      clearTimeout(waiter.timer);
      waiter.admitted(this.start(waiter.holder, waiter.team, memoryBytes));
    }
  }
}
