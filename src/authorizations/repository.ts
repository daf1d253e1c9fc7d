/**
 * Authorizations in the registry (schema/sqlite/013, schema/postgres/004): written by the evaluator
 * inside the ingest log's group commit, read by the routes. A hold's lapse is not written: an approved row whose
 * expires_at has passed reads as expired.
 */
import { formatUnits, toUnits } from '../domain/money.js';
import { isoTime } from '../evaluation/breaches.js';
import { all, forUpdate, get, perform, run, type Sql, type Steps } from '../stores/sql.js';
import { isCallKind, type LimitKind } from '../policies/limits.js';
import type { PolicyAction } from '../policies/repository.js';

/** pending: an approve policy asked for a person; its amount is held until they decide or the wait ends. */
export type AuthorizationState = 'held' | 'captured' | 'voided' | 'declined' | 'pending';
export type AuthorizationStatus = AuthorizationState | 'expired';

export interface Check {
  policy_id: string;
  policy_name: string;
  action: PolicyAction;
  kind: LimitKind;
  /** end null: a `total`, which has none. */
  window: { start: string; end: string | null } | null;
  limit: string;
  spent: string;
  held: string;
  remaining: string;
  breaks: boolean;
}

export interface AuthorizationRow {
  id: string;
  team_id: string;
  agent_id: string;
  endpoint: string;
  domain: string;
  amount: string;
  asset: string | null;
  network: string | null;
  payee_address: string | null;
  /** What a policy's filter reads (match.categories, match.tags): as a record to the endpoint would be classified; tags JSON. */
  category: string | null;
  tags: string | null;
  /** pending until a person decides (or the wait ends); then approved or declined. */
  decision: 'approved' | 'declined' | 'pending';
  state: AuthorizationState;
  /** JSON of StoredCheck tuples (encodeChecks); rows written before 2026-11-23 hold Check objects. */
  checks: string;
  reasons: string;
  idempotency_key: string | null;
  created_at: number;
  expires_at: number;
  captured_amount: string | null;
  captured_at: number | null;
  captured_by: string | null;
  voided_at: number | null;
  /** The hold asked for, in seconds: an approval by a person holds this long from the decision (null: rows from before approvals). */
  hold_s: number | null;
  /** When an unanswered wait for a person ends (it reads as declined from then); null: never pending. */
  pending_until: number | null;
  decided_at: number | null;
  /** The name of the key that approved or denied it; null: decided by the policies, or the wait ran out. */
  decided_by: string | null;
  decision_note: string | null;
}

// Kept texts (isoTime): the decisions of a group share their instant and expiry, and formatting a date costs more than a look-up.
const iso = (ms: number | null) => (ms === null ? null : isoTime(ms));

/**
 * A check as stored: [policy_id, policy_name, action, kind, window start ms, window end ms, limit,
 * spent, held]. A third the size of the API's object (every decision writes one per limit, so the
 * row size is most of an authorization's write cost); `remaining` and `breaks` follow from it.
 */
export type StoredCheck = [string, string, Check['action'], Check['kind'], number | null, number | null, string, string, string];

export const encodeChecks = (checks: readonly StoredCheck[]): string => JSON.stringify(checks);

function decodeChecks(text: string, amount: string): Check[] {
  const stored = JSON.parse(text) as (StoredCheck | Check)[];
  const asked = toUnits(amount);
  return stored.map((c): Check => {
    if (!Array.isArray(c)) return c;
    const [, , , kind, , , limit, spent, held] = c;
    const left = toUnits(limit) - toUnits(spent) - toUnits(held);
    // A call limit counts this call as one; a money limit, the amount asked.
    const wanted = isCallKind(kind) ? toUnits('1') : asked;
    return apiCheck(c, formatUnits(left > 0n ? left : 0n), wanted > left);
  });
}

/** The API's shape of a stored check, given what is left of its limit (as text) and whether the call breaks it. */
export function apiCheck([policy_id, policy_name, action, kind, start, end, limit, spent, held]: StoredCheck, remaining: string, breaks: boolean): Check {
  return {
    policy_id,
    policy_name,
    action,
    kind,
    // Kept texts: the windows (this hour, this day) are the same for every decision.
    window: start === null ? null : { start: isoTime(start), end: end === null ? null : isoTime(end) },
    limit,
    spent,
    held,
    remaining,
    breaks,
  };
}

