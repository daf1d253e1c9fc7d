/**
 * A team's active policies indexed for evaluation, so that what a record costs does not grow with
 * policies that cannot apply to it, nor with limits it does not break:
 *
 * - by agent: team-wide policies in one set, policies that list agents in a set per agent (built
 *   when the agent is first seen), so a record meets only the policies of its own agent;
 * - by scope: in each set, the limits of one running total (per_call, the UTC hour, the day in a
 *   zone, an endpoint pattern's day) in one list sorted by amount. A total breaks exactly the
 *   limits below it, a prefix of the list found by binary search: a record that breaks nothing
 *   costs one search per scope, and a storm is counted without listing its breaches.
 */
import type { LimitKind } from '../policies/limits.js';
import type { CompiledLimit, CompiledPolicy, RecordTest } from './policies.js';

/** The limits of one scope in one set of policies, by amount ascending (ties in policy order). */
export interface LimitList {
  kind: LimitKind;
  amounts: bigint[];
  entries: { policy: CompiledPolicy; limit: CompiledLimit }[];
  /** criticalBefore[j]: how many of entries[0, j) belong to block policies (j from 0 to length). */
  criticalBefore: Uint32Array;
  /** A windowed scope's notify_at thresholds, if its policies have any (found with its limits in one look-up). */
  thresholds?: ThresholdList;
}

