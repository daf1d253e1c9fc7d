import { dialectOf, get, numberedPlaceholders, perform, run, type Sql, type Steps } from '../stores/sql.js';
import { newId } from '../domain/ids.js';
import { enqueueAlertEvent } from '../webhooks/outbox.js';
import { toUnits } from '../domain/money.js';
import type { Alert, AlertStatus, AlertType, Occurrence, Severity } from '../domain/alerts.js';
import type { WrittenAlert, WrittenAlerts } from './written-alerts.js';

export type { Alert, AlertStatus, AlertType, Occurrence, Severity };

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

const OCCURRENCE_SQL = {
  // Locked on PostgreSQL: instances updating one open alert at once take turns, each reading what
  // the one before wrote (its samples, its severity: an escalation is announced once).
  findOpen: {
    sqlite: `SELECT id, sample_event_ids, last_seen, observed, severity, count FROM alerts WHERE team_id = ? AND dedup_key = ? AND status = 'open'`,
    postgres: `SELECT id, sample_event_ids, last_seen, observed, severity, count FROM alerts WHERE team_id = $1 AND dedup_key = $2 AND status = 'open' FOR UPDATE`,
  },
  escalate: 'UPDATE alerts SET severity = ? WHERE id = ?',
  byId: 'SELECT * FROM alerts WHERE id = ?',
  // Written per dialect: SQLite's two-argument min and max are PostgreSQL's least and greatest.
  // Observed, message and details are given (not null) only when this occurrence is the latest.
  update: {
    sqlite: `UPDATE alerts SET count = count + ?, first_seen = min(first_seen, ?), last_seen = max(last_seen, ?),
              observed = coalesce(?, observed), message = coalesce(?, message), details = coalesce(?, details),
              sample_event_ids = ?, updated_at = ?
        WHERE id = ?`,
    postgres: `UPDATE alerts SET count = count + $1, first_seen = least(first_seen, $2), last_seen = greatest(last_seen, $3),
              observed = coalesce($4, observed), message = coalesce($5, message), details = coalesce($6, details),
              sample_event_ids = $7, updated_at = $8
        WHERE id = $9`,
  },
  // The update of an alert as this process last wrote it: only while it is open and its count is
  // the one written then (no other writer, no rolled-back write since), else nothing.
  updateKnown: {
    sqlite: `UPDATE alerts SET count = count + ?, first_seen = min(first_seen, ?), last_seen = max(last_seen, ?),
              observed = coalesce(?, observed), message = coalesce(?, message), details = coalesce(?, details),
              sample_event_ids = ?, updated_at = ?
        WHERE id = ? AND status = 'open' AND count = ?`,
    postgres: `UPDATE alerts SET count = count + $1, first_seen = least(first_seen, $2), last_seen = greatest(last_seen, $3),
              observed = coalesce($4, observed), message = coalesce($5, message), details = coalesce($6, details),
              sample_event_ids = $7, updated_at = $8
        WHERE id = $9 AND status = 'open' AND count = $10`,
  },
  insert: `INSERT INTO alerts (id, team_id, dedup_key, type, kind, severity, status, agent_id, policy_id, window_start, window_end,
                           observed, limit_value, subject, details, message, sample_event_ids, count, first_seen, last_seen,
                           created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, 'open', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (team_id, dedup_key) WHERE status = 'open' DO NOTHING`,
} as const;

/**
 * Whether an occurrence's observed value, message and details replace the open alert's. A window's
 * spend only grows, so the larger total is the latest, whatever the order in which records (of
 * other instances, of groups committed at once) reached the alert. Otherwise (a payment, a count),
 * the occurrence seen last by event time.
 */
function isLatest(o: Occurrence, open: { last_seen: number | string; observed: string | null }): boolean {
  // Totals are decimal strings of at most 18 places (or counts): compared exactly as integers of 10^-18.
  if (o.window && o.observed !== null && open.observed !== null) return toUnits(o.observed) >= toUnits(open.observed);
  return o.lastSeen >= Number(open.last_seen);
}

/**
 * Records occurrences: each updates the open alert of its breach, or opens one. Returns, per
 * occurrence, whether it opened a new alert. Run it as one transaction (performNow makes it one
 * inside the group commit's; perform on a transaction's Sql). Two writers cannot open two alerts for
 * one breach: the partial unique index holds one open alert per breach, and an insert that meets
 * one (on PostgreSQL, another instance's, waited for until it commits) does nothing, after which
 * the open alert is read again and updated like any other. Opening an alert, or raising an open
 * one's severity, queues its webhook event in the same transaction; other occurrences of an open
 * alert only update it and send nothing. `memory`: the alerts its caller wrote last (SQLite), whose
 * update needs no read.
 */
