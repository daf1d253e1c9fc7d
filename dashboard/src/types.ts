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
  type: 'violation' | 'anomaly' | 'system';
  kind: string;
  severity: 'info' | 'warning' | 'critical';
  status: 'open' | 'resolved';
  agentId: string;
  policyId: string | null;
  window: { start: string; end: string } | null;
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

export interface Limit {
  kind: 'per_call' | 'per_hour' | 'daily' | 'weekly' | 'monthly' | 'per_endpoint';
  amount: string;
  endpoint?: string;
}

export interface Policy {
  id: string;
  name: string;
  agents: string[];
  limits: Limit[];
  action: 'flag' | 'block';
  active: boolean;
  timezone: string | null;
  createdAt: string;
  updatedAt: string;
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
