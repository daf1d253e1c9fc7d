/** system: a notice from the service itself (a webhook endpoint disabled after failing for 24 hours); approval: an authorization waits for a person; settlement: the chain contradicts a record, or shows a payment none reported. */
export type AlertType = 'violation' | 'anomaly' | 'system' | 'threshold' | 'approval' | 'settlement';
export type Severity = 'info' | 'warning' | 'critical';
export type AlertStatus = 'open' | 'resolved';

/** What an alert says, whether it is being raised (Occurrence) or stored (Alert). */
interface AlertFacts {
  type: AlertType;
  kind: string;
  severity: Severity;
  agentId: string;
  policyId: string | null;
  window: { start: number; end: number } | null;
  /** Latest observed value and the limit it broke, decimal strings. */
  observed: string | null;
  limit: string | null;
  subject: string | null;
  details: Record<string, unknown>;
  message: string;
  count: number;
  firstSeen: number;
  lastSeen: number;
}

/** One or more occurrences of the same breach found in one flush. */
export interface Occurrence extends AlertFacts {
  teamId: string;
  dedupKey: string;
  eventIds: string[];
}

export interface Alert extends AlertFacts {
  id: string;
  status: AlertStatus;
  sampleEventIds: string[];
  createdAt: number;
  updatedAt: number;
  resolvedAt: number | null;
  resolution: string | null;
}
