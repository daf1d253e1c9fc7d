/** Running totals and holds behind one interface (memory-ledger.ts, postgres-ledger.ts), so the rules never know where they are kept. */
import type { Logger } from 'pino';
import type { Holds } from '../authorizations/holds.js';
import type { EventRow } from '../domain/record-row.js';
import type { EventStore } from '../stores/clickhouse.js';
import type { Sql, Steps } from '../stores/sql.js';
import type { CompiledPolicy } from './policies.js';
import { windowPartOf } from './policies.js';
import { readWindowSums, type ScopeSpec, type ScopeTable, type TotalCell, type TouchedTotal } from './totals.js';
import { LONGEST_WINDOW_MS, type Window } from '../domain/windows.js';

/** A team of a group, as the ledger reads it: the revision its policies were read at, its policies and scopes. */
export interface LedgerTeam {
  readonly storedRevision: number;
  readonly index: { readonly policies: readonly CompiledPolicy[] };
  readonly scopes: ScopeTable;
}

/** What one group commit touches: its records and authorizations (as probes), with the totals each adds to. */
export interface LedgerGroup {
  readonly rows: readonly EventRow[];
  readonly touched: readonly (readonly TouchedTotal[])[];
  readonly probes: readonly EventRow[];
  readonly probeTouched: readonly (readonly TouchedTotal[])[];
  /** The authorizations the group decides: whose holds it reads. */
  readonly requests: readonly { readonly teamId: string; readonly agentId: string }[];
  readonly states: ReadonlyMap<string, LedgerTeam>;
}

export interface TotalsLedger {
  /** Whether other instances count into the same totals: then a group whose evaluation fails must fail whole, or its records would go uncounted for good. */
  readonly shared: boolean;
  /** What open authorizations hold, per agent, as of the group's lock. */
  readonly holds: Holds;
  /** Before the group's transaction: reads what it can of the totals the group touches; returns the keys it could not (left unchecked for this group). */
  prepare(group: LedgerGroup, now: number): Promise<Set<string>>;
  /** In the group's transaction, before the rules: locks and reads the totals the group touches, and the holds of the agents it decides for. */
  lock(group: LedgerGroup, now: number): Steps<void>;
  /** A total as the group has it so far; undefined when never read or added to. */
  spent(total: TouchedTotal): bigint | undefined;
  /** Adds to a total (one not read yet starts at 0); returns the new total. */
  add(total: TouchedTotal, by: bigint): bigint;
  /** In the group's transaction, after the rules: writes back the totals that changed. */
  save(group: LedgerGroup): Steps<void>;
  /** In the transaction of a reload of the team's policies: the revision lock checks them against. */
  revisionOf(sql: Sql, teamId: string): Promise<number>;
  /** The scope table a reload of the team's policies starts from (`kept`: the one of the last load). */
  scopesFor(teamId: string, kept: ScopeTable | undefined): ScopeTable;
  /** Forgets every total and hold (after a rolled-back group, whose rows they may include). */
  reset(): void;
}

/** A team's policies changed on another instance since they were loaded: the group is rolled back and evaluated again. */
export class StalePolicies extends Error {
  constructor(readonly teamIds: string[]) {
    super(`the policies of ${teamIds.join(', ')} changed on another instance; evaluating again`);
    this.name = 'StalePolicies';
  }
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Totals of windows that ended this long ago are dropped from memory (and read again if needed). */
const KEEP_WINDOWS_MS = 2 * DAY;
/** How long a window of a scope may last, by its window's letter: a day and a DST hour unless longer (a `total` never ends). */
function longestOf(scope: string): number {
  const window = windowPartOf(scope);
  if (window.startsWith('w:')) return 7 * DAY + HOUR;
  if (window.startsWith('m:')) return LONGEST_WINDOW_MS;
  if (window.startsWith('t:')) return Infinity;
  return DAY + HOUR;
}

/** The windows of missing totals to read from the event store, by team, scope and window start. */
export type MissingWindows = Map<string, { teamId: string; spec: ScopeSpec; window: Window }>;

/** The totals both adapters keep in memory by key: the ledger itself with one instance, what a group locked with several. */
export abstract class CachedTotals {
  private readonly totals = new Map<string, TotalCell>();
  /** Windows that ended before this may have been dropped from `totals`. */
  private droppedBefore = 0;
  /** Windows read whole from the event store, by start, per scope as it was read (a widened scope is a new spec). */
  private loadedWindows = new WeakMap<ScopeSpec, Set<number>>();

