import type { Alert } from '../domain/alerts.js';
import { shownEnd } from '../evaluation/breaches.js';

const iso = (ms: number) => new Date(ms).toISOString();

/** An alert as the API shows it (GET /alerts/:id), and as webhook events carry it in `data`. */
export const alertBody = (a: Alert) => ({
  id: a.id,
  type: a.type,
  kind: a.kind,
  severity: a.severity,
  status: a.status,
  agentId: a.agentId,
  policyId: a.policyId,
  // A `total` limit's window has no end.
  window: a.window && { start: iso(a.window.start), end: shownEnd(a.window) === null ? null : iso(a.window.end) },
  observed: a.observed,
  limit: a.limit,
  subject: a.subject,
  details: a.details,
  message: a.message,
  sampleEventIds: a.sampleEventIds,
  count: a.count,
  firstSeen: iso(a.firstSeen),
  lastSeen: iso(a.lastSeen),
  createdAt: iso(a.createdAt),
  updatedAt: iso(a.updatedAt),
  resolvedAt: a.resolvedAt === null ? null : iso(a.resolvedAt),
  resolution: a.resolution,
});
