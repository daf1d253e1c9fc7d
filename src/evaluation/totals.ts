/**
 * The running totals of policies: what one sums (a scope: its window, measure, filter and pool),
 * found for a record by a few look-ups, and read whole from the event store when memory cannot
 * vouch for it. Evaluation (evaluator.ts) keeps them per record; budget status (src/budgets) reads
 * them for the current windows.
 */
import type { EventStore } from '../stores/clickhouse.js';
import { endpointMatcher, PatternIndex } from './matchers.js';
import { toUnits } from './money.js';
import { scopeKey, windowOf, type CompiledLimit, type CompiledPolicy, type RecordFacts, type RecordTest } from './policies.js';
import type { Window } from './windows.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** A running total a team's policies need (its scope string: see limitScope in policies.ts). */
export interface ScopeSpec {
  scope: string;
  /** The window holding an instant; null: none (before a `total` starts). */
  window: (t: number) => Window | null;
  /** spend: amounts add up; calls: each record adds 1. */
  measure: 'spend' | 'calls';
  /** Per-endpoint scopes: the pattern, and the test of an event against it. */
  pattern?: string;
  matches?: (domain: string, endpoint: string) => boolean;
  /** A filtered policy's scope: the records it counts, and the filter's key (records are tested once per filter). */
  test?: RecordTest;
  matchKey?: string;
  /** A pool's scope: one total (subject: the policy id) for its agents (null: every agent of the team). */
  pool?: { policyId: string; agents: ReadonlySet<string> | null };
  /** Since when every stored event of the team was added to this scope's totals (Unix ms). */
  since: number;
}

/** The subject of a scope's total for a record of this agent: the agent, or the pool's policy. */
export const subjectFor = (spec: ScopeSpec, agentId: string) => (spec.pool ? spec.pool.policyId : agentId);

/** A record as a scope table tests it. */
type Tested = RecordFacts & { agent_id: string };

/**
 * The running totals a team tracks, found for an event by a few look-ups: windowed scopes that
 * every event adds to (hour, day in a zone), endpoint scopes by pattern (see PatternIndex), and
 * scopes that test the record (a filter, tested once per distinct filter; a pool's agents).
 */
export class ScopeTable {
  private readonly all = new Map<string, ScopeSpec>();
  private readonly plain: ScopeSpec[] = [];
  private readonly patterns = new PatternIndex<ScopeSpec>();
  private readonly tested: ScopeSpec[] = [];

  has(scope: string): boolean {
    return this.all.has(scope);
  }

  get(scope: string): ScopeSpec | undefined {
    return this.all.get(scope);
  }

  add(spec: ScopeSpec): void {
    if (this.all.has(spec.scope)) return;
    this.all.set(spec.scope, spec);
    if (spec.test || spec.pool) this.tested.push(spec);
    else if (spec.pattern === undefined) this.plain.push(spec);
    else this.patterns.add(spec.pattern, spec);
  }

  /** The scopes an event adds to. */
  matching(row: Tested): ScopeSpec[] {
    if (this.patterns.size === 0 && this.tested.length === 0) return this.plain;
    const found = [...this.plain];
    if (this.patterns.size > 0) this.patterns.forEachMatch(row.domain, row.endpoint, (spec) => found.push(spec));
    if (this.tested.length > 0) {
      const filters = new Map<string, boolean>();
      for (const spec of this.tested) {
        if (spec.pool?.agents && !spec.pool.agents.has(row.agent_id)) continue;
        if (spec.matches && !spec.matches(row.domain, row.endpoint)) continue;
        if (spec.test) {
          let passes = filters.get(spec.matchKey!);
          if (passes === undefined) filters.set(spec.matchKey!, (passes = spec.test(row)));
          if (!passes) continue;
        }
        found.push(spec);
      }
    }
    return found;
  }
}

/** The key of one running total in memory: team, subject, scope, window start. */
export const totalKey = (teamId: string, subject: string, scope: string, window: Window): string => `${teamId}\u0000${scopeKey({ subject, scope, window })}`;

/** The scope a windowed limit of a policy sums, counted from `since`; undefined for per_call. */
export function scopeSpecOf(policy: CompiledPolicy, limit: CompiledLimit, since: number): ScopeSpec | undefined {
  if (limit.scope === null || limit.kind === 'per_call') return undefined;
  const window = windowOf(limit.kind, policy.timezone, policy.startsAt);
  const pattern = limit.endpoint === undefined ? {} : { pattern: limit.endpoint, matches: endpointMatcher(limit.endpoint) };
  const filter = policy.match === null ? {} : { test: policy.match, matchKey: policy.matchKey! };
  const pool = policy.scope === 'pool' ? { pool: { policyId: policy.id, agents: policy.agents } } : {};
  return { scope: limit.scope, window, measure: limit.measure, ...pattern, ...filter, ...pool, since };
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
             toString(sum(toDecimal256(amount, 18))) AS spend, count() AS calls
        FROM events
       ARRAY JOIN arrayFilter(i -> toUnixTimestamp64Milli(event_time) >= {starts${t}:Array(Int64)}[i]
                               AND toUnixTimestamp64Milli(event_time) < {ends${t}:Array(Int64)}[i], range(1, ${windows.length + 1})) AS w
       WHERE team_id = {team${t}:String} AND (${hours})
       GROUP BY agent_id, w, domain, url${filtered ? ', category, asset, network, tags' : ''}`);
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
  }>(branches.join('\nUNION ALL\n'), params);
  const sums = new Map<string, bigint>();
  for (const r of found) {
    const [teamId, wanted] = teams[Number(r.t)]!;
    const row: RecordFacts = { domain: r.domain, endpoint: r.url, category: r.category, asset: r.asset, network: r.network, tags: r.tags };
    for (const { spec, window, index } of wanted) {
      if (index !== Number(r.w) || (spec.matches && !spec.matches(r.domain, r.url))) continue;
      if (spec.pool?.agents && !spec.pool.agents.has(r.agent_id)) continue;
      if (spec.test && !spec.test(row)) continue;
      const key = totalKey(teamId, subjectFor(spec, r.agent_id), spec.scope, window);
      sums.set(key, (sums.get(key) ?? 0n) + (spec.measure === 'calls' ? BigInt(r.calls) : toUnits(r.spend)));
    }
  }
  return sums;
}
