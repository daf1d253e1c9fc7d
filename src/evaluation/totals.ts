/**
 * The running totals of policies: what one sums (a scope: its window, measure, filter and pool),
 * found for a record by a few look-ups, and read whole from the event store when memory cannot
 * vouch for it. Evaluation adds to them per record (evaluator.ts, kept by a ledger: ledger.ts);
 * budget status (src/budgets) reads them for the current windows.
 */
import type { EventStore } from '../stores/clickhouse.js';
import { endpointMatcher, PatternIndex } from './matchers.js';
import { toUnits } from '../domain/money.js';
import { scopeKey, windowOf, type CompiledLimit, type CompiledPolicy, type RecordFacts, type RecordTest } from './policies.js';
import type { PolicyIndex, ScopeBounds } from './policy-index.js';
import type { Window } from '../domain/windows.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** A running total a team's policies need (its scope string: see limitScope in policies.ts). */
export interface ScopeSpec {
  scope: string;
  /** The window holding an instant; null: none (before a `total` starts). */
  window: (t: number) => Window | null;
  /** spend: amounts add up; value: the records' values in `currency`; calls: each record adds 1. */
  measure: 'spend' | 'value' | 'calls';
  /** Of a value scope: the currency of its sums. */
  currency?: string | null;
  /** Per-endpoint scopes: the pattern, and the test of an event against it. */
  pattern?: string;
  matches?: (domain: string, endpoint: string) => boolean;
  /** A filtered policy's scope: the records it counts, and the filter's key (records are tested once per filter). */
  test?: RecordTest;
  matchKey?: string;
  /** A pool's scope: one total (subject: the pool's key, see poolKeyOf) for its agents (null: every agent of the team). */
  pool?: { key: string; agents: ReadonlySet<string> | null };
  /**
   * An agent's scope: the agents whose totals it keeps, those the policies reading it name (null:
   * every agent, when a team-wide policy reads it). A record of another agent adds nothing to it.
   */
  agents?: ReadonlySet<string> | null;
  /** Since when every stored event of the team was added to this scope's totals (Unix ms). */
  since: number;
}

/** The subject of a scope's total for a record of this agent: the agent, or the pool's members. */
export const subjectFor = (spec: ScopeSpec, agentId: string) => (spec.pool ? spec.pool.key : agentId);

/** A record as a scope table finds its totals: what filters test, its agent and time. */
type Tested = RecordFacts & { agent_id: string; event_time: number };

/** A running total in memory (CachedTotals in ledger.ts): what the window's records add up to so far. */
export interface TotalCell {
  spent: bigint;
  /** Set when it leaves the ledger's totals (dropped, forgotten): a TouchedTotal holding it looks the key up again. */
  dropped: boolean;
}

/** One running total a record adds to: its key in memory (see totalKey), its scope and window. */
export interface TouchedTotal {
  key: string;
  spec: ScopeSpec;
  window: Window;
  /** The ledger's cell for `key` once found: the records of the window add to it without a look-up. */
  cell: TotalCell | undefined;
  /** The scope's bounds in the team's policies (`boundsOf`: the PolicyIndex they come from; another: look them up again). */
  bounds: ScopeBounds | undefined;
  boundsOf: PolicyIndex | undefined;
}

/** Scopes of one filter (or of none): tested once per record, then those of every agent and those of pools naming the record's agent. */
interface FilterGroup {
  test: RecordTest | undefined;
  everyAgent: Tracked[];
  byAgent: Map<string, Tracked[]>;
}

interface WindowTotals {
  window: Window;
  /** By subject (agents of an agent scope); a pool's one total in `pool`. */
  totals: Map<string, TouchedTotal>;
  pool: TouchedTotal | undefined;
}

/** A scope as the table indexes it: its spec, and its two latest windows (nearly every record falls in one). */
interface Tracked {
  spec: ScopeSpec;
  current?: WindowTotals;
  previous?: WindowTotals;
}

/** Past this many, a scope's remembered totals (one per subject) start over: a bound on memory, not on correctness. */
const MAX_REMEMBERED = 100_000;

/**
 * The running totals a team tracks, found for an event by a few look-ups: windowed scopes that
 * every event adds to (hour, day in a zone), endpoint scopes by pattern (see PatternIndex), and
 * scopes of a filter (each distinct filter tested once per record) or of a pool (by the agents it
 * names). What a record costs grows with the totals it adds to, not with the team's policies.
 *
 * A record's totals come as shared objects: each scope remembers, per subject, the total of its
 * current window (key built once), so the usual record (in the window of the record before it)
 * builds no strings and allocates nothing but its list.
 */
export class ScopeTable {
  private readonly all = new Map<string, Tracked>();
  private plain: Tracked[] = [];
  private patterns = new PatternIndex<Tracked>();
  private groups = new Map<string, FilterGroup>();

  constructor(private readonly teamId: string) {}

  get(scope: string): ScopeSpec | undefined {
    return this.all.get(scope)?.spec;
  }

