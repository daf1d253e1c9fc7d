/** The occurrences a record raises beside its breaches, kept apart from the rules that decide when to raise them. */
import type { Occurrence } from '../domain/alerts.js';
import type { EventRow } from '../domain/record-row.js';
import type { OccurrenceMerger } from './occurrences.js';
import { thresholdOccurrence } from './breaches.js';
import { crossedRange, mayCross, type LimitList } from './policy-index.js';
import type { Window } from '../domain/windows.js';

/** The breach key of the client's own verdict (blocked or flagged), or undefined when it allowed the payment. */
export function clientVerdictKey(row: EventRow): string | undefined {
  if (row.policy_evaluation !== 'blocked' && row.policy_evaluation !== 'flagged') return undefined;
  return `${row.agent_id}\u0000client\u0000${row.policy_evaluation}\u0000${row.policy_id ?? row.domain}`;
}

/** The client's own verdict: blocked is a critical violation, flagged a warning. */
export function clientReported(row: EventRow, dedupKey: string): Occurrence {
  const blocked = row.policy_evaluation === 'blocked';
  const subject = row.policy_id ?? row.domain;
  return {
    teamId: row.team_id,
    dedupKey,
    type: 'violation',
    kind: blocked ? 'client_blocked' : 'client_flagged',
    severity: blocked ? 'critical' : 'warning',
    agentId: row.agent_id,
    policyId: null,
    window: null,
    observed: row.amount,
    limit: null,
    subject,
    details: { clientPolicyId: row.policy_id, endpoint: row.endpoint, budgetRemaining: row.budget_remaining },
    message:
      `The client ${blocked ? 'blocked' : 'flagged'} a payment of ${row.amount} by agent ${row.agent_id} to ${row.endpoint}` +
      (row.policy_id ? ` (client policy ${row.policy_id})` : ''),
    eventIds: [row.id],
    count: 1,
    firstSeen: row.event_time,
    lastSeen: row.event_time,
  };
}

/** One alert per agent, asset and UTC day of records no rate values under a policy counting in value. */
export const unvaluedKey = (agentId: string, asset: string, day: Window) => `${agentId}\u0000unvalued\u0000${asset}\u0000${day.start}`;

/**
 * A record a policy counting in value cannot count: no rate values its asset in the policy's
 * currency. It adds nothing to that policy's totals, so it is raised (critical when the policy
 * blocks or asks a person): nothing slips past a budget in value unseen.
 */
export function unvaluedRecord(row: EventRow, dedupKey: string, day: Window, policy: { id: string; name: string; action: string; currency: string | null }): Occurrence {
  const asset = row.asset || 'no asset';
  return {
    teamId: row.team_id,
    dedupKey,
    type: 'violation',
    kind: 'unvalued',
    severity: policy.action === 'flag' ? 'warning' : 'critical',
    agentId: row.agent_id,
    policyId: policy.id,
    window: day,
    observed: row.amount,
    limit: null,
    subject: row.asset,
    details: { asset: row.asset, currency: policy.currency, endpoint: row.endpoint },
    message: `Agent ${row.agent_id} paid ${row.amount} in ${asset}, which no rate values in ${policy.currency}: policy "${policy.name}" cannot count it (give the asset a rate: PUT /api/v1/rates/${encodeURIComponent(row.asset || 'ASSET')})`,
    eventIds: [row.id],
    count: 1,
    firstSeen: row.event_time,
    lastSeen: row.event_time,
  };
}

/** One alert per suspended agent and UTC day. */
export const suspendedKey = (agentId: string, day: Window) => `${agentId}\u0000suspended\u0000${day.start}`;

/** A record from a suspended agent: a critical violation, one alert per agent and UTC day (counting the records). */
export function suspendedRecord(row: EventRow, dedupKey: string, day: Window): Occurrence {
  return {
    teamId: row.team_id,
    dedupKey,
    type: 'violation',
    kind: 'suspended',
    severity: 'critical',
    agentId: row.agent_id,
    policyId: null,
    window: day,
    observed: row.amount,
    limit: null,
    subject: null,
    details: { endpoint: row.endpoint },
    message: `Agent ${row.agent_id} is suspended but paid ${row.amount} to ${row.endpoint}`,
    eventIds: [row.id],
    count: 1,
    firstSeen: row.event_time,
    lastSeen: row.event_time,
  };
}

/** A first payment of an agent to a payee it had not paid (it knew `knownPayees` others): a warning. */
export function newPayeeOccurrence(row: EventRow, knownPayees: number): Occurrence {
  return {
    teamId: row.team_id,
    dedupKey: `${row.agent_id}\u0000anomaly\u0000new_payee\u0000${row.payee_address}`,
    type: 'anomaly',
    kind: 'new_payee',
    severity: 'warning',
    agentId: row.agent_id,
    policyId: null,
    window: null,
    observed: row.amount,
    limit: null,
    subject: row.payee_address,
    details: { payee: row.payee_address, knownPayees },
    message: `Agent ${row.agent_id} paid ${row.amount} to ${row.payee_address}, a payee it has not paid before (via ${row.endpoint})`,
    eventIds: [row.id],
    count: 1,
    firstSeen: row.event_time,
    lastSeen: row.event_time,
  };
}

/** Thresholds in (before, now]: each once, as the total only grows, so a restart reading it whole never repeats one. */
export function addCrossings(merged: OccurrenceMerger, i: number, row: EventRow, list: LimitList, before: bigint, spent: bigint, window: Window): void {
  const thresholds = list.thresholds;
  if (!thresholds || !mayCross(thresholds, before, spent)) return;
  const [from, to] = crossedRange(thresholds, before, spent);
  for (let j = from; j < to; j++) {
    const { policy, limit, percent } = thresholds.entries[j]!;
    const occurrence = thresholdOccurrence(row.team_id, { policy, limit, percent, observed: spent, window }, row);
    merged.add(i, row, occurrence.dedupKey, () => occurrence);
  }
}
