/** The alerts a policy's limits raise (a breach, a threshold crossed, a payment outside an allowlist) and their texts. */
import type { EventRow } from '../domain/record-row.js';
import type { Occurrence } from '../domain/alerts.js';
import type { LimitKind } from '../policies/limits.js';
import { formatUnits, toUnits } from '../domain/money.js';
import { TOTAL_END, type Window } from '../domain/windows.js';
import { subjectOf, type CompiledLimit, type CompiledPolicy } from './policies.js';

const KIND_TEXT: Record<LimitKind, string> = {
  per_call: 'per-call',
  per_hour: 'hourly',
  daily: 'daily',
  weekly: 'weekly',
  monthly: 'monthly',
  total: 'total',
  per_endpoint: 'per-endpoint daily',
  calls_per_minute: 'calls-per-minute',
  calls_per_hour: 'calls-per-hour',
  calls_per_day: 'calls-per-day',
};

/** An observed value as its limit reads: money, or a count of calls. */
export const formatObserved = (limit: Pick<CompiledLimit, 'measure'>, value: bigint): string => (limit.measure === 'calls' ? value.toString() : formatUnits(value));

/** A window as alerts and decisions show it: a `total` has no end (null). */
export const shownEnd = (window: Window): number | null => (window.end >= TOTAL_END ? null : window.end);

/**
 * Instants as alerts and authorizations write them, remembered: a breach met by every group of a
 * busy window writes its window's bounds into each update's message, every decision's answer shows
 * the bounds of the same windows, and formatting a date costs more than a look-up.
 */
const isoTimes = new Map<number, string>();
export function isoTime(ms: number): string {
  let text = isoTimes.get(ms);
  if (text === undefined) {
    if (isoTimes.size >= 4096) isoTimes.clear();
    isoTimes.set(ms, (text = new Date(ms).toISOString()));
  }
  return text;
}

/** A window as messages say it: "in the window <start> to <end>", or "since <start>" for a `total`. */
function windowText(window: Window): string {
  const end = shownEnd(window);
  return end === null ? `since ${isoTime(window.start)}` : `in the window ${isoTime(window.start)} to ${isoTime(end)}`;
}

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

/** What makes two occurrences (or a declined authorization) the same breach: subject (agent or pool), policy, limit, window. */
export function breachKey(agentId: string, policy: CompiledPolicy, limit: CompiledLimit, window: Window | null): string {
  return `${subjectOf(policy, agentId)}\u0000policy\u0000${policy.id}\u0000${limit.kind}\u0000${limit.endpoint ?? ''}\u0000${window?.start ?? ''}`;
}

/**
 * The alert occurrence of a breach: observed value, message and details as the alert shows them
 * (`text` false: without them, for one whose text is built later from its latest occurrence).
 */
export function breachOccurrence(teamId: string, breach: Breach, row: EventRow, amount: bigint, now: number, text = true): Occurrence {
  const { policy, limit, observed, window } = breach;
  if (!text) {
    return {
      teamId, dedupKey: breach.dedupKey, type: 'violation', kind: limit.kind, severity: policy.severity, agentId: row.agent_id, policyId: policy.id, window,
      observed: null, limit: limit.amountText, subject: limit.endpoint ?? null, details: {}, message: '', eventIds: [row.id], count: 1, firstSeen: row.event_time, lastSeen: row.event_time,
    };
  }
  const late = window !== null && window.end <= now;
  const observedText = formatObserved(limit, observed);
  let what: string;
  if (limit.kind === 'per_call') {
    // A payment reads with the digits it was sent with ("2.00"), unless it counts at another amount
    // (a zero-amount record capturing its hold); a sum has no digits of its own.
    const paid = row.amount_text && toUnits(row.amount_text) === amount ? row.amount_text : formatUnits(amount);
    what = `a payment of ${paid}`;
  } else what = limit.measure === 'calls' ? `${observedText} calls` : `spend of ${observedText}`;
  const where = limit.endpoint ? ` to ${limit.endpoint}` : '';
  const span = window ? ` ${windowText(window)}` : '';
  const who = policy.scope === 'pool' ? `The pool of policy "${policy.name}" (agent ${row.agent_id} paying)` : `Agent ${row.agent_id}`;
  const whose = policy.scope === 'pool' ? 'its' : `the`;
  const of = policy.scope === 'pool' ? '' : ` of policy "${policy.name}"`;
  return {
    teamId,
    dedupKey: breach.dedupKey,
    type: 'violation',
    kind: limit.kind,
    severity: policy.severity,
    agentId: row.agent_id,
    policyId: policy.id,
    window,
    observed: observedText,
    limit: limit.amountText,
    subject: limit.endpoint ?? null,
    details: { policyName: policy.name, ...(policy.scope === 'pool' ? { scope: 'pool' } : {}), ...(late ? { late: true } : {}) },
    message:
      `${who} broke ${whose} ${KIND_TEXT[limit.kind]} limit of ${limit.amountText}${of}: ` +
      `${what}${where}${span}` +
      (late ? ` (a late record: this window closed at ${isoTime(window.end)})` : ''),
    eventIds: [row.id],
    count: 1,
    firstSeen: row.event_time,
    lastSeen: row.event_time,
  };
}