  *specs(): IterableIterator<ScopeSpec> {
    for (const tracked of this.all.values()) yield tracked.spec;
  }

  add(spec: ScopeSpec): void {
    if (this.all.has(spec.scope)) return;
    const tracked: Tracked = { spec };
    this.all.set(spec.scope, tracked);
    this.index(tracked);
  }

  /** Puts these specs in place of those of their scopes (a scope kept for more agents than before). */
  replace(specs: readonly ScopeSpec[]): void {
    if (specs.length === 0) return;
    for (const spec of specs) this.all.set(spec.scope, { spec });
    this.plain = [];
    this.patterns = new PatternIndex<Tracked>();
    this.groups = new Map();
    for (const tracked of this.all.values()) this.index(tracked);
  }

  private index(tracked: Tracked): void {
    const { spec } = tracked;
    const agents = spec.pool ? spec.pool.agents : (spec.agents ?? null);
    if (!spec.test && agents === null) {
      if (spec.pattern === undefined) this.plain.push(tracked);
      else this.patterns.add(spec.pattern, tracked);
      return;
    }
    const filter = spec.matchKey ?? '';
    let group = this.groups.get(filter);
    if (!group) this.groups.set(filter, (group = { test: spec.test, everyAgent: [], byAgent: new Map() }));
    if (agents === null) group.everyAgent.push(tracked);
    else {
      for (const agent of agents) {
        const own = group.byAgent.get(agent);
        if (own) own.push(tracked);
        else group.byAgent.set(agent, [tracked]);
      }
    }
  }

  /** The running totals an event adds to (none in a `total` not started yet). */
  touchedBy(row: Tested): TouchedTotal[] {
    const found: TouchedTotal[] = [];
    for (const tracked of this.plain) this.touch(found, tracked, row);
    if (this.patterns.size > 0) this.patterns.forEachMatch(row.domain, row.endpoint, (tracked) => this.touch(found, tracked, row));
    for (const group of this.groups.values()) {
      const own = group.byAgent.size > 0 ? group.byAgent.get(row.agent_id) : undefined;
      // A filter is tested only when one of its scopes counts this agent's records.
      if ((own === undefined && group.everyAgent.length === 0) || (group.test && !group.test(row))) continue;
      for (const tracked of group.everyAgent) if (!tracked.spec.matches || tracked.spec.matches(row.domain, row.endpoint)) this.touch(found, tracked, row);
      if (own) for (const tracked of own) if (!tracked.spec.matches || tracked.spec.matches(row.domain, row.endpoint)) this.touch(found, tracked, row);
    }
    return found;
  }

  private touch(found: TouchedTotal[], tracked: Tracked, row: Tested): void {
    const { spec } = tracked;
    const t = row.event_time;
    let slot: WindowTotals | undefined = tracked.current;
    if (slot === undefined || t < slot.window.start || t >= slot.window.end) {
      slot = tracked.previous;
      if (slot === undefined || t < slot.window.start || t >= slot.window.end) {
        const window = spec.window(t);
        if (window === null) return;
        slot = { window, totals: new Map(), pool: undefined };
        // The two latest windows are remembered (records of the one before keep arriving a while).
        if (tracked.current === undefined || window.start > tracked.current.window.start) [tracked.previous, tracked.current] = [tracked.current, slot];
        else if (tracked.previous === undefined || window.start > tracked.previous.window.start) tracked.previous = slot;
      }
    }
    if (spec.pool) {
      found.push((slot.pool ??= { key: totalKey(this.teamId, spec.pool.key, spec.scope, slot.window), spec, window: slot.window, cell: undefined, bounds: undefined, boundsOf: undefined }));
      return;
    }
    let total = slot.totals.get(row.agent_id);
    if (!total) {
      if (slot.totals.size >= MAX_REMEMBERED) slot.totals.clear();
      slot.totals.set(row.agent_id, (total = { key: totalKey(this.teamId, row.agent_id, spec.scope, slot.window), spec, window: slot.window, cell: undefined, bounds: undefined, boundsOf: undefined }));
    }
    found.push(total);
  }
}

/** The key of one running total in memory: team, subject, scope, window start. */
export const totalKey = (teamId: string, subject: string, scope: string, window: Window): string => `${teamId}\u0000${scopeKey({ subject, scope, window })}`;

/** The scope a windowed limit of a policy sums, counted from `since`; undefined for per_call. */
export function scopeSpecOf(policy: CompiledPolicy, limit: CompiledLimit, since: number, agents: ReadonlySet<string> | null = policy.agents): ScopeSpec | undefined {
  if (limit.scope === null || limit.kind === 'per_call') return undefined;
  const window = windowOf(limit.kind, policy.timezone, policy.startsAt);
  const pattern = limit.endpoint === undefined ? {} : { pattern: limit.endpoint, matches: endpointMatcher(limit.endpoint) };
  const filter = policy.match === null ? {} : { test: policy.match, matchKey: policy.matchKey! };
  const pool = policy.scope === 'pool' ? { pool: { key: policy.poolKey!, agents: policy.agents } } : { agents };
  return { scope: limit.scope, window, measure: limit.measure, currency: limit.currency, ...pattern, ...filter, ...pool, since };
}

