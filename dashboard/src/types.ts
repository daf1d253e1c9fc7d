import type { KeyAccess } from './session';

/** The API's answers, as far as the dashboard reads them (schema/api/ has the full shapes). */
export interface SpendRow {
  key: string;
  spend: string;
  count: number;
  share: number;
}

export interface Summary {
  period: { from: string; to: string };
  totalSpend: string;
  count: number;
  avgPayment: string;
  maxPayment: string;
  activeAgents: number;
  flagged: number;
  blocked: number;
  previous: { period: { from: string; to: string }; totalSpend: string; count: number };
  change: { spend: number | null; count: number | null };
}

export interface Alert {
  id: string;
  type: 'violation' | 'anomaly' | 'threshold' | 'system';
  kind: string;
  severity: 'info' | 'warning' | 'critical';
  status: 'open' | 'resolved';
  agentId: string;
  policyId: string | null;
  /** A `total` limit's window has no end. */
  window: { start: string; end: string | null } | null;
  observed: string | null;
  limit: string | null;
  subject: string | null;
  details: Record<string, unknown>;
  message: string;
  sampleEventIds: string[];
  count: number;
  firstSeen: string;
  lastSeen: string;
  createdAt: string;
  updatedAt: string;
  resolvedAt: string | null;
  resolution: string | null;
}

export interface Agent {
  agentId: string;
  name: string;
  totalSpend: string;
  transactionCount: number;
  lastActive: string | null;
  authorizedBy: string | null;
  status: 'active' | 'suspended';
  createdAt: string;
}

/** Limits on money: `amount`, a decimal string. */
export type SpendKind = 'per_call' | 'per_hour' | 'daily' | 'weekly' | 'monthly' | 'total' | 'per_endpoint';
/** Limits on the number of calls: `count`, an integer. */
export type CallKind = 'calls_per_minute' | 'calls_per_hour' | 'calls_per_day';
export type LimitKind = SpendKind | CallKind;

/** A limit has an amount or a count, as its kind says (limits.ts tells which). */
export type Limit =
  | { kind: SpendKind; amount: string; count?: undefined; endpoint?: string }
  | { kind: CallKind; count: number; amount?: undefined; endpoint?: undefined };

/** Which records count toward a policy's limits: each list given narrows it (stored canonical: lowercase assets). */
export interface PolicyMatch {
  categories?: string[];
  networks?: string[];
  assets?: string[];
  endpoints?: string[];
  tags?: string[];
}

export interface Policy {
  id: string;
  name: string;
  agents: string[];
  limits: Limit[];
  /** approve: an authorization that would break it waits for a person. */
  action: 'flag' | 'block' | 'approve';
  active: boolean;
  timezone: string | null;
  /** agent: each agent its own totals; pool: the policy's agents (or the whole team) share one. */
  scope: 'agent' | 'pool';
  match: PolicyMatch | null;
  notify_at: number[];
  /** Where its `total` limits start counting. */
  starts_at: string;
  /** approve: seconds a person has to decide. */
  approval_timeout_s: number;
  /** What it allows (deny by default); null: no allowlist. */
  allow: { payees?: string[]; networks?: string[]; assets?: string[]; endpoints?: string[] } | null;
  createdAt: string;
  updatedAt: string;
}

/** A row of GET /budgets: one windowed limit of an active policy, for one agent or the pool. */
export interface Budget {
  policy_id: string;
  policy_name: string;
  action: Policy['action'];
  kind: Exclude<LimitKind, 'per_call'>;
  scope: Policy['scope'];
  /** null for a pool. */
  agent_id: string | null;
  /** per_endpoint: the pattern. */
  endpoint: string | null;
  /** null for a total (it counts from the policy's starts_at, with no end). */
  window: { start: string; end: string } | null;
  /** Decimal strings: amounts, or integer strings of calls for the call kinds. */
  limit: string;
  spent: string;
  held: string;
  remaining: string;
  /** (spent + held) / limit, to 6 places; null when the limit is 0. */
  used: number | null;
  notify_at: number[];
  forecast: { spent_at_end: string | null; exhausted_at: string | null };
}

export interface BudgetList {
  data: Budget[];
  truncated: boolean;
}

export interface Team {
  id: string;
  name: string;
  createdAt: string;
  /** The key of the request: what the dashboard may offer it. */
  key: KeyAccess;
  usage: {
    period: { start: string; end: string };
    events: number;
    spend: string;
    agents: number;
    activePolicies: number;
    openAlerts: number;
    activeApiKeys: number;
  };
}

export interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  scopes: ('ingest' | 'read' | 'admin')[];
  createdAt: string;
  lastUsedAt: string | null;
  expiresAt: string | null;
  apiKey?: string;
}

export type WebhookEventType = 'alert.opened' | 'alert.resolved' | 'alert.reopened' | 'alert.escalated' | 'test';

export interface Webhook {
  id: string;
  url: string;
  description: string | null;
  events: WebhookEventType[];
  format: 'standard' | 'slack';
  active: boolean;
  disabledAt: string | null;
  disabledReason: string | null;
  secretRotatedAt: string | null;
  createdAt: string;
  updatedAt: string;
  secret?: string;
}

export interface Delivery {
  id: string;
  eventId: string;
  eventType: WebhookEventType;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  lastStatusCode: number | null;
  lastLatencyMs: number | null;
  lastError: string | null;
  responseBody: string | null;
  lastAttemptAt: string | null;
  nextAttemptAt: string | null;
  createdAt: string;
  deliveredAt: string | null;
}