  /** `margin`: how far before a scope was tracked a record may still be counted into its windows. */
  constructor(
    private readonly store: EventStore,
    protected readonly logger: Logger,
    private readonly margin: number,
  ) {}

  spent(total: TouchedTotal): bigint | undefined {
    return this.cellOf(total)?.spent;
  }

  add(total: TouchedTotal, by: bigint): bigint {
    const cell = this.cellOf(total) ?? this.setTotal(total.key, 0n);
    cell.spent += by;
    return cell.spent;
  }

  /** The total of a key in memory, if any (what a lock compares against to write back only changes). */
  protected spentOf(key: string): bigint | undefined {
    return this.totals.get(key)?.spent;
  }

  /** The running total a record reaches, if memory has it: the cell it found last time while still held, else looked up by key. */
  private cellOf(total: TouchedTotal): TotalCell | undefined {
    const known = total.cell;
    if (known !== undefined && !known.dropped) return known;
    const cell = this.totals.get(total.key);
    if (cell !== undefined) total.cell = cell;
    return cell;
  }

  /** Sets a running total (in its cell: TouchedTotal objects holding it see the new value). */
  protected setTotal(key: string, spent: bigint): TotalCell {
    const cell = this.totals.get(key);
    if (cell !== undefined) {
      cell.spent = spent;
      return cell;
    }
    const added = { spent, dropped: false };
    this.totals.set(key, added);
    return added;
  }

  /** Sets the totals read from the event store that memory has not got meanwhile, and marks their windows read. */
  protected loaded(missing: MissingWindows, sums: Map<string, bigint>): void {
    for (const [key, sum] of sums) if (!this.totals.has(key)) this.setTotal(key, sum);
    for (const m of missing.values()) {
      const loaded = this.loadedWindows.get(m.spec);
      if (loaded) loaded.add(m.window.start);
      else this.loadedWindows.set(m.spec, new Set([m.window.start]));
    }
  }

  /** Whether every event of the team in this window of the scope has passed through `totals`. */
  protected isTracked(spec: ScopeSpec, window: Window): boolean {
    if (window.end <= this.droppedBefore) return false;
    return window.start >= spec.since + this.margin || this.loadedWindows.get(spec)?.has(window.start) === true;
  }

  /** What the event store holds for these windows (see readWindowSums); once it holds every record acknowledged before. */
  protected async windowSums(missing: MissingWindows): Promise<Map<string, bigint>> {
    const sums = await readWindowSums(this.store, missing);
    this.logger.debug({ windows: missing.size, totals: sums.size }, 'policy window totals read from the event store');
    return sums;
  }

  /** Drops the totals of windows long over, past a size: a bound on memory (a dropped window is read again when needed). */
  protected dropOldWindows(now: number): void {
    if (this.totals.size < 100_000) return;
    const horizon = now - KEEP_WINDOWS_MS;
    for (const key of this.totals.keys()) {
      const cut = key.lastIndexOf('\u0000');
      const start = Number(key.slice(cut + 1));
      const scope = key.slice(key.lastIndexOf('\u0000', cut - 1) + 1, cut);
      // Only windows surely over (a month is kept until it ends).
      if (start + longestOf(scope) < horizon) {
        this.totals.get(key)!.dropped = true;
        this.totals.delete(key);
      }
    }
    this.droppedBefore = Math.max(this.droppedBefore, horizon);
    this.loadedWindows = new WeakMap();
  }

  /** Forgets every total and every window read (cells held by TouchedTotals are marked dropped). */
  protected forgetTotals(): void {
    for (const cell of this.totals.values()) cell.dropped = true;
    this.totals.clear();
    this.loadedWindows = new WeakMap();
  }
}