export function* recordOccurrences(occurrences: readonly Occurrence[], now = Date.now(), memory?: WrittenAlerts): Steps<boolean[]> {
  const opened = new Array<boolean>(occurrences.length).fill(false);
  type OpenRow = { id: string; sample_event_ids: string; last_seen: number | string; observed: string | null; severity: Severity; count: number | string };
  // In key order: the open alerts are locked as they are read (PostgreSQL), and two instances
  // locking the same ones in one order never deadlock.
  const byKey = occurrences.map((o, index) => ({ o, index }));
  byKey.sort((a, b) => (a.o.teamId === b.o.teamId ? compare(a.o.dedupKey, b.o.dedupKey) : compare(a.o.teamId, b.o.teamId)) || a.index - b.index);
  // Dedup keys join their parts with NUL, which PostgreSQL's text cannot hold: there, the unit
  // separator (which no part contains either). SQLite keeps the keys it has always stored.
  const sqlite = (yield* dialectOf()) === 'sqlite';
  const keyOf = sqlite ? (key: string) => key : (key: string) => key.replaceAll('\u0000', '\u001f');
  for (const { o, index } of byKey) {
    const dedupKey = keyOf(o.dedupKey);
    const details = JSON.stringify(o.details);
    const written = sqlite ? memory?.of(o.teamId) : undefined;
    // An alert this process wrote last (a breach met by every group): updated without reading it.
    // SQLite only: a count one process wrote and rolled back cannot recur there, where on PostgreSQL
    // another instance may bring the row back to it (the row as read is then the only truth).
    const known = written?.get(o.dedupKey);
    if (written && known && SEVERITY_RANK[o.severity] <= SEVERITY_RANK[known.severity]) {
      const update = occurrenceUpdate(o, known, details, now);
      if ((yield* run(OCCURRENCE_SQL.updateKnown, [...update.params, known.id, known.count])) === 1) {
        written.remember(o.dedupKey, { ...known, ...update.after });
        continue;
      }
    }
    written?.forget(o.dedupKey);
    let open: OpenRow | undefined;
    // Another writer may open the breach's alert between our read and insert (then the insert does
    // nothing and the read is made again), and may resolve it again before that read: then insert.
    for (let tries = 0; !open; tries++) {
      open = yield* get<OpenRow>(OCCURRENCE_SQL.findOpen, [o.teamId, dedupKey]);
      if (open) break;
      if (tries === 3) throw new Error(`alert ${o.dedupKey} of team ${o.teamId} kept changing while it was recorded`);
      const id = newId('alr');
      const samples = o.eventIds.slice(0, MAX_SAMPLES);
      const inserted = yield* run(OCCURRENCE_SQL.insert, [
        id, o.teamId, dedupKey, o.type, o.kind, o.severity, o.agentId, o.policyId, o.window?.start ?? null, o.window?.end ?? null,
        o.observed, o.limit, o.subject, details, o.message, JSON.stringify(samples), o.count, o.firstSeen, o.lastSeen, now, now,
      ]);
      if (inserted === 1) {
        // The alert as just written, without reading it back (a storm opens thousands).
        const alert = (): Alert => ({
          id, type: o.type, kind: o.kind, severity: o.severity, status: 'open', agentId: o.agentId, policyId: o.policyId, window: o.window,
          observed: o.observed, limit: o.limit, subject: o.subject, details: o.details, message: o.message, sampleEventIds: samples,
          count: o.count, firstSeen: o.firstSeen, lastSeen: o.lastSeen, createdAt: now, updatedAt: now, resolvedAt: null, resolution: null,
        });
        yield* enqueueAlertEvent(o.teamId, function* () {
          return alert();
        }, 'alert.opened', now);
        opened[index] = true;
        if (written) written.remember(o.dedupKey, { id, count: o.count, samples: JSON.stringify(samples), samplesFull: samples.length >= MAX_SAMPLES, lastSeen: o.lastSeen, observed: o.observed, severity: o.severity });
        break;
      }
    }
    // Opened by this occurrence: nothing to update.
    if (opened[index] || !open) continue;
    const read: WrittenAlert = {
      id: open.id,
      count: Number(open.count),
      samples: open.sample_event_ids,
      samplesFull: (JSON.parse(open.sample_event_ids) as string[]).length >= MAX_SAMPLES,
      lastSeen: Number(open.last_seen),
      observed: open.observed,
      severity: open.severity,
    };
    const update = occurrenceUpdate(o, read, details, now);
    yield* run(OCCURRENCE_SQL.update, [...update.params, open.id]);
    const escalated = SEVERITY_RANK[o.severity] > SEVERITY_RANK[open.severity];
    if (written) written.remember(o.dedupKey, { ...read, ...update.after, ...(escalated ? { severity: o.severity } : {}) });
    if (escalated) {
      yield* run(OCCURRENCE_SQL.escalate, [o.severity, open.id]);
      yield* enqueueAlertEvent(o.teamId, function* () {
        return toAlert((yield* get<AlertRow>(OCCURRENCE_SQL.byId, [open.id]))!);
      }, 'alert.escalated', now);
    }
  }
  return opened;
}

