import type { Severity } from '../domain/alerts.js';

/** What this process last wrote of an open alert: enough to update it again without reading it. */
export interface WrittenAlert {
  id: string;
  /** Its count as written: the update applies only while the row still has it. */
  count: number;
  samples: string;
  /** Whether `samples` holds MAX_SAMPLES ids already (then it never changes). */
  samplesFull: boolean;
  lastSeen: number;
  observed: string | null;
  severity: Severity;
}

/** At most this many alerts are remembered, over all teams: past it, the memory starts again. */
const MAX_REMEMBERED = 10_000;

/**
 * The open alerts an evaluator wrote last, by team and dedup key. Each update names the count it
 * read, so a row changed since (another instance, a write rolled back, a status change) is read
 * again: the memory only saves reads, it is never trusted over the row.
 */
export class WrittenAlerts {
  private readonly teams = new Map<string, TeamAlerts>();
  private remembered = 0;

  /** The team's alerts (by team first: no key string is built per occurrence). */
  of(teamId: string): TeamAlerts {
    let team = this.teams.get(teamId);
    if (!team) this.teams.set(teamId, (team = new TeamAlerts(this)));
    return team;
  }

  /** Counts an alert remembered anew; a full memory starts again first. */
  admit(): void {
    if (this.remembered >= MAX_REMEMBERED) this.clear();
    this.remembered++;
  }

  released(): void {
    this.remembered--;
  }

  /** Forgets every alert (after a rolled-back group). */
  clear(): void {
    for (const team of this.teams.values()) team.alerts.clear();
    this.remembered = 0;
  }
}

/** One team's remembered alerts, by dedup key. */
export class TeamAlerts {
  readonly alerts = new Map<string, WrittenAlert>();

  constructor(private readonly all: WrittenAlerts) {}

  get(dedupKey: string): WrittenAlert | undefined {
    return this.alerts.get(dedupKey);
  }

  remember(dedupKey: string, alert: WrittenAlert): void {
    if (!this.alerts.has(dedupKey)) this.all.admit();
    this.alerts.set(dedupKey, alert);
  }

  forget(dedupKey: string): void {
    if (this.alerts.delete(dedupKey)) this.all.released();
  }
}
