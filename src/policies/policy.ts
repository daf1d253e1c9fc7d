import type { Limit, PolicyAllow, PolicyMatch, PolicyScope } from './limits.js';

export type PolicyAction = 'flag' | 'block' | 'approve';

export interface Policy {
  id: string;
  name: string;
  /** External ids; empty: every agent of the team. */
  agents: string[];
  limits: Limit[];
  action: PolicyAction;
  active: boolean;
  /** IANA zone of daily, weekly and monthly windows; null: UTC. */
  timezone: string | null;
  /** agent: each agent its own totals; pool: the policy's agents (or the whole team) share one. */
  scope: PolicyScope;
  /** Which records count toward its limits and are checked; null: every record. */
  match: PolicyMatch | null;
  /** Percentages of each limit whose crossing raises a threshold alert. */
  notifyAt: number[];
  /** Where its `total` limits start counting (Unix ms, a whole minute). */
  startsAt: number;
  /** approve: how long an authorization waits for a person before it is declined (null: DEFAULT_APPROVAL_TIMEOUT_S). */
  approvalTimeoutS: number | null;
  /** What it allows (deny by default); null: no allowlist. */
  allow: PolicyAllow | null;
  /**
   * ISO 4217: its limits of money are values in this currency, its totals sums of values. null:
   * amounts of the asset, as sent (a policy from before values, or one of a single asset).
   */
  currency: string | null;
  /** suspend: a payment from one of its agents' wallets that no record claims suspends the agent (docs/reconciliation.md); null: an alert only. */
  onUnreported: 'suspend' | null;
  createdAt: number;
  updatedAt: number;
}

/** scope omitted: agent; match, allow: none; notifyAt: none; startsAt null or omitted: the creation's minute; currency omitted: null. */
export type PolicyInput = Omit<Policy, 'id' | 'createdAt' | 'updatedAt' | 'startsAt' | 'scope' | 'match' | 'notifyAt' | 'approvalTimeoutS' | 'allow' | 'currency' | 'onUnreported'> &
  Partial<Pick<Policy, 'scope' | 'match' | 'notifyAt' | 'approvalTimeoutS' | 'allow' | 'currency' | 'onUnreported'>> & { startsAt?: number | null };