/** One not_allowed alert per agent, policy and UTC day: a record or declined authorization outside the policy's allowlist. */
export function notAllowedKey(agentId: string, policy: CompiledPolicy, day: number): string {
  return `${agentId}\u0000not_allowed\u0000${policy.id}\u0000${day}`;
}

/** The alert occurrence of a record (or authorization, as the event it would be) outside a policy's allowlist. */
export function notAllowedOccurrence(teamId: string, policy: CompiledPolicy, row: EventRow, outside: readonly string[], day: Window): Occurrence {
  return {
    teamId,
    dedupKey: notAllowedKey(row.agent_id, policy, day.start),
    type: 'violation',
    kind: 'not_allowed',
    severity: policy.severity,
    agentId: row.agent_id,
    policyId: policy.id,
    window: day,
    observed: null,
    limit: null,
    subject: null,
    details: { policyName: policy.name, outside: [...outside] },
    message: `Agent ${row.agent_id} paid outside the allowlist of policy "${policy.name}": ${outside.join(', ')} (to ${row.endpoint})`,
    eventIds: [row.id],
    count: 1,
    firstSeen: row.event_time,
    lastSeen: row.event_time,
  };
}

/** A subject's total reached a percentage of a limit (notify_at): the facts of its threshold alert. */
export interface Crossing {
  policy: CompiledPolicy;
  limit: CompiledLimit;
  percent: number;
  /** The total including the record that crossed. */
  observed: bigint;
  window: Window;
}

/** One threshold alert per subject, policy, limit, window and percentage. */
export function thresholdKey(agentId: string, c: Pick<Crossing, 'policy' | 'limit' | 'window' | 'percent'>): string {
  return `${subjectOf(c.policy, agentId)}\u0000threshold\u0000${c.policy.id}\u0000${c.limit.kind}\u0000${c.limit.endpoint ?? ''}\u0000${c.window.start}\u0000${c.percent}`;
}

export function thresholdOccurrence(teamId: string, c: Crossing, row: EventRow): Occurrence {
  const { policy, limit, window, percent } = c;
  const who = policy.scope === 'pool' ? `The pool of policy "${policy.name}"` : `Agent ${row.agent_id}`;
  const span = windowText(window);
  const used = limit.measure === 'calls' ? `${c.observed} calls` : `spend of ${formatUnits(c.observed)}`;
  return {
    teamId,
    dedupKey: thresholdKey(row.agent_id, c),
    type: 'threshold',
    kind: limit.kind,
    severity: 'info',
    agentId: row.agent_id,
    policyId: policy.id,
    window,
    observed: formatObserved(limit, c.observed),
    limit: limit.amountText,
    subject: limit.endpoint ?? null,
    details: { policyName: policy.name, percent, ...(policy.scope === 'pool' ? { scope: 'pool' } : {}) },
    message:
      `${who} reached ${percent}% of ${policy.scope === 'pool' ? 'its' : 'the'} ${KIND_TEXT[limit.kind]} limit of ${limit.amountText}` +
      `${limit.endpoint ? ` to ${limit.endpoint}` : ''}${policy.scope === 'pool' ? '' : ` of policy "${policy.name}"`}: ${used} ${span}`,
    eventIds: [row.id],
    count: 1,
    firstSeen: row.event_time,
    lastSeen: row.event_time,
  };
}