/**
 * The checks of a decision just made, in the API's shape, for its answer: the decision had every
 * figure at hand, where decoding what it stored parses them all again.
 */
const answeredChecks = new WeakMap<AuthorizationRow, Check[]>();
export const keepAnswerChecks = (row: AuthorizationRow, checks: Check[]) => void answeredChecks.set(row, checks);

/**
 * What became of it at `now`: a held one past its expiry reads as expired, a pending one past the
 * end of its wait as declined (nothing is written when time runs out: the time says it; the
 * sweep that announces a lapsed wait writes it later, src/authorizations/approvals.ts).
 */
export function statusOf(row: Pick<AuthorizationRow, 'state' | 'expires_at'>, now = Date.now()): AuthorizationStatus {
  if (row.expires_at > now) return row.state;
  return row.state === 'held' ? 'expired' : row.state === 'pending' ? 'declined' : row.state;
}

/** The reason given when a wait for a person ran out. */
export const timedOutReason = (row: Pick<AuthorizationRow, 'pending_until' | 'created_at'>) =>
  `Declined: nobody approved it within ${Math.round(((row.pending_until ?? row.created_at) - row.created_at) / 1000)} s`;

/** The API's shape of an authorization (schema/api/authorization.json). */
export function authorizationBody(row: AuthorizationRow, now = Date.now()) {
  const status = statusOf(row, now);
  // A wait that ran out reads as the decline it is, before the sweep writes it.
  const lapsed = row.state === 'pending' && status === 'declined';
  return {
    id: row.id,
    decision: lapsed ? 'declined' : row.decision,
    status,
    agent_id: row.agent_id,
    endpoint: row.endpoint,
    amount: row.amount,
    asset: row.asset,
    network: row.network,
    payee_address: row.payee_address,
    expires_at: iso(row.expires_at)!,
    created_at: iso(row.created_at)!,
    checks: answeredChecks.get(row) ?? decodeChecks(row.checks, row.amount),
    reasons: lapsed ? [...(JSON.parse(row.reasons) as string[]), timedOutReason(row)] : (JSON.parse(row.reasons) as string[]),
    pending_until: iso(row.pending_until),
    decided_at: iso(lapsed ? row.pending_until : row.decided_at),
    decided_by: row.decided_by,
    decision_note: row.decision_note,
    captured_amount: row.captured_amount,
    captured_at: iso(row.captured_at),
    captured_by: row.captured_by,
    voided_at: iso(row.voided_at),
    idempotency_key: row.idempotency_key,
  };
}

const INSERT = `INSERT INTO authorizations (id, team_id, agent_id, endpoint, domain, amount, asset, network, payee_address, category, tags, decision, state,
                                    checks, reasons, idempotency_key, created_at, expires_at, hold_s, pending_until, decided_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT DO NOTHING`;

/**
 * Writes a decided authorization (inside the group commit's transaction). False when its
 * idempotency key was taken meanwhile (another instance decided the same request first).
 */
export function* insertAuthorization(row: AuthorizationRow): Steps<boolean> {
  return (yield* run(INSERT, [
    row.id,
    row.team_id,
    row.agent_id,
    row.endpoint,
    row.domain,
    row.amount,
    row.asset,
    row.network,
    row.payee_address,
    row.category,
    row.tags,
    row.decision,
    row.state,
    row.checks,
    row.reasons,
    row.idempotency_key,
    row.created_at,
    row.expires_at,
    row.hold_s,
    row.pending_until,
    row.decided_at,
  ])) === 1;
}

/** One authorization of a team; `lock`: read FOR UPDATE on PostgreSQL (a capture or void decides from it). */
export function* authorizationOf(teamId: string, id: string, lock = false): Steps<AuthorizationRow | undefined> {
  return yield* get<AuthorizationRow>(lock ? forUpdate('SELECT * FROM authorizations WHERE team_id = ? AND id = ?') : 'SELECT * FROM authorizations WHERE team_id = ? AND id = ?', [
    teamId,
    id,
  ]);
}

export function findAuthorization(sql: Sql, teamId: string, id: string): Promise<AuthorizationRow | undefined> {
  return perform(sql, authorizationOf(teamId, id));
}

