import crypto from 'node:crypto';
import type { Statement } from 'better-sqlite3';
import type { Registry } from '../stores/sqlite.js';
import { newId } from '../teams/keys.js';

/** What an endpoint can be sent: the alert lifecycle, and `test` (POST /webhooks/:id/test). */
export const EVENT_TYPES = ['alert.opened', 'alert.resolved', 'alert.reopened', 'alert.escalated', 'test'] as const;
export type EventType = (typeof EVENT_TYPES)[number];
export type WebhookFormat = 'standard' | 'slack';

/** A team has at most this many endpoints: each event is one delivery per endpoint. */
export const MAX_ENDPOINTS_PER_TEAM = 20;

/** After a rotation the old secret signs too for this long, so receivers can switch over. */
export const PREVIOUS_SECRET_MS = 24 * 3_600_000;

export interface WebhookEndpoint {
  id: string;
  teamId: string;
  url: string;
  description: string | null;
  events: EventType[];
  format: WebhookFormat;
  active: boolean;
  secret: string | null;
  previousSecret: string | null;
  previousSecretUntil: number | null;
  disabledAt: number | null;
  disabledReason: string | null;
  createdAt: number;
  updatedAt: number;
}

interface EndpointRow {
  id: string;
  team_id: string;
  url: string;
  description: string | null;
  events: string;
  format: WebhookFormat;
  active: number;
  secret: string | null;
  previous_secret: string | null;
  previous_secret_until: number | null;
  disabled_at: number | null;
  disabled_reason: string | null;
  created_at: number;
  updated_at: number;
}

