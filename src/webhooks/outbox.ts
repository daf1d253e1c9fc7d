import { alertBody } from '../alerts/body.js';
import type { Alert } from '../domain/alerts.js';
import { all, run, signal, type Steps } from '../stores/sql.js';
import { newId } from '../domain/ids.js';
import type { EventType } from './repository.js';

/** What a delivery carries: Standard Webhooks' shape, the alert as GET /alerts/:id returns it. */
export interface WebhookEvent {
  type: EventType;
  id: string;
  timestamp: string;
  data: Record<string, unknown>;
}

/** Announced on the database's CommitSignals once deliveries are queued and committed: the dispatcher wakes. */
export const DELIVERIES_QUEUED = 'webhooks.deliveries-queued';

const OUTBOX_SQL = {
  endpoints: {
    sqlite: `SELECT id FROM webhook_endpoints
              WHERE team_id = ? AND active = 1 AND disabled_at IS NULL AND EXISTS (SELECT 1 FROM json_each(events) WHERE value = ?)`,
    postgres: `SELECT id FROM webhook_endpoints WHERE team_id = $1 AND active = 1 AND disabled_at IS NULL AND events::jsonb ? $2`,
  },
  insert: `INSERT INTO webhook_deliveries (id, team_id, endpoint_id, event_id, event_type, payload, status, next_attempt_at, created_at)
           VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?)`,
} as const;

/**
 * Queues an event for every active endpoint of the team that takes its type (or for `endpointId`
 * alone). Run it inside the transaction that makes the change: the change and its deliveries
 * commit together. Returns the delivery ids (none when no endpoint wants the event). `data` runs
 * only when some endpoint wants it: most alert changes have no endpoint to go to.
 */
export function* enqueueEvent(
  teamId: string,
  type: EventType,
  data: () => Steps<Record<string, unknown>>,
  now = Date.now(),
  endpointId?: string,
): Steps<string[]> {
  const targets = endpointId ? [{ id: endpointId }] : yield* all<{ id: string }>(OUTBOX_SQL.endpoints, [teamId, type]);
  if (targets.length === 0) return [];
  const event: WebhookEvent = { type, id: newId('evt'), timestamp: new Date(now).toISOString(), data: yield* data() };
  const payload = JSON.stringify(event);
  const ids: string[] = [];
  for (const t of targets) {
    const id = newId('dlv');
    yield* run(OUTBOX_SQL.insert, [id, teamId, t.id, event.id, type, payload, now, now]);
    ids.push(id);
  }
  // After the commit: the dispatcher reads what this transaction wrote.
  yield* signal(DELIVERIES_QUEUED);
  return ids;
}

/** Queues an alert's lifecycle event (opened, escalated, resolved, reopened); `alert` is read only if needed. */
export function* enqueueAlertEvent(teamId: string, alert: () => Steps<Alert>, type: EventType, now = Date.now()): Steps<void> {
  yield* enqueueEvent(teamId, type, function* () {
    return alertBody(yield* alert());
  }, now);
}
