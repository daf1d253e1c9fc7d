import crypto from 'node:crypto';
import { numberedPlaceholders, type Database, type Sql } from '../stores/sql.js';
import { changedFields, type FieldChange } from '../audit-log/repository.js';
import { createTeam, keysChanged, TEAM_COLUMNS, toTeam, type IssuedKey, type Team, type TeamRow } from '../teams/repository.js';

/** Who acted: the operator API, or `npm run team:create` on the server. */
export type OperatorActor = 'operator_api' | 'team_create_cli';

/** An action of the operator on a team, as the operator audit log keeps it. */
export interface OperatorAction {
  id: string;
  at: number;
  actor: OperatorActor;
  requestId: string;
  action: 'team.create' | 'team.suspend' | 'team.resume';
  teamId: string;
  changes: Record<string, FieldChange>;
}

/** A team as the operator sees it and the audit log records it. */
export const shownTeam = (team: Team) => ({
  id: team.id,
  name: team.name,
  createdAt: new Date(team.createdAt).toISOString(),
  suspended: team.suspendedAt !== null,
  suspendedAt: team.suspendedAt === null ? null : new Date(team.suspendedAt).toISOString(),
});

/**
 * Appends an action to the operator audit log. Call it inside the transaction that makes the
 * change: both commit, or neither does.
 */
export async function recordOperatorAction(
  sql: Sql,
  action: Omit<OperatorAction, 'id' | 'at' | 'changes'> & { before: Record<string, unknown> | null; after: Record<string, unknown> | null },
  at = Date.now(),
): Promise<void> {
  await sql.run('INSERT INTO operator_audit (id, at, actor, request_id, action, team_id, changes) VALUES (?, ?, ?, ?, ?, ?, ?)', [
    `opa_${crypto.randomBytes(10).toString('base64url')}`,
    at,
    action.actor,
    action.requestId,
    action.action,
    action.teamId,
    JSON.stringify(changedFields(action.before, action.after)),
  ]);
}

interface ActionRow {
  seq: number;
  id: string;
  at: number;
  actor: OperatorActor;
  request_id: string;
  action: OperatorAction['action'];
  team_id: string;
  changes: string;
}

/** The operator audit log, newest first, `limit` rows before `beforeSeq`, of one team or all. */
export async function listOperatorActions(sql: Sql, options: { limit: number; beforeSeq?: number; teamId?: string }): Promise<(OperatorAction & { seq: number })[]> {
  const where: string[] = [];
  const params: unknown[] = [];
  if (options.beforeSeq !== undefined) {
    where.push('seq < ?');
    params.push(options.beforeSeq);
  }
  if (options.teamId !== undefined) {
    where.push('team_id = ?');
    params.push(options.teamId);
  }
  const rows = await sql.all<ActionRow>(
    `SELECT seq, id, at, actor, request_id, action, team_id, changes FROM operator_audit
      ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY seq DESC LIMIT ?`,
    [...params, options.limit],
  );
  return rows.map((r) => ({
    seq: Number(r.seq),
    id: r.id,
    at: Number(r.at),
    actor: r.actor,
    requestId: r.request_id,
    action: r.action,
    teamId: r.team_id,
    changes: JSON.parse(r.changes) as Record<string, FieldChange>,
  }));
}

/** Where a page of teams ended: teams are listed newest first, ties by id. */
export interface TeamPosition {
  createdAt: number;
  id: string;
}

export const isTeamPosition = (v: unknown): v is TeamPosition =>
  typeof v === 'object' && v !== null && Number.isSafeInteger((v as TeamPosition).createdAt) && typeof (v as TeamPosition).id === 'string';

/** Teams newest first, `limit` of them after `after`; filtered by exact name or by suspension. */
export async function listTeams(sql: Sql, options: { limit: number; after?: TeamPosition; name?: string; suspended?: boolean }): Promise<Team[]> {
  const where: string[] = [];
  const params: unknown[] = [];
  if (options.after) {
    where.push('(created_at < ? OR (created_at = ? AND id < ?))');
    params.push(options.after.createdAt, options.after.createdAt, options.after.id);
  }
  if (options.name !== undefined) {
    where.push('name = ?');
    params.push(options.name);
  }
  if (options.suspended !== undefined) where.push(options.suspended ? 'suspended_at IS NOT NULL' : 'suspended_at IS NULL');
  // COLLATE "C" on PostgreSQL: ids compare byte by byte, as SQLite compares them and the cursor assumes.
  const rows = await sql.all<TeamRow>(
    {
      sqlite: `SELECT ${TEAM_COLUMNS} FROM teams ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at DESC, id DESC LIMIT ?`,
      postgres: numberedPlaceholders(
        `SELECT ${TEAM_COLUMNS} FROM teams ${where.length ? `WHERE ${where.join(' AND ').replace('id < ?', 'id COLLATE "C" < ?')}` : ''} ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT ?`,
      ),
    },
    [...params, options.limit],
  );
  return rows.map(toTeam);
}

/**
 * Suspends a team (its keys are refused from the next request on every instance) or lets it in
 * again, recorded in the operator audit log in the same transaction. Undefined when there is no
 * such team; the team as it was when nothing changes (a second suspension keeps the first time).
 */
export async function setTeamSuspended(
  sql: Sql,
  teamId: string,
  suspended: boolean,
  who: { actor: OperatorActor; requestId: string },
  now = Date.now(),
): Promise<Team | undefined> {
  const row = await sql.get<TeamRow>(
    { sqlite: `SELECT ${TEAM_COLUMNS} FROM teams WHERE id = ?`, postgres: `SELECT ${TEAM_COLUMNS} FROM teams WHERE id = $1 FOR NO KEY UPDATE` },
    [teamId],
  );
  if (!row) return undefined;
  const before = toTeam(row);
  if ((before.suspendedAt !== null) === suspended) return before;
  const after: Team = { ...before, suspendedAt: suspended ? now : null };
  await sql.run('UPDATE teams SET suspended_at = ? WHERE id = ?', [after.suspendedAt, teamId]);
  // Keys found before are kept per connection with their team's state: forget them.
  keysChanged(sql);
  await recordOperatorAction(sql, { ...who, action: suspended ? 'team.suspend' : 'team.resume', teamId, before: shownTeam(before), after: shownTeam(after) }, now);
  return after;
}

/** Creates a team and its first admin key, recorded in the operator audit log in the same transaction. */
export function provisionTeam(db: Database, name: string, who: { actor: OperatorActor; requestId: string }): Promise<{ team: Team; key: IssuedKey }> {
  return createTeam(db, name, undefined, (sql, team) =>
    recordOperatorAction(sql, { ...who, action: 'team.create', teamId: team.id, before: null, after: shownTeam(team) }, team.createdAt),
  );
}
