import { alertBody } from '../alerts/body.js';
import type { Alert } from '../alerts/repository.js';
import type { Registry } from '../stores/sqlite.js';
import { newId } from '../teams/keys.js';
import type { EventType } from './repository.js';

/** What a delivery carries: Standard Webhooks' shape, the alert as GET /alerts/:id returns it. */
export interface WebhookEvent {
  type: EventType;
  id: string;
  timestamp: string;
  data: Record<string, unknown>;
}

/** The dispatcher of each registry, woken when deliveries are queued (after the transaction commits). */
const wakers = new WeakMap<Registry, () => void>();

export function onDeliveriesQueued(db: Registry, wake: (() => void) | undefined): void {
  if (wake) wakers.set(db, wake);
  else wakers.delete(db);
}

const statementsOf = new WeakMap<Registry, ReturnType<typeof prepare>>();

function prepare(db: Registry) {
  return {
    endpoints: db.prepare(
      `SELECT id FROM webhook_endpoints
        WHERE team_id = ? AND active = 1 AND disabled_at IS NULL AND EXISTS (SELECT 1 FROM json_each(events) WHERE value = ?)`,
    ),
    insert: db.prepare(
      `INSERT INTO webhook_deliveries (id, team_id, endpoint_id, event_id, event_type, payload, status, next_attempt_at, created_at)
       VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?)`,
    ),
  };
}

/**
 * Queues an event for every active endpoint of the team that takes its type. Call it inside the
 * transaction that makes the change: the change and its deliveries commit together. Returns the
 * delivery ids (none when no endpoint wants the event).
 */
export function enqueueEvent(
  db: Registry,
  teamId: string,
  type: EventType,
  data: () => Record<string, unknown>,
  now = Date.now(),
  endpointId?: string,
): string[] {
  let statements = statementsOf.get(db);
  if (!statements) statementsOf.set(db, (statements = prepare(db)));
  const targets = endpointId ? [{ id: endpointId }] : (statements.endpoints.all(teamId, type) as { id: string }[]);
  if (targets.length === 0) return [];
  // Built only when some endpoint wants it: most alert changes have no endpoint to go to.
  const event: WebhookEvent = { type, id: newId('evt'), timestamp: new Date(now).toISOString(), data: data() };
  const payload = JSON.stringify(event);
  const ids = targets.map((t) => {
    const id = newId('dlv');
    statements.insert.run(id, teamId, t.id, event.id, type, payload, now, now);
    return id;
  });
  const wake = wakers.get(db);
  // After the answer and the commit: the dispatcher reads what this transaction wrote.
  if (wake) setImmediate(wake);
  return ids;
}

/** Queues an alert's lifecycle event (opened, escalated, resolved, reopened); `alert` is read only if needed. */
export function enqueueAlertEvent(db: Registry, teamId: string, alert: () => Alert, type: EventType, now = Date.now()): void {
  enqueueEvent(db, teamId, type, () => alertBody(alert()), now);
}