/** The limits of a list that `observed` breaks (observed > amount): entries[0, result). */
export function brokenCount(list: LimitList, observed: bigint): number {
  const { amounts } = list;
  let hi = amounts.length;
  // The usual answers first, one comparison each (a BigInt comparison is a call into the runtime):
  // a total under every limit of its scope, or one past them all (a budget long broken).
  if (hi === 0 || observed <= amounts[0]!) return 0;
  if (observed > amounts[hi - 1]!) return hi;
  let lo = 1;
  hi--;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (amounts[mid]! < observed) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** A notify_at percentage of a limit as an amount: reached when a total is at least this (the least whole unit that is). */
const thresholdAmount = (limit: CompiledLimit, percent: number): bigint => (limit.amount * BigInt(percent) + 99n) / 100n;

/**
 * The amounts of a scope's limits and thresholds in every policy of a team, lowest and highest: a
 * total under the floor breaks and crosses nothing, one past the ceiling breaks every limit and
 * can cross no threshold. Most records meet one of the two, and skip the searches (BigInt
 * comparisons are calls into the runtime: a few per total instead of a few per list).
 */
export interface ScopeBounds {
  floor: bigint;
  ceiling: bigint;
}

/** A scope no policy reads: every total is under its floor. */
const UNREAD: ScopeBounds = { floor: 2n ** 256n, ceiling: 2n ** 256n };

/** The percentages (notify_at) of a scope's limits as amounts, ascending: a total crossing them. */
export interface ThresholdList {
  amounts: bigint[];
  entries: { policy: CompiledPolicy; limit: CompiledLimit; percent: number }[];
}

/**
 * False when a total going from `before` to `after` cannot have crossed a threshold of the list:
 * the usual record, whose total stays under the lowest or was past the highest already (two
 * comparisons; crossedRange tells exactly which, when this is true).
 */
export function mayCross(list: ThresholdList, before: bigint, after: bigint): boolean {
  const { amounts } = list;
  return amounts.length > 0 && after >= amounts[0]! && before < amounts[amounts.length - 1]!;
}

/** The thresholds a total crossed going from `before` to `after` (amount <= after, not <= before): entries[from, to). */
export function crossedRange(list: ThresholdList, before: bigint, after: bigint): [number, number] {
  const atMost = (value: bigint) => {
    let lo = 0;
    let hi = list.amounts.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (list.amounts[mid]! <= value) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  return [atMost(before), atMost(after)];
}

/** Some policies (team-wide, or those naming one agent), in order, with their limits by scope. */
export interface PolicySet {
  policies: CompiledPolicy[];
  /** per_call limits of policies without a filter. */
  perCall: LimitList | undefined;
  /** per_call limits of filtered policies, one list per filter: checked when the record matches. */
  perCallFiltered: { test: RecordTest; list: LimitList }[];
  /** per_call limits in value, one list per currency and filter (test null: every record): checked against the record's value. */
  perCallValued: { currency: string; test: RecordTest | null; list: LimitList }[];
  /** Its policies that count in value, in order: a record none of whose currencies values it raises `unvalued`. */
  valued: CompiledPolicy[];
  /** Windowed limits by scope (see limitScope in policies.ts), each with its notify_at thresholds. */
  windowed: Map<string, LimitList>;
}

function limitList(kind: LimitKind, entries: { policy: CompiledPolicy; limit: CompiledLimit }[]): LimitList {
  // Entries come in policy order and the sort is stable: equal amounts keep it.
  entries.sort((a, b) => (a.limit.amount < b.limit.amount ? -1 : a.limit.amount > b.limit.amount ? 1 : 0));
  const criticalBefore = new Uint32Array(entries.length + 1);
  entries.forEach((e, j) => (criticalBefore[j + 1] = criticalBefore[j]! + (e.policy.severity === 'critical' ? 1 : 0)));
  return { kind, amounts: entries.map((e) => e.limit.amount), entries, criticalBefore };
}

export function policySet(policies: CompiledPolicy[]): PolicySet {
  const perCall: { policy: CompiledPolicy; limit: CompiledLimit }[] = [];
  const perCallFiltered = new Map<string, { test: RecordTest; entries: { policy: CompiledPolicy; limit: CompiledLimit }[] }>();
  const perCallValued = new Map<string, { currency: string; test: RecordTest | null; entries: { policy: CompiledPolicy; limit: CompiledLimit }[] }>();
  const byScope = new Map<string, { kind: LimitKind; entries: { policy: CompiledPolicy; limit: CompiledLimit }[] }>();
  const thresholds = new Map<string, { policy: CompiledPolicy; limit: CompiledLimit; percent: number; amount: bigint }[]>();
  for (const policy of policies) {
    for (const limit of policy.limits) {
      if (limit.scope === null) {
        if (limit.measure === 'value') {
          const key = `${limit.currency}\u0000${policy.matchKey ?? ''}`;
          let valued = perCallValued.get(key);
          if (!valued) perCallValued.set(key, (valued = { currency: limit.currency!, test: policy.match, entries: [] }));
          valued.entries.push({ policy, limit });
        } else if (policy.match === null) perCall.push({ policy, limit });
        else {
          let filtered = perCallFiltered.get(policy.matchKey!);
          if (!filtered) perCallFiltered.set(policy.matchKey!, (filtered = { test: policy.match, entries: [] }));
          filtered.entries.push({ policy, limit });
        }
        continue;
      }
      for (const percent of policy.notifyAt) {
        let list = thresholds.get(limit.scope);
        if (!list) thresholds.set(limit.scope, (list = []));
        list.push({ policy, limit, percent, amount: thresholdAmount(limit, percent) });
      }
      let scoped = byScope.get(limit.scope);
      if (!scoped) byScope.set(limit.scope, (scoped = { kind: limit.kind, entries: [] }));
      scoped.entries.push({ policy, limit });
    }
  }
  const windowed = new Map([...byScope].map(([scope, { kind, entries }]) => [scope, limitList(kind, entries)]));
  for (const [scope, entries] of thresholds) {
    entries.sort((a, b) => (a.amount < b.amount ? -1 : a.amount > b.amount ? 1 : 0));
    windowed.get(scope)!.thresholds = { amounts: entries.map((e) => e.amount), entries: entries.map(({ policy, limit, percent }) => ({ policy, limit, percent })) };
  }
  return {
    policies,
    perCall: perCall.length > 0 ? limitList('per_call', perCall) : undefined,
    perCallFiltered: [...perCallFiltered.values()].map(({ test, entries }) => ({ test, list: limitList('per_call', entries) })),
    perCallValued: [...perCallValued.values()].map(({ currency, test, entries }) => ({ currency, test, list: limitList('per_call', entries) })),
    valued: policies.filter((p) => p.currency !== null),
    windowed,
  };
}

const NO_POLICIES: readonly CompiledPolicy[] = [];

/** A team's active policies, by agent and by scope. */
export class PolicyIndex {
  readonly teamWide: PolicySet;
  private readonly teamWideLimits: number;
  /** Policies that name agents, per agent named, in order. */
  private readonly listed = new Map<string, CompiledPolicy[]>();
  /** The sets of agents they name, built on an agent's first record (a policy may name thousands of agents). */
  private readonly listedSets = new Map<string, PolicySet[]>();
  private readonly teamWideOnly: PolicySet[];
  private readonly bounds = new Map<string, ScopeBounds>();
  /** Whether any policy has an allowlist (most teams: none, and records skip the look-up). */
  readonly anyAllow: boolean;
  /** Whether any policy counts in value. */
  readonly anyValued: boolean;
  private readonly allowing = new Map<string, CompiledPolicy[]>();

  constructor(readonly policies: readonly CompiledPolicy[]) {
    const teamWide: CompiledPolicy[] = [];
    for (const policy of policies) {
      for (const limit of policy.limits) {
        if (limit.scope === null) continue;
        let floor = limit.amount;
        for (const percent of policy.notifyAt) {
          const amount = thresholdAmount(limit, percent);
          if (amount < floor) floor = amount;
        }
        const known = this.bounds.get(limit.scope);
        if (!known) this.bounds.set(limit.scope, { floor, ceiling: limit.amount });
        else {
          if (floor < known.floor) known.floor = floor;
          if (limit.amount > known.ceiling) known.ceiling = limit.amount;
        }
      }
      if (policy.agents === null) {
        teamWide.push(policy);
        continue;
      }
      for (const agent of policy.agents) {
        let list = this.listed.get(agent);
        if (!list) this.listed.set(agent, (list = []));
        list.push(policy);
      }
    }
    this.teamWide = policySet(teamWide);
    this.teamWideOnly = teamWide.length > 0 ? [this.teamWide] : [];
    this.teamWideLimits = teamWide.reduce((n, p) => n + p.limits.length, 0);
    this.anyAllow = policies.some((p) => p.allow !== null);
    this.anyValued = policies.some((p) => p.currency !== null);
  }

  /** The policies with an allowlist that apply to an agent, in policy order. */
  allowOf(agentId: string): readonly CompiledPolicy[] {
    if (!this.anyAllow) return NO_POLICIES;
    let found = this.allowing.get(agentId);
    if (!found) {
      if (this.allowing.size > 100_000) this.allowing.clear();
      this.allowing.set(agentId, (found = this.policiesOf(agentId).filter((p) => p.allow !== null)));
    }
    return found;
  }

  /** The floor and ceiling of a windowed scope over every policy of the team (see ScopeBounds). */
  boundsOf(scope: string): ScopeBounds {
    return this.bounds.get(scope) ?? UNREAD;
  }

  /** The sets of policies that apply to an agent: team-wide ones, then those naming it (if any). */
  setsOf(agentId: string): readonly PolicySet[] {
    if (!this.listed.has(agentId)) return this.teamWideOnly;
    let sets = this.listedSets.get(agentId);
    if (!sets) {
      if (this.listedSets.size > 100_000) this.listedSets.clear();
      const own = policySet(this.listed.get(agentId)!);
      this.listedSets.set(agentId, (sets = this.teamWide.policies.length > 0 ? [this.teamWide, own] : [own]));
    }
    return sets;
  }

  /** How many limits the policies that apply to an agent have (what a decision lists). */
  limitCountOf(agentId: string): number {
    let count = this.teamWideLimits;
    for (const policy of this.listed.get(agentId) ?? []) count += policy.limits.length;
    return count;
  }

  /** Every policy that applies to an agent, in the team's policy order. */
  policiesOf(agentId: string): CompiledPolicy[] {
    const own = this.listed.get(agentId);
    if (!own) return this.teamWide.policies;
    const all = this.teamWide.policies;
    if (all.length === 0) return own;
    const merged: CompiledPolicy[] = [];
    let a = 0;
    let b = 0;
    while (a < all.length || b < own.length) {
      if (b >= own.length || (a < all.length && all[a]!.order < own[b]!.order)) merged.push(all[a++]!);
      else merged.push(own[b++]!);
    }
    return merged;
  }
}