const toEndpoint = (r: EndpointRow): WebhookEndpoint => ({
  id: r.id,
  teamId: r.team_id,
  url: r.url,
  description: r.description,
  events: JSON.parse(r.events) as EventType[],
  format: r.format,
  active: r.active === 1,
  secret: r.secret,
  previousSecret: r.previous_secret,
  previousSecretUntil: r.previous_secret_until,
  disabledAt: r.disabled_at,
  disabledReason: r.disabled_reason,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** A Standard Webhooks secret: `whsec_` and base64 of 32 random bytes (the bytes sign). */
export const generateSecret = () => `whsec_${crypto.randomBytes(32).toString('base64')}`;

export class TooManyEndpoints extends Error {}

export interface EndpointInput {
  url: string;
  description: string | null;
  events: EventType[];
  format: WebhookFormat;
  active: boolean;
}

/** Creates an endpoint (with a secret when it is `standard`); TooManyEndpoints past the cap. */
export function createEndpoint(db: Registry, teamId: string, input: EndpointInput, now = Date.now()): WebhookEndpoint {
  return db.transaction(() => {
    const { n } = db.prepare('SELECT count(*) AS n FROM webhook_endpoints WHERE team_id = ?').get(teamId) as { n: number };
    if (n >= MAX_ENDPOINTS_PER_TEAM) throw new TooManyEndpoints(`a team has at most ${MAX_ENDPOINTS_PER_TEAM} webhook endpoints`);
    const id = newId('whk');
    db.prepare(
      `INSERT INTO webhook_endpoints (id, team_id, url, description, events, format, active, secret, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(id, teamId, input.url, input.description, JSON.stringify(input.events), input.format, input.active ? 1 : 0, input.format === 'standard' ? generateSecret() : null, now, now);
    return findEndpoint(db, teamId, id)!;
  }).immediate();
}

/** One endpoint of the team; `statement` is that query prepared once, where it runs often (the dispatcher). */
export function findEndpoint(db: Registry, teamId: string, id: string, statement?: Statement): WebhookEndpoint | undefined {
  const row = (statement ?? db.prepare('SELECT * FROM webhook_endpoints WHERE team_id = ? AND id = ?')).get(teamId, id) as EndpointRow | undefined;
  return row && toEndpoint(row);
}

/** A team's endpoints, oldest first (there are at most MAX_ENDPOINTS_PER_TEAM). */
export function listEndpoints(db: Registry, teamId: string): WebhookEndpoint[] {
  return (db.prepare('SELECT * FROM webhook_endpoints WHERE team_id = ? ORDER BY created_at, id').all(teamId) as EndpointRow[]).map(toEndpoint);
}

/** Changes some fields; turning an endpoint active again clears its disabled state. Undefined: no such endpoint. */
export function updateEndpoint(
  db: Registry,
  teamId: string,
  id: string,
  changes: Partial<Pick<EndpointInput, 'url' | 'description' | 'events' | 'active'>>,
  now = Date.now(),
): WebhookEndpoint | undefined {
  const current = findEndpoint(db, teamId, id);
  if (!current) return undefined;
  const next = { ...current, ...changes };
  const reactivated = changes.active === true;
  db.prepare(
    `UPDATE webhook_endpoints SET url = ?, description = ?, events = ?, active = ?, updated_at = ?,
            disabled_at = CASE WHEN ? THEN NULL ELSE disabled_at END, disabled_reason = CASE WHEN ? THEN NULL ELSE disabled_reason END
      WHERE team_id = ? AND id = ?`,
  ).run(next.url, next.description, JSON.stringify(next.events), next.active ? 1 : 0, now, reactivated ? 1 : 0, reactivated ? 1 : 0, teamId, id);
  return findEndpoint(db, teamId, id);
}

export function deleteEndpoint(db: Registry, teamId: string, id: string): boolean {
  return db.prepare('DELETE FROM webhook_endpoints WHERE team_id = ? AND id = ?').run(teamId, id).changes === 1;
}

/**
 * Replaces a standard endpoint's secret; the old one keeps signing for PREVIOUS_SECRET_MS.
 * Undefined: no such endpoint; null: a slack endpoint (it has no secret).
 */
export function rotateSecret(db: Registry, teamId: string, id: string, now = Date.now()): WebhookEndpoint | null | undefined {
  const current = findEndpoint(db, teamId, id);
  if (!current) return undefined;
  if (current.format !== 'standard') return null;
  db.prepare('UPDATE webhook_endpoints SET secret = ?, previous_secret = ?, previous_secret_until = ?, updated_at = ? WHERE team_id = ? AND id = ?').run(
    generateSecret(),
    current.secret,
    now + PREVIOUS_SECRET_MS,
    now,
    teamId,
    id,
  );
  return findEndpoint(db, teamId, id);
}

/** The secrets that sign a delivery now: the current one, and the previous one during its grace period. */
export function signingSecrets(endpoint: WebhookEndpoint, now = Date.now()): string[] {
  const secrets = endpoint.secret ? [endpoint.secret] : [];
  if (endpoint.previousSecret && endpoint.previousSecretUntil !== null && endpoint.previousSecretUntil > now) secrets.push(endpoint.previousSecret);
  return secrets;
}

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

export interface Delivery {
  seq: number;
  id: string;
  eventId: string;
  eventType: EventType;
  status: DeliveryStatus;
  attempts: number;
  lastStatusCode: number | null;
  lastLatencyMs: number | null;
  lastError: string | null;
  responseBody: string | null;
  lastAttemptAt: number | null;
  nextAttemptAt: number | null;
  createdAt: number;
  deliveredAt: number | null;
}

interface DeliveryRow {
  seq: number;
  id: string;
  event_id: string;
  event_type: EventType;
  status: DeliveryStatus;
  attempts: number;
  last_status_code: number | null;
  last_latency_ms: number | null;
  last_error: string | null;
  response_body: string | null;
  last_attempt_at: number | null;
  next_attempt_at: number | null;
  created_at: number;
  delivered_at: number | null;
}

const toDelivery = (r: DeliveryRow): Delivery => ({
  seq: r.seq,
  id: r.id,
  eventId: r.event_id,
  eventType: r.event_type,
  status: r.status,
  attempts: r.attempts,
  lastStatusCode: r.last_status_code,
  lastLatencyMs: r.last_latency_ms,
  lastError: r.last_error,
  responseBody: r.response_body,
  lastAttemptAt: r.last_attempt_at,
  nextAttemptAt: r.next_attempt_at,
  createdAt: r.created_at,
  deliveredAt: r.delivered_at,
});

/** An endpoint's deliveries, newest first. */
export function listDeliveries(db: Registry, teamId: string, endpointId: string, filter: { limit: number; beforeSeq?: number; status?: DeliveryStatus }): Delivery[] {
  const where = ['team_id = ?', 'endpoint_id = ?'];
  const params: unknown[] = [teamId, endpointId];
  if (filter.beforeSeq !== undefined) (where.push('seq < ?'), params.push(filter.beforeSeq));
  if (filter.status !== undefined) (where.push('status = ?'), params.push(filter.status));
  return (db.prepare(`SELECT * FROM webhook_deliveries WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT ?`).all(...params, filter.limit) as DeliveryRow[]).map(toDelivery);
}

export function findDelivery(db: Registry, teamId: string, endpointId: string, id: string): Delivery | undefined {
  const row = db.prepare('SELECT * FROM webhook_deliveries WHERE team_id = ? AND endpoint_id = ? AND id = ?').get(teamId, endpointId, id) as DeliveryRow | undefined;
  return row && toDelivery(row);
}
