/**
 * The ledger of one instance: running totals and holds live in this process's memory, over the
 * SQLite registry. Every group commit is serialised through this process, so memory is the record
 * between groups and there is nothing to lock.
 *
 * A total is exact when every event of its window went through this process (the window started
 * after the scope was first needed); otherwise it is read once from ClickHouse, once the loader
 * has every earlier acknowledged record, before the group is committed.
 */
import type { Logger } from 'pino';
import { Holds } from '../authorizations/holds.js';
import { liveHolds } from '../authorizations/repository.js';
import { MAX_FUTURE_SKEW_MS } from '../ingest/records.js';
import type { EventStore } from '../stores/clickhouse.js';
import { performNow, type Steps } from '../stores/sql.js';
import type { Registry } from '../stores/sqlite.js';
import { CachedTotals, type LedgerGroup, type MissingWindows, type TotalsLedger } from './ledger.js';
import { ScopeTable } from './totals.js';

export class MemoryLedger extends CachedTotals implements TotalsLedger {
  readonly shared = false;
  /** Every live hold: read from the registry at start and after a rollback, then kept as decisions go. */
  private live: Holds;

  constructor(
    private readonly registry: Registry,
    store: EventStore,
    logger: Logger,
    /** Resolves true once ClickHouse holds every record the log holds (false: not in time). */
    private readonly awaitLoaded: () => Promise<boolean>,
  ) {
    // An event time may lie up to 5 minutes ahead of its arrival.
    super(store, logger, MAX_FUTURE_SKEW_MS);
    this.live = this.readHolds();
  }

  get holds(): Holds {
    return this.live;
  }

  /**
   * Totals this group touches that memory cannot vouch for: windows that began before their scope
   * was tracked (an event time may lie up to 5 minutes ahead of its arrival), or that were dropped.
   * A missing window is read whole, for every agent of the team, in one query per group: an agent
   * seen later in the same window then needs no query. With it, the current window of every other
   * scope of the team that memory cannot vouch for is read too: a team's new scopes (after a
   * start or a policy change) cost one read, not one per scope as records first reach each (a
   * read waits for the loader, a fraction of a second that holds the group). Read before this
   * group is committed, once ClickHouse has every earlier acknowledged record: the caller adds
   * this group's events. When ClickHouse cannot answer in time, returns the keys left unknown.
   */
  async prepare(group: LedgerGroup, now: number): Promise<Set<string>> {
    this.dropOldWindows(now);
    const missing: MissingWindows = new Map();
    const missingKeys = new Set<string>();
    const want = (rows: LedgerGroup['rows'], touched: LedgerGroup['touched']) =>
      rows.forEach((row, i) => {
        for (const total of touched[i]!) {
          const { key, spec, window } = total;
          if (this.spent(total) !== undefined || this.isTracked(spec, window)) continue;
          missing.set(`${row.team_id}\u0000${spec.scope}\u0000${window.start}`, { teamId: row.team_id, spec, window });
          missingKeys.add(key);
        }
      });
    want(group.rows, group.touched);
    want(group.probes, group.probeTouched);
    if (missing.size === 0) return new Set();
    const teams = new Set([...missing.values()].map((m) => m.teamId));
    for (const teamId of teams) {
      for (const spec of group.states.get(teamId)!.scopes.specs()) {
        const window = spec.window(now);
        if (window === null || this.isTracked(spec, window)) continue;
        missing.set(`${teamId}\u0000${spec.scope}\u0000${window.start}`, { teamId, spec, window });
      }
    }
    if (missing.size === 0) return new Set();
    if (!(await this.awaitLoaded())) {
      this.logger.warn({ windows: missing.size }, 'ClickHouse is behind or down: windowed limits of these windows are not checked for this group');
      return missingKeys;
    }
    this.loaded(missing, await this.windowSums(missing));
    return new Set();
  }

  /** Nothing to lock: groups are serialised in this process, and memory is the record. */
  *lock(): Steps<void> {}

  /** Nothing to write: memory is the record (what ClickHouse holds is read again after a restart). */
  *save(): Steps<void> {}

  async revisionOf(): Promise<number> {
    return 0;
  }

  /** Scopes stay once needed, their totals growing even while no policy reads them. */
  scopesFor(teamId: string, kept: ScopeTable | undefined): ScopeTable {
    return kept ?? new ScopeTable(teamId);
  }

  reset(): void {
    this.live = this.readHolds();
    this.forgetTotals();
  }

  private readHolds(): Holds {
    return Holds.of(performNow(this.registry, liveHolds(Date.now())));
  }
}
