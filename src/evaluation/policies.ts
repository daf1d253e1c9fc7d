import { createHash } from 'node:crypto';
import { canonicalPayee, DEFAULT_APPROVAL_TIMEOUT_S, isCallKind, limitText, type Limit, type LimitKind, type PolicyAllow, type PolicyMatch, type PolicyScope } from '../policies/limits.js';
import type { Policy, PolicyAction } from '../policies/policy.js';
import { endpointMatcher } from './matchers.js';
import { toUnits } from '../domain/money.js';
import { utcDay, utcHour, utcMinute, zonedDay, zonedMonth, zonedWeek, TOTAL_END, type Window } from '../domain/windows.js';

/** A limit ready to check: amount in 10^-18 units (or a count of calls), pattern as a function. */
export interface CompiledLimit {
  kind: LimitKind;
  /** spend: amounts add up; value: the records' values in `currency`; calls: each record adds 1. */
  measure: 'spend' | 'value' | 'calls';
  /** Of a value limit: the currency its amount and totals are in. */
  currency: string | null;
  /** spend and value: in 10^-18 units; calls: the count. */
  amount: bigint;
  amountText: string;
  /** The running total it reads (see limitScope); null for per_call. */
  scope: string | null;
  endpoint?: string;
  matches?: (domain: string, endpoint: string) => boolean;
}

/** What a policy's filter reads of a record (or of an authorization: asset or network undefined when not given). */
export interface RecordFacts {
  domain: string;
  endpoint: string;
  category: string;
  asset: string | undefined;
  network: string | undefined;
  tags: readonly string[];
}

export type RecordTest = (facts: RecordFacts) => boolean;

export interface CompiledPolicy {
  /** Its place among the team's active policies (created_at, id): checks list policies in this order. */
  order: number;
  id: string;
  name: string;
  action: PolicyAction;
  /** Of what a breach by a record raises: flag a warning; block and approve critical (money moved that should have been stopped or asked for). */
  severity: 'warning' | 'critical';
  /** approve: how long an authorization waits for a person (ms). */
  approvalTimeoutMs: number;
  /** Its allowlist: what of a record or authorization it does not allow (empty: all of it allowed); null: no allowlist. */
  allow: AllowTest | null;
  timezone: string;
  /** null: every agent of the team. */
  agents: Set<string> | null;
  scope: PolicyScope;
  /** A pool's members as a key (see poolKeyOf): the subject of its running totals; null for scope agent. */
  poolKey: string | null;
  /** The records it counts and checks (null: all), and the canonical filter's short hash. */
  match: RecordTest | null;
  matchKey: string | null;
  /** Percentages of each windowed limit whose crossing raises a threshold alert, ascending. */
  notifyAt: number[];
  startsAt: number;
  /** Limits of money are values in it (ISO 4217); null: amounts of the asset. */
  currency: string | null;
  limits: CompiledLimit[];
}

/** What compilePolicy reads of a policy (limits parsed; match as stored JSON or parsed). */
export type PolicySource = Pick<Policy, 'id' | 'name' | 'action' | 'timezone' | 'agents' | 'limits'> &
  Partial<Pick<Policy, 'scope' | 'notifyAt' | 'startsAt' | 'approvalTimeoutS' | 'currency'>> & { match?: PolicyMatch | string | null; allow?: PolicyAllow | string | null };

export function compilePolicy(p: PolicySource, order = 0): CompiledPolicy {
  const timezone = p.timezone ?? 'UTC';
  const match = typeof p.match === 'string' ? (JSON.parse(p.match) as PolicyMatch) : (p.match ?? null);
  const allow = typeof p.allow === 'string' ? (JSON.parse(p.allow) as PolicyAllow) : (p.allow ?? null);
  const facts: ScopeFacts = {
    poolKey: p.scope === 'pool' ? poolKeyOf(p.agents) : null,
    timezone,
    matchKey: match ? matchKeyOf(match) : null,
    startsAt: p.startsAt ?? 0,
    currency: p.currency ?? null,
  };
  return {
    order,
    id: p.id,
    name: p.name,
    action: p.action,
    severity: p.action === 'flag' ? 'warning' : 'critical',
    approvalTimeoutMs: (p.approvalTimeoutS ?? DEFAULT_APPROVAL_TIMEOUT_S) * 1000,
    allow: allow ? allowTest(allow) : null,
    timezone,
    agents: p.agents.length ? new Set(p.agents) : null,
    scope: p.scope ?? 'agent',
    poolKey: facts.poolKey,
    match: match ? recordTest(match) : null,
    matchKey: facts.matchKey,
    notifyAt: [...(p.notifyAt ?? [])].sort((a, b) => a - b),
    startsAt: facts.startsAt,
    currency: facts.currency,
    limits: p.limits.map((l) => compileLimit(l, facts)),
  };
}

/** What a limit's scope depends on besides the limit. */
interface ScopeFacts {
  /** A pool's members (see poolKeyOf); null: each agent its own totals. */
  poolKey: string | null;
  timezone: string;
  matchKey: string | null;
  startsAt: number;
  /** Limits of money in value of this currency; null: amounts. */
  currency: string | null;
}