/**
 * What the event store holds for these windows (each read whole, for every agent of its team, in
 * one query): the total of each (subject, scope, window) found, keyed by totalKey. Call once it holds every record
 * acknowledged before.
 */
export async function readWindowSums(store: Pick<EventStore, 'query'>, missing: Map<string, { teamId: string; spec: ScopeSpec; window: Window }>): Promise<Map<string, bigint>> {
  const byTeam = new Map<string, { spec: ScopeSpec; window: Window; index: number }[]>();
  for (const m of missing.values()) byTeam.set(m.teamId, [...(byTeam.get(m.teamId) ?? []), { spec: m.spec, window: m.window, index: 0 }]);
  const params: Record<string, unknown> = {};
  const branches: string[] = [];
  const teams = [...byTeam.entries()];
  // Only what the scopes test is grouped by: URLs for URL-prefix patterns, the filters' fields.
  const specs = [...missing.values()].map((m) => m.spec);
  const urls = specs.some((spec) => spec.scope.includes('e:http') || spec.test !== undefined);
  const filtered = specs.some((spec) => spec.test !== undefined);
  const facts = filtered ? 'category, asset, network, tags' : "'' AS category, '' AS asset, '' AS network, [] AS tags";
  teams.forEach(([teamId, wanted], t) => {
    // Distinct windows get an index; each event is counted once per window it falls in.
    const windows = [...new Map(wanted.map((w) => [`${w.window.start}:${w.window.end}`, w.window])).values()];
    const index = new Map(windows.map((w, i) => [`${w.start}:${w.end}`, i + 1]));
    for (const w of wanted) w.index = index.get(`${w.window.start}:${w.window.end}`)!;
    Object.assign(params, { [`team${t}`]: teamId, [`starts${t}`]: windows.map((w) => w.start), [`ends${t}`]: windows.map((w) => w.end) });
    // No event lies more than minutes ahead: a `total` (which never ends) is read up to tomorrow.
    const horizon = Math.floor((Date.now() + DAY) / HOUR) * HOUR;
    const hours = windows
      .map((w) => {
        const [first, last] = [Math.floor(w.start / HOUR) * HOUR, Math.min(horizon, Math.floor((w.end - 1) / HOUR) * HOUR)];
        return `(toStartOfHour(event_time) >= toDateTime(${first / 1000}, 'UTC') AND toStartOfHour(event_time) <= toDateTime(${last / 1000}, 'UTC'))`;
      })
      .join(' OR ');
    branches.push(`
      SELECT ${t} AS t, agent_id, w, domain, ${urls ? 'endpoint' : "''"} AS url, ${facts},
             toString(sum(toDecimal256(amount, 18))) AS spend, count() AS calls,
             toString(currency) AS valued_in, toString(sum(toDecimal256(ifNull(value, 0), 18))) AS worth
        FROM events
       ARRAY JOIN arrayFilter(i -> toUnixTimestamp64Milli(event_time) >= {starts${t}:Array(Int64)}[i]
                               AND toUnixTimestamp64Milli(event_time) < {ends${t}:Array(Int64)}[i], range(1, ${windows.length + 1})) AS w
       WHERE team_id = {team${t}:String} AND (${hours})
       GROUP BY agent_id, w, domain, url, valued_in${filtered ? ', category, asset, network, tags' : ''}`);
  });
  const found = await store.query<{
    t: number;
    agent_id: string;
    w: number;
    domain: string;
    url: string;
    category: string;
    asset: string;
    network: string;
    tags: string[];
    spend: string;
    calls: number | string;
    valued_in: string;
    worth: string;
  }>(branches.join('\nUNION ALL\n'), params);
  const sums = new Map<string, bigint>();
  for (const r of found) {
    const [teamId, wanted] = teams[Number(r.t)]!;
    const row: RecordFacts = { domain: r.domain, endpoint: r.url, category: r.category, asset: r.asset, network: r.network, tags: r.tags };
    for (const { spec, window, index } of wanted) {
      if (index !== Number(r.w) || (spec.matches && !spec.matches(r.domain, r.url))) continue;
      if (spec.pool?.agents && !spec.pool.agents.has(r.agent_id)) continue;
      // Only the agents the scope keeps: another's total would go stale while it is not kept.
      if (spec.agents && !spec.agents.has(r.agent_id)) continue;
      if (spec.test && !spec.test(row)) continue;
      const key = totalKey(teamId, subjectFor(spec, r.agent_id), spec.scope, window);
      // A value scope sums the values in its currency (values are never added across currencies).
      const by = spec.measure === 'calls' ? BigInt(r.calls) : spec.measure === 'value' ? (r.valued_in === spec.currency ? toUnits(r.worth) : 0n) : toUnits(r.spend);
      sums.set(key, (sums.get(key) ?? 0n) + by);
    }
  }
  return sums;
}
