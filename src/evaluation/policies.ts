import type { EventRow } from '../ingest/records.js';
import type { Occurrence } from '../alerts/repository.js';
import type { Limit, LimitKind } from '../policies/limits.js';
import type { Policy } from '../policies/repository.js';
import { endpointMatcher } from './matchers.js';
import { formatUnits, toUnits } from './money.js';
import { utcDay, utcHour, zonedDay, zonedMonth, zonedWeek, type Window } from './windows.js';

/** A limit ready to check: amount in 10^-18 units, pattern as a function. */
export interface CompiledLimit {
  kind: LimitKind;
  amount: bigint;
  amountText: string;
  /** The running total it reads (`h`, `d:<zone>`, `w:<zone>`, `m:<zone>`, `e:<pattern>`, see WindowScope); null for per_call. */
  scope: string | null;
  endpoint?: string;
  matches?: (domain: string, endpoint: string) => boolean;
}

export interface CompiledPolicy {
  /** Its place among the team's active policies (created_at, id): checks list policies in this order. */
  order: number;
  id: string;
  name: string;
  severity: 'warning' | 'critical';
  timezone: string;
  /** null: every agent of the team. */
  agents: Set<string> | null;
  limits: CompiledLimit[];
}

export function compilePolicy(p: Pick<Policy, 'id' | 'name' | 'action' | 'timezone' | 'agents' | 'limits'>, order = 0): CompiledPolicy {
  const timezone = p.timezone ?? 'UTC';
  return {
    order,
    id: p.id,
    name: p.name,
    severity: p.action === 'block' ? 'critical' : 'warning',
    timezone,
    agents: p.agents.length ? new Set(p.agents) : null,
    limits: p.limits.map((l) => compileLimit(l, timezone)),
  };
}

/** The kinds whose windows are calendar windows in the policy's time zone. */
const ZONED = new Set<LimitKind>(['daily', 'weekly', 'monthly']);

/** Compiled limits never change: policies with the same limit (one template over many agents) share one. */
const compiledLimits = new Map<string, CompiledLimit>();

function compileLimit(l: Limit, timezone: string): CompiledLimit {
  const key = `${l.kind}\u0000${l.amount}\u0000${l.endpoint ?? ''}\u0000${ZONED.has(l.kind) ? timezone : ''}`;
  let compiled = compiledLimits.get(key);
  if (!compiled) {
    compiled = {
      kind: l.kind,
      amount: toUnits(l.amount),
      amountText: l.amount,
      scope: limitScope(l.kind, timezone, l.endpoint),
      ...(l.endpoint ? { endpoint: l.endpoint, matches: endpointMatcher(l.endpoint) } : {}),
    };
    if (compiledLimits.size >= 100_000) compiledLimits.clear();
    compiledLimits.set(key, compiled);
  }
  return compiled;
}

/** The scopes of the running totals these policies read (as stored: limits JSON, timezone null for UTC). */
export function scopesRead(policies: readonly { limits: string; timezone: string | null }[]): string[] {
  const scopes = new Set<string>();
  for (const p of policies) {
    for (const l of JSON.parse(p.limits) as Limit[]) {
      const scope = limitScope(l.kind, p.timezone ?? 'UTC', l.endpoint);
      if (scope !== null) scopes.add(scope);
    }
  }
  return [...scopes];
}

/** The scope of the running total a limit reads; null for per_call (the payment alone). */
function limitScope(kind: LimitKind, timezone: string, endpoint: string | undefined): string | null {
  switch (kind) {
    case 'per_call':
      return null;
    case 'per_hour':
      return 'h';
    case 'daily':
      return `d:${timezone}`;
    case 'weekly':
      return `w:${timezone}`;
    case 'monthly':
      return `m:${timezone}`;
    case 'per_endpoint':
      return `e:${endpoint}`;
  }
}

/**
 * What a windowed limit sums: an agent's spend in a window of some scope. Policies that share a
 * scope share one running total (`h` UTC hour; `d:<zone>`, `w:<zone>`, `m:<zone>` the day, ISO week
 * or calendar month in a zone; `e:<pattern>` UTC day to matching endpoints).
 */