/**
 * A pool's identity: its members (`team` for every agent of the team, else a short hash of its
 * agents). Pools of the same members, filter and window sum the same records, so they share one
 * running total, as agents' own totals are shared by every policy that reads them: a record adds to
 * each distinct total once, however many policies read it. Changing a pool's agents gives it new
 * totals, read whole from the event store.
 */
export function poolKeyOf(agents: readonly string[]): string {
  if (agents.length === 0) return 'team';
  return createHash('sha256').update([...agents].sort().join('\n')).digest('base64url').slice(0, 16);
}

/** A filter's identity: policies with the same filter (and window) share running totals. */
export function matchKeyOf(match: PolicyMatch): string {
  return createHash('sha256').update(JSON.stringify(match)).digest('base64url').slice(0, 16);
}

/** A stored (canonical) filter as a test: every list given must hold one of the record's values. */
export function recordTest(match: PolicyMatch): RecordTest {
  const set = (values: string[] | undefined) => (values ? new Set(values) : undefined);
  const categories = set(match.categories);
  const networks = set(match.networks);
  const assets = set(match.assets);
  const tags = set(match.tags);
  const endpoints = match.endpoints?.map(endpointMatcher);
  return (f) =>
    (!categories || categories.has(f.category)) &&
    // An authorization that does not say its asset or network is checked against every budget
    // that filters on them: leaving a field out never gets around a budget.
    (!networks || f.network === undefined || networks.has(f.network)) &&
    (!assets || f.asset === undefined || assets.has(f.asset.toLowerCase())) &&
    (!tags || f.tags.some((t) => tags.has(t))) &&
    (!endpoints || endpoints.some((m) => m(f.domain, f.endpoint)));
}

/** What an allowlist refuses of a record or authorization: the lists it is outside, as "payee 0xab…" (empty: allowed). */
export type AllowTest = (facts: RecordFacts, payee: string | null) => string[];

/**
 * An allowlist's test. Deny by default: a value not given (an authorization without its payee,
 * asset or network) is outside a list that is given, so leaving a field out never gets around it.
 */
export function allowTest(allow: PolicyAllow): AllowTest {
  const set = (values: string[] | undefined) => (values ? new Set(values) : undefined);
  const payees = set(allow.payees);
  const networks = set(allow.networks);
  const assets = set(allow.assets);
  const endpoints = allow.endpoints?.map(endpointMatcher);
  return (f, payee) => {
    const outside: string[] = [];
    if (payees && (payee === null || payee === '' || !payees.has(canonicalPayee(payee)))) outside.push(payee ? `payee ${payee}` : 'no payee given');
    if (networks && (f.network === undefined || !networks.has(f.network))) outside.push(f.network ? `network ${f.network}` : 'no network given');
    if (assets && (f.asset === undefined || !assets.has(f.asset.toLowerCase()))) outside.push(f.asset ? `asset ${f.asset}` : 'no asset given');
    if (endpoints && !endpoints.some((m) => m(f.domain, f.endpoint))) outside.push(`endpoint ${f.endpoint}`);
    return outside;
  };
}

/** Compiled limits never change: policies with the same limit (one template over many agents) share one. */
const compiledLimits = new Map<string, CompiledLimit>();

/**
 * Scope strings, one object per text: limits of many policies name one scope, and maps keyed by
 * it (totals, limit lists) then compare one pointer instead of the text.
 */
const scopeStrings = new Map<string, string>();

function internScope(scope: string | null): string | null {
  if (scope === null) return null;
  const known = scopeStrings.get(scope);
  if (known !== undefined) return known;
  if (scopeStrings.size >= 100_000) scopeStrings.clear();
  scopeStrings.set(scope, scope);
  return scope;
}

function compileLimit(l: Limit, facts: ScopeFacts): CompiledLimit {
  const scope = internScope(limitScope(l.kind, facts, l.endpoint));
  const text = limitText(l);
  const calls = isCallKind(l.kind);
  const currency = calls ? null : facts.currency;
  const key = `${l.kind}\u0000${text}\u0000${scope ?? ''}\u0000${currency ?? ''}`;
  let compiled = compiledLimits.get(key);
  if (!compiled) {
    compiled = {
      kind: l.kind,
      measure: calls ? 'calls' : currency ? 'value' : 'spend',
      currency,
      amount: calls ? BigInt(l.count!) : toUnits(l.amount!),
      amountText: text,
      scope,
      ...(l.endpoint ? { endpoint: l.endpoint, matches: endpointMatcher(l.endpoint) } : {}),
    };
    if (compiledLimits.size >= 100_000) compiledLimits.clear();
    compiledLimits.set(key, compiled);
  }
  return compiled;
}

/**
 * The running totals these policies read (as loaded for evaluation): their scopes, and of agents'
 * scopes read only by policies that name agents, those agents (a scope read by a team-wide policy
 * reads every agent's total, and is not listed in `agentsOf`).
 */
