/** The ledger of instances sharing PostgreSQL: another instance may count between groups, so each group locks its `spend_totals` rows. */
import type { Logger } from 'pino';
import { Holds } from '../authorizations/holds.js';
import { liveHolds, type AuthorizationRow } from '../authorizations/repository.js';
import { TotalsUnavailable } from '../domain/errors.js';
import { MAX_FUTURE_SKEW_MS, type EventRow } from '../ingest/records.js';
import { OVERLAP_MS } from '../ingest/shared-log.js';
import type { EventStore } from '../stores/clickhouse.js';
import { all, awaited, postgresOnly, run, type Sql, type Steps } from '../stores/sql.js';
import { CachedTotals, StalePolicies, type LedgerGroup, type MissingWindows, type TotalsLedger } from './ledger.js';
import { ScopeTable, subjectFor, totalKey, type ScopeSpec, type TouchedTotal } from './totals.js';
import type { Window } from '../domain/windows.js';

/** A total as a group locked it; `write`: filled from ClickHouse, so written back even unchanged. */
interface LockedTotal {
  teamId: string;
  kind: 'agent' | 'pool';
  subject: string;
  scope: string;
  window: Window;
  spent: bigint;
  write: boolean;
}

export class PostgresLedger extends CachedTotals implements TotalsLedger {
  readonly shared = true;
  /** The live holds of the agents the last locked group decides for. */
  private live = new Holds();
  /** Per group: the totals as locked, to write back only what changed. */
  private readonly locked = new WeakMap<LedgerGroup, Map<string, LockedTotal>>();

  constructor(
    store: EventStore,
    logger: Logger,
    /** Resolves true once ClickHouse holds every record committed so far, on any instance (false: not in time). */
    private readonly awaitLoaded: () => Promise<boolean>,
  ) {
    // Another instance may have counted records before this one tracked the scope, with a clock up to OVERLAP_MS apart.
    super(store, logger, MAX_FUTURE_SKEW_MS + OVERLAP_MS);
  }

  get holds(): Holds {
    return this.live;
  }

  /** Nothing is read ahead: the totals are read in the transaction, under their locks. */
  async prepare(_group: LedgerGroup, now: number): Promise<Set<string>> {
    this.dropOldWindows(now);
    return new Set();
  }

