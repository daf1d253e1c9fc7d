import type { Sql } from '../stores/sql.js';
import { policiesChanged } from '../policies/repository.js';
import type { PolicyRevisions } from '../policies/revisions.js';

/** An agent as the registry keeps it; spend statistics come from ClickHouse (stats.ts). */
export interface AgentRecord {
  externalId: string;
  name: string;
  authorizedBy: string | null;
  status: AgentStatus;
  createdAt: number;
  lastEventAt: number | null;
}

export type AgentStatus = 'active' | 'suspended';

interface AgentRow {
  external_id: string;
  name: string;
  authorized_by: string | null;
  status: AgentStatus;
  created_at: number;
  last_event_at: number | null;
}

const COLUMNS = 'external_id, name, authorized_by, status, created_at, last_event_at';
const toRecord = (r: AgentRow): AgentRecord => ({
  externalId: r.external_id,
  name: r.name,
  authorizedBy: r.authorized_by,
  status: r.status,
  createdAt: r.created_at,
  lastEventAt: r.last_event_at,
});

/**
 * Creates an agent. An agent so far only discovered from events becomes a created one: it takes the
 * given name and authoriser and keeps its history. Returns undefined when the team already created
 * an agent with this id. One statement, so it cannot race with discovery.
 */
export async function createAgent(sql: Sql, teamId: string, input: { externalId: string; name: string; authorizedBy?: string }): Promise<AgentRecord | undefined> {
  const row = await sql.get<AgentRow>(
    `INSERT INTO agents (team_id, external_id, name, authorized_by, created_at, created_via)
     VALUES (?, ?, ?, ?, ?, 'api')
     ON CONFLICT (team_id, external_id) DO UPDATE
       SET name = excluded.name, authorized_by = excluded.authorized_by, created_via = 'api'
     WHERE agents.created_via = 'events'
     RETURNING ${COLUMNS}`,
    [teamId, input.externalId, input.name, input.authorizedBy ?? null, Date.now()],
  );
  return row && toRecord(row);
}

export async function findAgent(sql: Sql, teamId: string, externalId: string): Promise<AgentRecord | undefined> {
  const row = await sql.get<AgentRow>(`SELECT ${COLUMNS} FROM agents WHERE team_id = ? AND external_id = ?`, [teamId, externalId]);
  return row && toRecord(row);
}

/** Changes some fields of an agent; undefined when the team has no such agent. */
export async function updateAgent(
  sql: Sql,
  teamId: string,
  externalId: string,
  changes: { name?: string; authorizedBy?: string | null; status?: AgentStatus },
  revisions: PolicyRevisions,
): Promise<AgentRecord | undefined> {
  const row = await sql.get<AgentRow>(
    `UPDATE agents SET name = coalesce(?, name), authorized_by = CASE WHEN ? = 1 THEN ? ELSE authorized_by END, status = coalesce(?, status)
      WHERE team_id = ? AND external_id = ? RETURNING ${COLUMNS}`,
    [changes.name ?? null, changes.authorizedBy !== undefined ? 1 : 0, changes.authorizedBy ?? null, changes.status ?? null, teamId, externalId],
  );
  // Evaluation reads which agents are suspended with the policies: every instance reloads them.
  if (row && changes.status !== undefined) await policiesChanged(sql, teamId, revisions);
  return row && toRecord(row);
}

/**
 * Removes an agent's registration; its events stay. An agent that sends events again is
 * discovered again, as any new one is. False when the team has no such agent.
 */
export async function deleteAgent(sql: Sql, teamId: string, externalId: string, revisions: PolicyRevisions): Promise<boolean> {
  const deleted = (await sql.run('DELETE FROM agents WHERE team_id = ? AND external_id = ?', [teamId, externalId])) > 0;
  // A suspended agent removed is active when it is discovered again.
  if (deleted) await policiesChanged(sql, teamId, revisions);
  return deleted;
}

/** Where a page of the activity order ends: the next page starts after it. */
export interface AgentCursor {
  lastEventAt: number | null;
  externalId: string;
}

/** `%`, `_` and the escape itself are literal in a prefix search. */
const likePrefix = (prefix: string) => `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/**
 * Agents of a team, most recent activity first (agents without events last), then by id; `limit`
 * rows after `after`. `q` keeps agents whose id or name starts with it, case-insensitively (SQLite's
 * LIKE folds ASCII letters only, PostgreSQL's ILIKE every letter).
 */
export async function listAgents(sql: Sql, teamId: string, options: { limit: number; after?: AgentCursor; q?: string }): Promise<AgentRecord[]> {
  const where = ['team_id = ?'];
  const args: unknown[] = [teamId];
  if (options.q) {
    const like = sql.dialect === 'postgres' ? 'ILIKE' : 'LIKE';
    where.push(`(external_id ${like} ? ESCAPE '\\' OR name ${like} ? ESCAPE '\\')`);
    args.push(likePrefix(options.q), likePrefix(options.q));
  }
  if (options.after) {
    const at = options.after.lastEventAt ?? -1;
    where.push('(coalesce(last_event_at, -1) < ? OR (coalesce(last_event_at, -1) = ? AND external_id > ?))');
    args.push(at, at, options.after.externalId);
  }
  const rows = await sql.all<AgentRow>(
    `SELECT ${COLUMNS} FROM agents WHERE ${where.join(' AND ')} ORDER BY coalesce(last_event_at, -1) DESC, external_id LIMIT ?`,
    [...args, options.limit],
  );
  return rows.map(toRecord);
}

export async function countAgents(sql: Sql, teamId: string): Promise<number> {
  return Number((await sql.get<{ n: number }>('SELECT count(*) AS n FROM agents WHERE team_id = ?', [teamId]))!.n);
}
