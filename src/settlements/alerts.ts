/** The alerts the verifier raises (type settlement), and the suspension an unreported payment may bring. */
import type { Occurrence, Severity } from '../domain/alerts.js';
import type { Difference } from '../domain/settlement.js';
import { utcDay } from '../domain/windows.js';
import { updateAgent } from '../agents/repository.js';
import type { PolicyRevisions } from '../policies/revisions.js';
import { recordOccurrences } from '../alerts/repository.js';
import { perform, type Sql } from '../stores/sql.js';

export type SettlementAlertKind = 'mismatch' | 'failed' | 'not_found' | 'unreported';

const SEVERITY: Record<SettlementAlertKind, Severity> = { mismatch: 'critical', failed: 'warning', not_found: 'warning', unreported: 'critical' };

export interface SettlementAlert {
  teamId: string;
  agentId: string;
  kind: SettlementAlertKind;
  network: string;
  txHash: string;
  /** The record checked; undefined for an unreported transfer. */
  recordId?: string;
  differences?: Difference[];
  /** For an unreported transfer: what moved. */
  transfer?: { token: string; amount: string; payee: string; blockNumber: number };
  note?: string | null;
}

function message(a: SettlementAlert): string {
  const tx = `transaction ${a.txHash} on ${a.network}`;
  switch (a.kind) {
    case 'mismatch':
      return `Record ${a.recordId} of agent ${a.agentId} does not match ${tx}: ${(a.differences ?? []).map((d) => `${d.field} reported ${d.reported}, observed ${d.observed}`).join('; ')}`;
    case 'failed':
      return `Record ${a.recordId} of agent ${a.agentId} claims ${tx}, which reverted: nothing was paid`;
    case 'not_found':
      return `Record ${a.recordId} of agent ${a.agentId} claims ${tx}, which the chain does not have${a.note ? ` (${a.note})` : ''}`;
    case 'unreported':
      return `Agent ${a.agentId} paid ${a.transfer!.amount} of token ${a.transfer!.token} to ${a.transfer!.payee} in ${tx} (block ${a.transfer!.blockNumber}) and no record claims it`;
  }
}

/** One alert per agent, kind and UTC day, counting the records (or transfers) found. */
export function settlementOccurrence(a: SettlementAlert, now: number): Occurrence {
  const day = utcDay(now);
  return {
    teamId: a.teamId,
    dedupKey: `settlement:${a.kind}:${a.agentId}:${day.start}`,
    type: 'settlement',
    kind: a.kind,
    severity: SEVERITY[a.kind],
    agentId: a.agentId,
    policyId: null,
    window: day,
    observed: null,
    limit: null,
    subject: a.txHash,
    details: {
      network: a.network,
      txHash: a.txHash,
      ...(a.recordId ? { recordId: a.recordId } : {}),
      ...(a.differences?.length ? { differences: a.differences } : {}),
      ...(a.transfer ? { transfer: a.transfer } : {}),
    },
    message: message(a),
    eventIds: a.recordId ? [a.recordId] : [],
    count: 1,
    firstSeen: now,
    lastSeen: now,
  };
}

/** Raises the alert, in the caller's transaction (its webhook event queued with it). */
export async function raiseSettlementAlert(sql: Sql, a: SettlementAlert, now: number): Promise<void> {
  await perform(sql, recordOccurrences([settlementOccurrence(a, now)], now));
}

/**
 * Suspends the agent when an active policy covering it says `on_unreported: "suspend"`; returns the
 * policy that did, or undefined. In the caller's transaction.
 */
export async function suspendForUnreported(sql: Sql, teamId: string, agentId: string, revisions: PolicyRevisions): Promise<string | undefined> {
  const policy = await sql.get<{ id: string }>(
    `SELECT p.id FROM policies p
      WHERE p.team_id = ? AND p.active = 1 AND p.on_unreported = 'suspend'
        AND (NOT EXISTS (SELECT 1 FROM policy_agents a WHERE a.policy_id = p.id)
             OR EXISTS (SELECT 1 FROM policy_agents a WHERE a.policy_id = p.id AND a.external_id = ?))
      ORDER BY p.id LIMIT 1`,
    [teamId, agentId],
  );
  if (!policy) return undefined;
  const agent = await sql.get<{ status: string }>('SELECT status FROM agents WHERE team_id = ? AND external_id = ?', [teamId, agentId]);
  if (!agent || agent.status === 'suspended') return undefined;
  await updateAgent(sql, teamId, agentId, { status: 'suspended' }, revisions);
  return policy.id;
}