export function* authorizationByKey(teamId: string, key: string): Steps<AuthorizationRow | undefined> {
  return yield* get<AuthorizationRow>('SELECT * FROM authorizations WHERE team_id = ? AND idempotency_key = ?', [teamId, key]);
}

/** Captures a held authorization; resolves to whether it was (still) held. */
export function* captureHeld(auth: Pick<AuthorizationRow, 'id' | 'team_id' | 'agent_id'>, amount: string, by: string, now: number): Steps<boolean> {
  const changed = yield* run(
    `UPDATE authorizations SET state = 'captured', captured_amount = ?, captured_at = ?, captured_by = ?
      WHERE team_id = ? AND id = ? AND agent_id = ? AND state = 'held' AND expires_at > ?`,
    [amount, now, by, auth.team_id, auth.id, auth.agent_id, now],
  );
  return changed === 1;
}

/** Voids a held authorization, or withdraws one still waiting for a person; resolves to whether it was (still) live. */
export function* voidHeld(teamId: string, id: string, now: number): Steps<boolean> {
  const changed = yield* run(`UPDATE authorizations SET state = 'voided', voided_at = ? WHERE team_id = ? AND id = ? AND state IN ('held', 'pending') AND expires_at > ?`, [
    now,
    teamId,
    id,
    now,
  ]);
  return changed > 0;
}

/**
 * Holds still counting at `now` (held, or pending a person: what waits for a decision is held, so
 * concurrent requests count it): all of them (read back at start-up), or those of some agents of a team.
 */
export function* liveHolds(now: number, of?: { teamId: string; agentIds?: readonly string[] }): Steps<AuthorizationRow[]> {
  if (!of) return yield* all<AuthorizationRow>(`SELECT * FROM authorizations WHERE state IN ('held', 'pending') AND expires_at > ?`, [now]);
  if (!of.agentIds) return yield* all<AuthorizationRow>(`SELECT * FROM authorizations WHERE state IN ('held', 'pending') AND expires_at > ? AND team_id = ?`, [now, of.teamId]);
  return yield* all<AuthorizationRow>(
    {
      sqlite: `SELECT * FROM authorizations WHERE state IN ('held', 'pending') AND expires_at > ? AND team_id = ? AND agent_id IN (SELECT value FROM json_each(?))`,
      postgres: `SELECT * FROM authorizations WHERE state IN ('held', 'pending') AND expires_at > $1 AND team_id = $2 AND agent_id IN (SELECT jsonb_array_elements_text($3::jsonb))`,
    },
    [now, of.teamId, JSON.stringify(of.agentIds)],
  );
}

export interface AuthorizationFilter {
  agent?: string;
  status?: AuthorizationStatus;
  from?: number;
  to?: number;
}

export interface AuthorizationCursor {
  createdAt: number;
  id: string;
}

export function listAuthorizations(sql: Sql, teamId: string, filter: AuthorizationFilter, page: { limit: number; after?: AuthorizationCursor }, now = Date.now()): Promise<AuthorizationRow[]> {
  const where = ['team_id = ?'];
  const args: unknown[] = [teamId];
  if (filter.agent !== undefined) (where.push('agent_id = ?'), args.push(filter.agent));
  if (filter.status === 'expired') (where.push(`state = 'held' AND expires_at <= ?`), args.push(now));
  else if (filter.status === 'held') (where.push(`state = 'held' AND expires_at > ?`), args.push(now));
  else if (filter.status === 'pending') (where.push(`state = 'pending' AND expires_at > ?`), args.push(now));
  // Declined includes a wait for a person that ran out (before the sweep writes it).
  else if (filter.status === 'declined') (where.push(`(state = 'declined' OR (state = 'pending' AND expires_at <= ?))`), args.push(now));
  else if (filter.status !== undefined) (where.push('state = ?'), args.push(filter.status));
  if (filter.from !== undefined) (where.push('created_at >= ?'), args.push(filter.from));
  if (filter.to !== undefined) (where.push('created_at < ?'), args.push(filter.to));
  if (page.after) {
    where.push('(created_at < ? OR (created_at = ? AND id < ?))');
    args.push(page.after.createdAt, page.after.createdAt, page.after.id);
  }
  return sql.all<AuthorizationRow>(`SELECT * FROM authorizations WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT ?`, [...args, page.limit]);
}