export interface WindowScope {
  agentId: string;
  scope: string;
  window: Window;
  /** Events that count: all of the agent's, or those to matching endpoints. */
  pattern?: string;
}

export const scopeKey = (s: WindowScope) => `${s.agentId}\u0000${s.scope}\u0000${s.window.start}`;

/** The window of a windowed limit's kind that holds an instant (per_endpoint: the UTC day). */
export function windowOf(kind: Exclude<LimitKind, 'per_call'>, timezone: string): (t: number) => Window {
  switch (kind) {
    case 'per_hour':
      return utcHour;
    case 'daily':
      return (t) => zonedDay(t, timezone);
    case 'weekly':
      return (t) => zonedWeek(t, timezone);
    case 'monthly':
      return (t) => zonedMonth(t, timezone);
    case 'per_endpoint':
      return utcDay;
  }
}

/** The scope a windowed limit of a policy sums for an event, undefined for per_call. */
export function scopeOf(policy: CompiledPolicy, limit: CompiledLimit, row: EventRow): WindowScope | undefined {
  if (limit.kind === 'per_call' || limit.scope === null) return undefined;
  const window = windowOf(limit.kind, policy.timezone)(row.event_time);
  return { agentId: row.agent_id, scope: limit.scope, window, ...(limit.endpoint ? { pattern: limit.endpoint } : {}) };
}

const KIND_TEXT: Record<LimitKind, string> = {
  per_call: 'per-call',
  per_hour: 'hourly',
  daily: 'daily',
  weekly: 'weekly',
  monthly: 'monthly',
  per_endpoint: 'per-endpoint daily',
};

/** A limit one event broke: the facts of its alert, before any text is built. */
export interface Breach {
  policy: CompiledPolicy;
  limit: CompiledLimit;
  /** The amount (per_call) or the window's spend including the event, in 10^-18 units. */
  observed: bigint;
  window: Window | null;
  /** What makes two occurrences the same breach: agent, policy, limit, window. */
  dedupKey: string;
}

/** What makes two occurrences (or a declined authorization) the same breach: agent, policy, limit, window. */
export function breachKey(agentId: string, policy: CompiledPolicy, limit: CompiledLimit, window: Window | null): string {
  return `${agentId}\u0000policy\u0000${policy.id}\u0000${limit.kind}\u0000${limit.endpoint ?? ''}\u0000${window?.start ?? ''}`;
}

/** The alert occurrence of a breach: observed value, message and details as the alert shows them. */
export function breachOccurrence(teamId: string, breach: Breach, row: EventRow, amount: bigint, now: number): Occurrence {
  const { policy, limit, observed, window } = breach;
  const late = window !== null && window.end <= now;
  // A payment reads with the digits it was sent with ("2.00"), unless it counts at another amount
  // (a zero-amount record capturing its hold); a sum has no digits of its own.
  const paid = row.amount_text && toUnits(row.amount_text) === amount ? row.amount_text : formatUnits(amount);
  const what = limit.kind === 'per_call' ? `a payment of ${paid}` : `spend of ${formatUnits(observed)}`;
  const where = limit.endpoint ? ` to ${limit.endpoint}` : '';
  const span = window ? ` in the window ${new Date(window.start).toISOString()} to ${new Date(window.end).toISOString()}` : '';
  return {
    teamId,
    dedupKey: breach.dedupKey,
    type: 'violation',
    kind: limit.kind,
    severity: policy.severity,
    agentId: row.agent_id,
    policyId: policy.id,
    window,
    observed: formatUnits(observed),
    limit: limit.amountText,
    subject: limit.endpoint ?? null,
    details: { policyName: policy.name, ...(late ? { late: true } : {}) },
    message:
      `Agent ${row.agent_id} broke the ${KIND_TEXT[limit.kind]} limit of ${limit.amountText} of policy "${policy.name}": ` +
      `${what}${where}${span}` +
      (late ? ` (a late record: this window closed at ${new Date(window.end).toISOString()})` : ''),
    eventIds: [row.id],
    count: 1,
    firstSeen: row.event_time,
    lastSeen: row.event_time,
  };
}
