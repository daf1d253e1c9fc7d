import type { KeyAccess, Scope } from './session';

/** The API's answers, as far as the dashboard reads them (schema/api/ has the full shapes). */
export interface SpendRow {
  key: string;
  spend: string;
  count: number;
  share: number;
}

export interface Summary {
  period: { from: string; to: string };
  /** The team's currency: what totalValue is in. */
  currency: string;
  totalValue: string;
  /** Records without a value in `currency`: not in totalValue. */
  unvalued: number;
  totalSpend: string;
  count: number;
  avgPayment: string;
  maxPayment: string;
  activeAgents: number;
  flagged: number;
  blocked: number;
  previous: { period: { from: string; to: string }; totalValue: string; totalSpend: string; count: number };
  change: { value: number | null; spend: number | null; count: number | null };
}

export interface Alert {
  id: string;
  /** approval: an authorization waits for a person (its id in `subject`). */
  type: 'violation' | 'anomaly' | 'threshold' | 'approval' | 'settlement' | 'system';
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
  /** ISO 4217: its limits of money are values in it; null: amounts of the asset as sent. */
  currency: string | null;
  createdAt: string;
  updatedAt: string;
}

/** A row of GET /budgets: one windowed limit of an active policy, for one agent or the pool. */
export interface Budget {
  policy_id: string;
  policy_name: string;
  action: Policy['action'];
  kind: Exclude<LimitKind, 'per_call'>;
  /** What limit, spent, held and remaining are in (null: amounts of the asset). */
  currency: string | null;
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
  /** ISO 4217: what the team's records are valued in. */
  currency: string;
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
  scopes: Scope[];
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

/** One limit of an authorization's checks, as it stood at the decision (schema/api/authorization.json). */
export interface AuthorizationCheck {
  policy_id: string;
  policy_name: string;
  action: 'flag' | 'block' | 'approve';
  kind: LimitKind;
  /** null for per_call; end null for a total. */
  window: { start: string; end: string | null } | null;
  /** Decimal strings; integer strings of calls for the call kinds. */
  limit: string;
  spent: string;
  held: string;
  remaining: string;
  breaks: boolean;
}

/**
 * A payment asked for before it was made. `pending`: an `approve` policy holds it for a person,
 * until `pending_until`; approved or denied then by a key with `approve` or `admin`.
 */
export interface Authorization {
  id: string;
  decision: 'approved' | 'declined' | 'pending';
  status: 'pending' | 'held' | 'captured' | 'voided' | 'expired' | 'declined';
  agent_id: string;
  endpoint: string;
  amount: string;
  asset: string | null;
  network: string | null;
  payee_address: string | null;
  expires_at: string;
  created_at: string;
  checks: AuthorizationCheck[];
  /** Why it was declined, or which flag (or approve) policies it breaks. */
  reasons: string[];
  captured_amount: string | null;
  captured_at: string | null;
  /** The id of the record that captured it. */
  captured_by: string | null;
  voided_at: string | null;
  idempotency_key: string | null;
  /** Until when a pending one waits for a person; null otherwise. */
  pending_until: string | null;
  /** When a person approved or denied it (null: decided by the policies alone). */
  decided_at: string | null;
  /** The deciding key's name. */
  decided_by: string | null;
  decision_note: string | null;
}

/**
 * An audit record as its client sent it (the SDK's AuditRecord; schema/api/audit-record.json):
 * GET /audit/:id and POST /audit/query answer these. Times are Unix ms, or ISO 8601 when the
 * client sent them so.
 */
export interface AuditRecord {
  id: string;
  agent_id: string;
  team: string | null;
  human_sponsor: string | null;
  amount: string;
  amount_raw: string;
  asset: string;
  network: string;
  scheme: string | null;
  tx_hash: string | null;
  payer_address: string | null;
  payee_address: string | null;
  facilitator: string | null;
  endpoint: string;
  method: string;
  status_code: number;
  response_time_ms: number;
  policy_id: string | null;
  policy_evaluation: 'allowed' | 'flagged' | 'blocked';
  budget_remaining: string | null;
  task_id: string | null;
  session_id: string | null;
  metadata: Record<string, unknown>;
  created_at: number | string;
  settled_at: number | string | null;
  tags: string[];
  authorization_id?: string;
  category?: string;
}

/** The body of POST /audit/query (schema/api/audit-query.json), as far as the dashboard asks. */
export interface AuditQuery {
  agentId?: string;
  endpoint?: string;
  /** Unix ms, both inclusive. */
  startTime?: number;
  endTime?: number;
  status?: AuditRecord['policy_evaluation'][];
  orderBy?: 'created_at' | 'amount' | 'endpoint';
  order?: 'asc' | 'desc';
  limit?: number;
  offset?: number;
}

export type ManagementAction =
  | 'key.create'
  | 'key.revoke'
  | 'key.rotate'
  | 'agent.create'
  | 'agent.update'
  | 'agent.delete'
  | 'policy.create'
  | 'policy.update'
  | 'policy.delete'
  | 'alert.resolve'
  | 'alert.reopen'
  | 'webhook.create'
  | 'webhook.update'
  | 'webhook.delete'
  | 'webhook.rotate-secret'
  | 'team.update'
  | 'rate.set'
  | 'rate.end';

/** One change made through the management API (GET /audit-log; schema/api/audit-log-entry.json). */
export interface ManagementChange {
  id: string;
  at: string;
  keyId: string;
  keyName: string;
  requestId: string;
  method: string;
  route: string;
  action: ManagementAction;
  resourceType: 'key' | 'agent' | 'policy' | 'alert' | 'webhook' | 'team' | 'rate';
  resourceId: string;
  /** Each changed field before and after; null: absent (before a creation, after a deletion). */
  changes: Record<string, { before: unknown; after: unknown }>;
}

/** What one unit of an asset (or a currency) is worth, from a time on (GET /rates; schema/api/rate.json). */
export interface Rate {
  asset: string;
  /** null: the team's rate ended here. */
  value: string | null;
  currency: string | null;
  valid_from: string;
  decimals: number | null;
  source: 'built-in' | 'team';
  /** In GET /rates: one unit in the team's currency now (null: no rate converts it). */
  value_in_team_currency?: string | null;
}

export interface RateList {
  currency: string;
  data: Rate[];
}

/** A rate as a value used it (POST /records/values). */
export interface UsedRate {
  asset: string;
  value: string;
  currency: string;
  valid_from: string;
  source: 'built-in' | 'team';
}

/** What a record is worth: value null is unvalued; currency '' not valued yet (stored before values). */
export interface RecordValue {
  id: string;
  value: string | null;
  currency: string;
  valuation: { rate: UsedRate; conversion?: UsedRate } | null;
}

/** What GET /settlements and POST /records/settlements say of a record (schema/api/settlement.json). */
export type SettlementStatus = 'pending' | 'verified' | 'mismatch' | 'failed' | 'not_found' | 'unverifiable' | 'unreported';

/** A field a record got wrong against the chain: both sides as strings (amounts in the asset's units). */
export interface SettlementDifference {
  field: 'amount' | 'asset' | 'payer' | 'payee';
  reported: string;
  observed: string;
}

/** A record with a transaction hash as the chain showed it, or a transfer no record claims (record_id null). */
export interface Settlement {
  id: string;
  record_id: string | null;
  agent_id: string;
  network: string;
  tx_hash: string;
  status: SettlementStatus;
  /** Null for an unreported transfer. */
  reported: { amount: string | null; amount_raw: string | null; asset: string; token: string | null; payer: string | null; payee: string | null } | null;
  /** Null until the transaction was seen; amount null when the token's decimals are unknown. */
  observed: {
    amount: string | null;
    amount_raw: string | null;
    token: string | null;
    payer: string | null;
    payee: string | null;
    block_number: number | null;
    block_hash: string | null;
    log_index: number | null;
    receipt: 'success' | 'reverted' | null;
  } | null;
  differences: SettlementDifference[];
  note: string | null;
  occurred_at: string;
  checked_at: string | null;
}

/** GET /settlements/summary: per status, counts and per-token sums (never added across tokens). */
export interface SettlementsSummary {
  from: string | null;
  to: string;
  currency: string;
  /** Empty: reconciliation is off (no CHAIN_RPC_URLS). */
  networks: { network: string; confirmations: number }[];
  statuses: { status: SettlementStatus; count: number; value: string; unvalued: number; assets: { asset: string; reported: string; observed: string }[] }[];
  /** Records of a payment without a transaction hash: nothing to check them against. */
  unreported_settlement: { count: number; value: string; assets: { asset: string; reported: string }[] };
}