export function totalsRead(
  policies: readonly { agents: string[]; limits: string; timezone: string | null; scope: PolicyScope; match: string | null; startsAt: number; currency: string | null }[],
): { scopes: string[]; agentsOf: Map<string, Set<string>> } {
  const scopes = new Set<string>();
  const agentsOf = new Map<string, Set<string> | null>();
  for (const p of policies) {
    const facts: ScopeFacts = {
      poolKey: p.scope === 'pool' ? poolKeyOf(p.agents) : null,
      timezone: p.timezone ?? 'UTC',
      matchKey: p.match === null ? null : matchKeyOf(JSON.parse(p.match) as PolicyMatch),
      startsAt: p.startsAt,
      currency: p.currency,
    };
    for (const l of JSON.parse(p.limits) as Limit[]) {
      const scope = limitScope(l.kind, facts, l.endpoint);
      if (scope === null) continue;
      scopes.add(scope);
      if (p.scope === 'pool') continue;
      const agents = agentsOf.get(scope);
      if (p.agents.length === 0) agentsOf.set(scope, null);
      else if (agents === undefined) agentsOf.set(scope, new Set(p.agents));
      else if (agents !== null) for (const agent of p.agents) agents.add(agent);
    }
  }
  const named = new Map<string, Set<string>>();
  for (const [scope, agents] of agentsOf) if (agents !== null) named.set(scope, agents);
  return { scopes: [...scopes], agentsOf: named };
}

/**
 * The scope of the running total a limit reads; null for per_call (the payment alone). The window
 * comes last: `h` (UTC hour), `n` (UTC minute), `d:<zone>`, `w:<zone>`, `m:<zone>` (day, ISO week,
 * month in a zone), `t:<starts_at ms>` (since the policy's start), `e:<pattern>` (UTC day to
 * matching endpoints). Before it, each of: `p:<pool key>|` a pool (one total for its members,
 * see poolKeyOf), `c|` a count of calls, `v:<currency>|` a sum of values in a currency, `f:<filter
 * hash>|` only records the filter matches. Limits without these read the scopes they always read,
 * so existing totals stay valid.
 */
function limitScope(kind: LimitKind, p: ScopeFacts, endpoint: string | undefined): string | null {
  if (kind === 'per_call') return null;
  const measure = isCallKind(kind) ? 'c|' : p.currency ? `v:${p.currency}|` : '';
  const prefix = (p.poolKey !== null ? `p:${p.poolKey}|` : '') + measure + (p.matchKey ? `f:${p.matchKey}|` : '');
  return prefix + windowScope(kind, p, endpoint);
}

function windowScope(kind: Exclude<LimitKind, 'per_call'>, p: ScopeFacts, endpoint?: string): string {
  switch (kind) {
    case 'per_hour':
    case 'calls_per_hour':
      return 'h';
    case 'calls_per_minute':
      return 'n';
    case 'daily':
    case 'calls_per_day':
      return `d:${p.timezone}`;
    case 'weekly':
      return `w:${p.timezone}`;
    case 'monthly':
      return `m:${p.timezone}`;
    case 'total':
      return `t:${p.startsAt}`;
    case 'per_endpoint':
      return `e:${endpoint}`;
  }
}

/** The window part of a scope (see limitScope): what follows its prefixes. */
export function windowPartOf(scope: string): string {
  let rest = scope;
  for (;;) {
    if (rest.startsWith('c|')) rest = rest.slice(2);
    else if (rest.startsWith('p:') || rest.startsWith('f:') || rest.startsWith('v:')) rest = rest.slice(rest.indexOf('|') + 1);
    else return rest;
  }
}

/**
 * What a windowed limit sums: a subject's spend (or calls) in a window of some scope. Policies that
 * share a scope share one running total. The subject is the agent, or for a pool the policy.
 */
export interface WindowScope {
  subject: string;
  scope: string;
  window: Window;
}

export const scopeKey = (s: WindowScope) => `${s.subject}\u0000${s.scope}\u0000${s.window.start}`;

/** The subject of a policy's totals and alerts for an agent's record: the agent, or the pool's policy. */
export const subjectOf = (policy: Pick<CompiledPolicy, 'scope' | 'id'>, agentId: string): string => (policy.scope === 'pool' ? policy.id : agentId);

/**
 * The window of a windowed limit's kind that holds an instant (per_endpoint: the UTC day), or null
 * when it holds none (an instant before a `total` starts).
 */
export function windowOf(kind: Exclude<LimitKind, 'per_call'>, timezone: string, startsAt: number): (t: number) => Window | null {
  switch (kind) {
    case 'calls_per_minute':
      return utcMinute;
    case 'per_hour':
    case 'calls_per_hour':
      return utcHour;
    case 'daily':
    case 'calls_per_day':
      return (t) => zonedDay(t, timezone);
    case 'weekly':
      return (t) => zonedWeek(t, timezone);
    case 'monthly':
      return (t) => zonedMonth(t, timezone);
    case 'total': {
      const window = { start: startsAt, end: TOTAL_END };
      return (t) => (t >= startsAt ? window : null);
    }
    case 'per_endpoint':
      return utcDay;
  }
}
