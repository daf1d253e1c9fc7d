/**
 * How many BI queries run at once, and with how much memory: per key holder, per team and for the
 * process, and a memory total that every running BI query's bound is carved from. One key, or one
 * team with many keys, can then hold only its share, and BI as a whole never takes the memory the
 * ingest path and the API need.
 */
import { ClickHouseException } from './protocol.js';

export interface AdmissionLimits {
  /** BI queries of one key holder (a key and the keys rotated from it) running at once. */
  perHolder: number;
  /** BI queries of one team running at once, whatever its keys. */
  perTeam: number;
  /** BI queries of the whole process running at once. */
  total: number;
  /** Memory one BI query may use. */
  maxMemoryBytes: number;
  /** Memory all running BI queries together may use: each query's bound is reserved from it. */
  totalMemoryBytes: number;
}

/** A running query's place: its memory bound, and what gives the place back (once). */
export interface Admitted {
  memoryBytes: number;
  release(): void;
}

/** Below this share of the per-query bound, a query waits for memory rather than starting with too little to be useful. */
const SMALLEST_GRANT = 4;

const busy = (message: string) => new ClickHouseException(202, 'TOO_MANY_SIMULTANEOUS_QUERIES', message);

export class BiAdmission {
  private readonly running = new Map<string, number>();
  private runningTotal = 0;
  private memoryInUse = 0;

  constructor(private readonly limits: AdmissionLimits) {}

  /** Takes a place for one query, or refuses it with ClickHouse's 202 saying which bound is full. */
  admit(holderId: string, teamId: string): Admitted {
    const { perHolder, perTeam, total, maxMemoryBytes, totalMemoryBytes } = this.limits;
    const holder = `holder ${holderId}`;
    const team = `team ${teamId}`;
    if ((this.running.get(holder) ?? 0) >= perHolder) throw busy(`Too many simultaneous queries for this key. Maximum: ${perHolder}`);
    if ((this.running.get(team) ?? 0) >= perTeam) throw busy(`Too many simultaneous queries for this team. Maximum: ${perTeam}`);
    if (this.runningTotal >= total) throw busy(`Too many simultaneous queries. Maximum: ${total}`);
    const memoryBytes = Math.min(maxMemoryBytes, totalMemoryBytes - this.memoryInUse);
    if (memoryBytes < maxMemoryBytes / SMALLEST_GRANT) {
      throw busy(`The memory for BI queries (${totalMemoryBytes} bytes in all) is in use by running queries; retry when one ends`);
    }
    this.running.set(holder, (this.running.get(holder) ?? 0) + 1);
    this.running.set(team, (this.running.get(team) ?? 0) + 1);
    this.runningTotal++;
    this.memoryInUse += memoryBytes;
    let released = false;
    return {
      memoryBytes,
      release: () => {
        if (released) return;
        released = true;
        for (const id of [holder, team]) {
          const left = this.running.get(id)! - 1;
          if (left > 0) this.running.set(id, left);
          else this.running.delete(id);
        }
        this.runningTotal--;
        this.memoryInUse -= memoryBytes;
      },
    };
  }
}