/** The update of an open alert by an occurrence: its parameters (without the row's id), and the alert after it. */
function occurrenceUpdate(
  o: Occurrence,
  open: WrittenAlert,
  details: string,
  now: number,
): { params: unknown[]; after: Pick<WrittenAlert, 'count' | 'samples' | 'samplesFull' | 'lastSeen' | 'observed'> } {
  // A full sample list (the usual case for a busy alert) does not change.
  const merged = open.samplesFull ? undefined : [...new Set([...(JSON.parse(open.samples) as string[]), ...o.eventIds])].slice(0, MAX_SAMPLES);
  const samples = merged ? JSON.stringify(merged) : open.samples;
  const latest = isLatest(o, { last_seen: open.lastSeen, observed: open.observed });
  return {
    params: [o.count, o.firstSeen, o.lastSeen, latest ? o.observed : null, latest ? o.message : null, latest ? details : null, samples, now],
    after: { count: open.count + o.count, samples, samplesFull: !merged || merged.length >= MAX_SAMPLES, lastSeen: Math.max(open.lastSeen, o.lastSeen), observed: latest ? o.observed : open.observed },
  };
}

/** Code-unit order: every instance takes the locks of one write in this order. */
const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * One alert of the team. `lock`: on PostgreSQL the row stays locked until the transaction ends, so
 * a change made from what was read is not lost to another instance's (SQLite's writes take turns).
 */
export async function findAlert(sql: Sql, teamId: string, id: string, lock = false): Promise<Alert | undefined> {
  const text = 'SELECT * FROM alerts WHERE team_id = ? AND id = ?';
  const row = await sql.get<AlertRow>(lock ? { sqlite: text, postgres: `${numberedPlaceholders(text)} FOR UPDATE` } : text, [teamId, id]);
  return row && toAlert(row);
}

export class AlertConflict extends Error {}

/** A unique index refused the row: SQLite's and PostgreSQL's codes for it. */
const isUniqueViolation = (err: unknown) => ['SQLITE_CONSTRAINT_UNIQUE', '23505'].includes((err as { code?: string }).code ?? '');

/**
 * Resolves (with an optional note) or reopens an alert; run it in a transaction. Reopening fails
 * with AlertConflict when the same breach has opened a newer alert meanwhile. Undefined when the
 * team has no such alert.
 */
export async function setAlertStatus(sql: Sql, teamId: string, id: string, status: AlertStatus, note?: string): Promise<Alert | undefined> {
  const current = await findAlert(sql, teamId, id, true);
  if (!current || current.status === status) return current;
  const now = Date.now();
  if (status === 'resolved') {
    await sql.run(`UPDATE alerts SET status = 'resolved', resolved_at = ?, resolution = ?, updated_at = ? WHERE id = ?`, [now, note ?? null, now, id]);
  } else {
    try {
      await sql.run(`UPDATE alerts SET status = 'open', resolved_at = NULL, resolution = NULL, updated_at = ? WHERE id = ?`, [now, id]);
    } catch (err) {
      if (isUniqueViolation(err)) throw new AlertConflict('the same breach has a newer open alert');
      throw err;
    }
  }
  const changed = (await findAlert(sql, teamId, id))!;
  await perform(sql, enqueueAlertEvent(teamId, function* () {
    return changed;
  }, status === 'resolved' ? 'alert.resolved' : 'alert.reopened', now));
  return changed;
}

/**
 * Resolves the open alert of a breach key, if any, with its webhook event, inside the caller's
 * transaction (an approval alert once its authorization is decided). Returns whether one was.
 */
export function* resolveOpenAlert(teamId: string, dedupKey: string, resolution: string, now = Date.now()): Steps<boolean> {
  const key = (yield* dialectOf()) === 'sqlite' ? dedupKey : dedupKey.replaceAll('\u0000', '\u001f');
  const open = yield* get<{ id: string }>(OCCURRENCE_SQL.findOpen, [teamId, key]);
  if (!open) return false;
  yield* run(`UPDATE alerts SET status = 'resolved', resolved_at = ?, resolution = ?, updated_at = ? WHERE id = ?`, [now, resolution, now, open.id]);
  yield* enqueueAlertEvent(teamId, function* () {
    return toAlert((yield* get<AlertRow>(OCCURRENCE_SQL.byId, [open.id]))!);
  }, 'alert.resolved', now);
  return true;
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
export async function listAlerts(sql: Sql, teamId: string, filter: AlertFilter, page: { limit: number; after?: AlertCursor }): Promise<Alert[]> {
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
  const rows = await sql.all<AlertRow>(`SELECT * FROM alerts WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT ?`, [...args, page.limit]);
  return rows.map(toAlert);
}

export async function countOpenAlerts(sql: Sql, teamId: string): Promise<number> {
  return Number((await sql.get<{ n: number }>(`SELECT count(*) AS n FROM alerts WHERE team_id = ? AND status = 'open'`, [teamId]))!.n);
}
