import type { Registry } from '../stores/sqlite.js';
import { newId } from '../teams/keys.js';
import { enqueueAlertEvent } from '../webhooks/outbox.js';

/** system: a notice from the service itself (a webhook endpoint disabled after failing for 24 hours). */
export type AlertType = 'violation' | 'anomaly' | 'system';
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

interface AlertRow {
  id: string;
  type: AlertType;
  kind: string;
  severity: Severity;
  status: AlertStatus;
  agent_id: string;
  policy_id: string | null;
  window_start: number | null;
  window_end: number | null;
  observed: string | null;
  limit_value: string | null;
  subject: string | null;
  details: string;
  message: string;
  sample_event_ids: string;
  count: number;
  first_seen: number;
  last_seen: number;
  created_at: number;
  updated_at: number;
  resolved_at: number | null;
  resolution: string | null;
}

const toAlert = (r: AlertRow): Alert => ({
  id: r.id,
  type: r.type,
  kind: r.kind,
  severity: r.severity,
  status: r.status,
  agentId: r.agent_id,
  policyId: r.policy_id,
  window: r.window_start === null || r.window_end === null ? null : { start: r.window_start, end: r.window_end },
  observed: r.observed,
  limit: r.limit_value,
  subject: r.subject,
  details: JSON.parse(r.details) as Record<string, unknown>,
  message: r.message,
  sampleEventIds: JSON.parse(r.sample_event_ids) as string[],
  count: r.count,
  firstSeen: r.first_seen,
  lastSeen: r.last_seen,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  resolvedAt: r.resolved_at,
  resolution: r.resolution,
});

const MAX_SAMPLES = 10;

const SEVERITY_RANK: Record<Severity, number> = { info: 0, warning: 1, critical: 2 };

/** Statements of recordOccurrences, prepared once per registry: it runs in every ingest commit. */
const statementsOf = new WeakMap<Registry, ReturnType<typeof prepareOccurrenceStatements>>();