  /** Team rows, then totals in key order, then holds: every instance locks in this one order, so none deadlock or approve twice. */
  *lock(group: LedgerGroup, now: number): Steps<void> {
    const teams = [...group.states.keys()];
    if (teams.length === 0) return;
    // A share lock: a policy change waits for the group, and a group that read older policies is evaluated again.
    const revisions = yield* all<{ id: string; r: string | number }>(
      postgresOnly('SELECT id, policy_revision AS r FROM teams WHERE id = ANY($1::text[]) ORDER BY id COLLATE "C" FOR SHARE'),
      [teams],
    );
    const stale = revisions.filter((t) => Number(t.r) !== group.states.get(t.id)!.storedRevision).map((t) => t.id);
    if (stale.length > 0) throw new StalePolicies(stale);
    const wanted = new Map<string, { teamId: string; kind: 'agent' | 'pool'; subject: string; spec: ScopeSpec; window: Window }>();
    const want = (row: EventRow, touched: readonly TouchedTotal[]) => {
      for (const { key, spec, window } of touched) {
        wanted.set(key, { teamId: row.team_id, kind: spec.pool ? 'pool' : 'agent', subject: subjectFor(spec, row.agent_id), spec, window });
      }
    };
    group.rows.forEach((row, i) => want(row, group.touched[i]!));
    group.probes.forEach((probe, i) => want(probe, group.probeTouched[i]!));
    const locked = new Map<string, LockedTotal>();
    this.locked.set(group, locked);
    if (wanted.size > 0) {
      const list = [...wanted.values()];
      const columns = [list.map((w) => w.teamId), list.map((w) => w.kind), list.map((w) => w.subject), list.map((w) => w.spec.scope), list.map((w) => w.window.start)];
      // Rows nobody made yet: a window that began after its scope was tracked starts at 0 (every
      // instance counting since adds to it); an older one is made empty (NULL), locked, and filled
      // from ClickHouse below, never committed empty.
      const fresh = list.map((w) => (this.isTracked(w.spec, w.window) ? '0' : null));
      yield* run(
        postgresOnly(`INSERT INTO spend_totals (team_id, scope, subject, window_kind, window_start, window_end, spent)
                      SELECT u.t, u.sc, u.s, u.k, u.ws, u.we, u.v::numeric
                        FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::text[]) AS u(t, sc, s, k, ws, we, v)
                       ORDER BY u.t COLLATE "C", u.sc COLLATE "C", u.s COLLATE "C", u.k COLLATE "C", u.ws
                      ON CONFLICT DO NOTHING`),
        [...columns, list.map((w) => w.window.end), fresh],
      );
      // Locked in primary-key order, so that two groups locking the same rows never deadlock.
      const rows = yield* all<{ team_id: string; subject: string; window_kind: string; window_start: string | number; spent: string | null }>(
        postgresOnly(`SELECT t.team_id, t.subject, t.window_kind, t.window_start, t.spent::text AS spent
                        FROM spend_totals t
                        JOIN unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[]) AS u(t, sc, s, k, ws)
                          ON t.team_id = u.t AND t.scope = u.sc AND t.subject = u.s AND t.window_kind = u.k AND t.window_start = u.ws
                       ORDER BY t.team_id COLLATE "C", t.scope COLLATE "C", t.subject COLLATE "C", t.window_kind COLLATE "C", t.window_start
                         FOR UPDATE OF t`),
        columns,
      );
      const found = new Map<string, bigint | null>();
      // A pool's scope names its members, so (subject, scope) alone tells an agent's row from a pool's.
      for (const r of rows) found.set(totalKey(r.team_id, r.subject, r.window_kind, { start: Number(r.window_start), end: 0 }), r.spent === null ? null : BigInt(r.spent));
      const empty = new Set([...wanted.keys()].filter((key) => found.get(key) === null));
      const unfilled: MissingWindows = new Map();
      for (const key of empty) {
        const w = wanted.get(key)!;
        unfilled.set(`${w.teamId}\u0000${w.spec.scope}\u0000${w.window.start}`, w);
      }
      if (unfilled.size > 0) {
        // Under the lock of the empty rows: no instance can count into them until this commits, so
        // what ClickHouse holds once every chunk committed so far is loaded is their whole past.
        const sums = yield* awaited(async () => {
          if (!(await this.awaitLoaded())) {
            throw new TotalsUnavailable('The running totals of a new window could not be read (the event store is behind or down); nothing was stored, retry', 2);
          }
          return this.windowSums(unfilled);
        });
        for (const key of empty) found.set(key, sums.get(key) ?? 0n);
      }
      for (const [key, w] of wanted) {
        const spent = found.get(key);
        // Pruned between the insert and the lock (a window days old): the group is tried again.
        if (spent === undefined || spent === null) throw new Error(`the running total ${key.replaceAll('\u0000', '/')} vanished while it was locked`);
        this.setTotal(key, spent);
        locked.set(key, { teamId: w.teamId, kind: w.kind, subject: w.subject, scope: w.spec.scope, window: w.window, spent, write: empty.has(key) });
      }
    }
    // Under the totals' locks: a hold is written by a decision that held the same rows, so no two instances approve against one headroom.
    const requested = new Map<string, Set<string>>();
    for (const r of group.requests) (requested.get(r.teamId) ?? requested.set(r.teamId, new Set()).get(r.teamId)!).add(r.agentId);
    const held: AuthorizationRow[] = [];
    for (const [teamId, agents] of requested) {
      // A pool sums the holds of all its agents: a team with pools reads all its live holds.
      const pooled = group.states.get(teamId)!.index.policies.some((p) => p.scope === 'pool');
      held.push(...(yield* liveHolds(now, pooled ? { teamId } : { teamId, agentIds: [...agents] })));
    }
    this.live = Holds.of(held);
  }

  /** In the group's transaction after apply and decide: writes back the totals that changed. */
  *save(group: LedgerGroup): Steps<void> {
    const locked = this.locked.get(group);
    if (!locked) return;
    const changed = [...locked].filter(([key, w]) => w.write || this.spentOf(key) !== w.spent);
    if (changed.length === 0) return;
    yield* run(
      postgresOnly(`UPDATE spend_totals t SET spent = u.v::numeric
                      FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[]) AS u(t, sc, s, k, ws, v)
                     WHERE t.team_id = u.t AND t.scope = u.sc AND t.subject = u.s AND t.window_kind = u.k AND t.window_start = u.ws`),
      [
        changed.map(([, w]) => w.teamId),
        changed.map(([, w]) => w.kind),
        changed.map(([, w]) => w.subject),
        changed.map(([, w]) => w.scope),
        changed.map(([, w]) => w.window.start),
        changed.map(([key]) => this.spentOf(key)!.toString()),
      ],
    );
  }

  /** The team row's policy_revision, read with its policies: lock compares it under a share lock. */
  async revisionOf(sql: Sql, teamId: string): Promise<number> {
    return Number((await sql.get<{ r: number }>('SELECT policy_revision AS r FROM teams WHERE id = ?', [teamId]))?.r ?? 0);
  }

  /** A new table each reload: a policy change deletes unread scopes' rows, so a missing earlier window is read from ClickHouse, never assumed empty. */
  scopesFor(teamId: string): ScopeTable {
    return new ScopeTable(teamId);
  }

  reset(): void {
    this.live = new Holds();
    this.forgetTotals();
  }
}
