/** The ledger of one instance: every group commit goes through this process, so its memory is the record and nothing is locked. */
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
  /** Every live hold: read from the registry at start and after a rollback (the registry is the record), then kept as decisions go. */
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

  /** Reads from ClickHouse, before the transaction, the windows begun before memory tracked them (or dropped), whole for the team. */
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
    // The team's other untracked current windows too: one read (which waits for the loader) instead of one per scope as records reach each.
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