function prepareOccurrenceStatements(db: Registry) {
  return {
    findOpen: db.prepare(`SELECT id, sample_event_ids, last_seen, severity FROM alerts WHERE team_id = ? AND dedup_key = ? AND status = 'open'`),
    escalate: db.prepare('UPDATE alerts SET severity = ? WHERE id = ?'),
    byId: db.prepare('SELECT * FROM alerts WHERE id = ?'),
    update: db.prepare(
      `UPDATE alerts SET count = count + ?, first_seen = min(first_seen, ?), last_seen = max(last_seen, ?),
              observed = CASE WHEN ? >= last_seen THEN ? ELSE observed END, message = CASE WHEN ? >= last_seen THEN ? ELSE message END,
              details = CASE WHEN ? >= last_seen THEN ? ELSE details END, sample_event_ids = ?, updated_at = ?
        WHERE id = ?`,
    ),
    insert: db.prepare(
      `INSERT INTO alerts (id, team_id, dedup_key, type, kind, severity, status, agent_id, policy_id, window_start, window_end,
                           observed, limit_value, subject, details, message, sample_event_ids, count, first_seen, last_seen,
                           created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, 'open', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
  };
}

function occurrenceStatements(db: Registry) {
  let statements = statementsOf.get(db);
  if (!statements) statementsOf.set(db, (statements = prepareOccurrenceStatements(db)));
  return statements;
}

/**
 * Records occurrences: each updates the open alert of its breach, or opens one. Returns, per
 * occurrence, whether it opened a new alert. One transaction, so concurrent flushes cannot open
 * two alerts for one breach (the partial unique index would refuse the second anyway). Opening an
 * alert, or raising an open one's severity, queues its webhook event in the same transaction;
 * other occurrences of an open alert only update it and send nothing.
 */
export function recordOccurrences(db: Registry, occurrences: readonly Occurrence[], now = Date.now()): boolean[] {
  const { findOpen, update, insert, escalate, byId } = occurrenceStatements(db);
  const load = (id: string) => toAlert(byId.get(id) as AlertRow);
  return db.transaction(() =>
    occurrences.map((o) => {
      const open = findOpen.get(o.teamId, o.dedupKey) as { id: string; sample_event_ids: string; last_seen: number; severity: Severity } | undefined;
      const details = JSON.stringify(o.details);
      if (open) {
        // A full sample list (the usual case for a busy alert) does not change.
        const known = JSON.parse(open.sample_event_ids) as string[];
        const samples = known.length >= MAX_SAMPLES ? open.sample_event_ids : JSON.stringify([...new Set([...known, ...o.eventIds])].slice(0, MAX_SAMPLES));
        update.run(o.count, o.firstSeen, o.lastSeen, o.lastSeen, o.observed, o.lastSeen, o.message, o.lastSeen, details, samples, now, open.id);
        if (SEVERITY_RANK[o.severity] > SEVERITY_RANK[open.severity]) {
          escalate.run(o.severity, open.id);
          enqueueAlertEvent(db, o.teamId, () => load(open.id), 'alert.escalated', now);
        }
        return false;
      }
      const id = newId('alr');
      const samples = o.eventIds.slice(0, MAX_SAMPLES);
      insert.run(
        id, o.teamId, o.dedupKey, o.type, o.kind, o.severity, o.agentId, o.policyId, o.window?.start ?? null, o.window?.end ?? null,
        o.observed, o.limit, o.subject, details, o.message, JSON.stringify(samples), o.count, o.firstSeen, o.lastSeen, now, now,
      );
      // The alert as just written, without reading it back (a storm opens thousands).
      const opened = (): Alert => ({
        id, type: o.type, kind: o.kind, severity: o.severity, status: 'open', agentId: o.agentId, policyId: o.policyId, window: o.window,
        observed: o.observed, limit: o.limit, subject: o.subject, details: o.details, message: o.message, sampleEventIds: samples,
        count: o.count, firstSeen: o.firstSeen, lastSeen: o.lastSeen, createdAt: now, updatedAt: now, resolvedAt: null, resolution: null,
      });
      enqueueAlertEvent(db, o.teamId, opened, 'alert.opened', now);
      return true;
    }),
  )();
}

export function findAlert(db: Registry, teamId: string, id: string): Alert | undefined {
  const row = db.prepare('SELECT * FROM alerts WHERE team_id = ? AND id = ?').get(teamId, id) as AlertRow | undefined;
  return row && toAlert(row);
}

export class AlertConflict extends Error {}

/**
 * Resolves (with an optional note) or reopens an alert. Reopening fails with AlertConflict when the
 * same breach has opened a newer alert meanwhile. Undefined when the team has no such alert.
 */
export function setAlertStatus(db: Registry, teamId: string, id: string, status: AlertStatus, note?: string): Alert | undefined {
  return db.transaction(() => {
    const current = findAlert(db, teamId, id);
    if (!current || current.status === status) return current;
    const now = Date.now();
    if (status === 'resolved') {
      db.prepare(`UPDATE alerts SET status = 'resolved', resolved_at = ?, resolution = ?, updated_at = ? WHERE id = ?`).run(now, note ?? null, now, id);
    } else {
      try {
        db.prepare(`UPDATE alerts SET status = 'open', resolved_at = NULL, resolution = NULL, updated_at = ? WHERE id = ?`).run(now, id);
      } catch (err) {
        if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') throw new AlertConflict('the same breach has a newer open alert');
        throw err;
      }
    }
    const changed = findAlert(db, teamId, id)!;
    enqueueAlertEvent(db, teamId, () => changed, status === 'resolved' ? 'alert.resolved' : 'alert.reopened', now);
    return changed;
  })();
}

export interface AlertFilter {
  status?: AlertStatus;
  type?: AlertType;
  severity?: Severity;
  agent?: string;
  /** Last seen at or after `from`, before `to` (Unix ms). */
  from?: number;
  to?: number;
}

export interface AlertCursor {
  createdAt: number;
  id: string;
}

/** Alerts of a team, newest first (ties by id), filtered. */
export function listAlerts(db: Registry, teamId: string, filter: AlertFilter, page: { limit: number; after?: AlertCursor }): Alert[] {
  const where = ['team_id = ?'];
  const args: unknown[] = [teamId];
  const eq = (column: string, value: unknown) => {
    if (value === undefined) return;
    where.push(`${column} = ?`);
    args.push(value);
  };
  eq('status', filter.status);
  eq('type', filter.type);
  eq('severity', filter.severity);
  eq('agent_id', filter.agent);
  if (filter.from !== undefined) {
    where.push('last_seen >= ?');
    args.push(filter.from);
  }
  if (filter.to !== undefined) {
    where.push('first_seen < ?');
    args.push(filter.to);
  }
  if (page.after) {
    where.push('(created_at < ? OR (created_at = ? AND id < ?))');
    args.push(page.after.createdAt, page.after.createdAt, page.after.id);
  }
  const rows = db.prepare(`SELECT * FROM alerts WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT ?`).all(...args, page.limit) as AlertRow[];
  return rows.map(toAlert);
}

export function countOpenAlerts(db: Registry, teamId: string): number {
  return (db.prepare(`SELECT count(*) AS n FROM alerts WHERE team_id = ? AND status = 'open'`).get(teamId) as { n: number }).n;
}
