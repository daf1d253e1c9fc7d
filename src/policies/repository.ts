import type { Statement } from 'better-sqlite3';
import type { Registry } from '../stores/sqlite.js';
import { newId } from '../teams/keys.js';
import type { Limit } from './limits.js';

export type PolicyAction = 'flag' | 'block';

/**
 * A counter per team, raised by every change to its policies: evaluation compares it to decide
 * when to reload the team's policies (all changes go through this module, in this process).
 */
export const policyRevisions = new Map<string, number>();
const changed = (teamId: string) => policyRevisions.set(teamId, (policyRevisions.get(teamId) ?? 0) + 1);

export interface Policy {
  id: string;
  name: string;
  /** External ids; empty: every agent of the team. */
  agents: string[];
  limits: Limit[];
  action: PolicyAction;
  active: boolean;
  /** IANA zone of daily windows; null: UTC. */
  timezone: string | null;
  createdAt: number;
  updatedAt: number;
}

export type PolicyInput = Omit<Policy, 'id' | 'createdAt' | 'updatedAt'>;

interface PolicyRow {
  id: string;
  name: string;
  limits: string;
  action: PolicyAction;
  timezone: string | null;
  active: number;
  created_at: number;
  updated_at: number;
  agents: string | null;
}

// Agents come along as a JSON array, so a page is one statement, not one per policy.
const SELECT = `SELECT p.id, p.name, p.limits, p.action, p.timezone, p.active, p.created_at, p.updated_at,
       (SELECT json_group_array(external_id) FROM (SELECT external_id FROM policy_agents pa WHERE pa.policy_id = p.id ORDER BY external_id)) AS agents
  FROM policies p`;

const toPolicy = (r: PolicyRow): Policy => ({
  id: r.id,
  name: r.name,
  agents: JSON.parse(r.agents ?? '[]') as string[],
  limits: JSON.parse(r.limits) as Limit[],
  action: r.action,
  active: r.active === 1,
  timezone: r.timezone,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

function setAgents(db: Registry, teamId: string, policyId: string, agents: readonly string[]): void {
  db.prepare('DELETE FROM policy_agents WHERE policy_id = ?').run(policyId);
  const insert = db.prepare('INSERT INTO policy_agents (policy_id, team_id, external_id) VALUES (?, ?, ?)');
  for (const agent of agents) insert.run(policyId, teamId, agent);
}

/**
 * Creating or re-activating a policy would make more than `max` of the team's policies active:
 * each active policy is checked against every record of its agents, so a team's count is bounded.
 */
export class TooManyActivePolicies extends Error {
  constructor(readonly max: number) {
    super(`the team has ${max} active policies, the most allowed`);
    this.name = 'TooManyActivePolicies';
  }
}

/** Throws TooManyActivePolicies when the team already has `max` (or more) active policies. */
function checkRoomForActive(db: Registry, teamId: string, max: number | undefined): void {
  if (max !== undefined && countActivePolicies(db, teamId) >= max) throw new TooManyActivePolicies(max);
}

/**
 * Creates a policy. With `maxActive`, an active one is refused (TooManyActivePolicies) when the
 * team has that many active policies already; the count is read in the same transaction.
 */
export function createPolicy(db: Registry, teamId: string, input: PolicyInput, maxActive?: number): Policy {
  const id = newId('pol');
  const now = Date.now();
  db.transaction(() => {
    if (input.active) checkRoomForActive(db, teamId, maxActive);
    db.prepare(
      `INSERT INTO policies (id, team_id, name, limits, action, timezone, active, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(id, teamId, input.name, JSON.stringify(input.limits), input.action, input.timezone, input.active ? 1 : 0, now, now);
    setAgents(db, teamId, id, input.agents);
  })();
  changed(teamId);
  return findPolicy(db, teamId, id)!;
}

export function findPolicy(db: Registry, teamId: string, id: string): Policy | undefined {
  const row = db.prepare(`${SELECT} WHERE p.team_id = ? AND p.id = ?`).get(teamId, id) as PolicyRow | undefined;
  return row && toPolicy(row);
}

/**
 * Applies the given fields; undefined when the team has no such policy. With `maxActive`,
 * activating an inactive policy is refused (TooManyActivePolicies) when the team has that many
 * active already; a policy that stays active is never refused (a lowered bound keeps what exists).
 */
export function updatePolicy(db: Registry, teamId: string, id: string, changes: Partial<PolicyInput>, maxActive?: number): Policy | undefined {
  return db.transaction(() => {
    const current = findPolicy(db, teamId, id);
    if (!current) return undefined;
    if (changes.active === true && !current.active) checkRoomForActive(db, teamId, maxActive);
    const next = { ...current, ...changes };
    db.prepare('UPDATE policies SET name = ?, limits = ?, action = ?, timezone = ?, active = ?, updated_at = ? WHERE id = ?').run(
      next.name,
      JSON.stringify(next.limits),
      next.action,
      next.timezone,
      next.active ? 1 : 0,
      Math.max(Date.now(), current.updatedAt),
      id,
    );
    if (changes.agents) setAgents(db, teamId, id, changes.agents);
    changed(teamId);
    return findPolicy(db, teamId, id);
  })();
}

export function deletePolicy(db: Registry, teamId: string, id: string): boolean {
  const deleted = db.prepare('DELETE FROM policies WHERE team_id = ? AND id = ?').run(teamId, id).changes === 1;
  if (deleted) changed(teamId);
  return deleted;
}

/** Every active policy of a team, oldest first. */
export function activePolicies(db: Registry, teamId: string): Policy[] {
  return (db.prepare(`${SELECT} WHERE p.team_id = ? AND p.active = 1 ORDER BY p.created_at, p.id`).all(teamId) as PolicyRow[]).map(toPolicy);
}

/** An active policy as evaluation loads it: limits still JSON, so an unchanged one is not parsed again. */
export interface ActivePolicyRow {
  id: string;
  name: string;
  limits: string;
  action: PolicyAction;
  timezone: string | null;
  createdAt: number;
  /** External ids, sorted; empty: every agent of the team. */
  agents: string[];
}

const evaluationStatements = new WeakMap<Registry, { policies: Statement; agents: Statement }>();

/**
 * Every active policy of a team, oldest first (created_at, id), for evaluation, which reloads them
 * after every change: two flat statements (policies, then the agents they name), no statement per
 * policy.
 */
export function activePolicyRows(db: Registry, teamId: string): ActivePolicyRow[] {
  let statements = evaluationStatements.get(db);
  if (!statements) {
    statements = {
      policies: db.prepare('SELECT id, name, limits, action, timezone, created_at FROM policies WHERE team_id = ? AND active = 1 ORDER BY created_at, id'),
      agents: db.prepare(
        `SELECT pa.policy_id, pa.external_id FROM policy_agents pa JOIN policies p ON p.id = pa.policy_id
          WHERE pa.team_id = ? AND p.active = 1 ORDER BY pa.policy_id, pa.external_id`,
      ),
    };
    evaluationStatements.set(db, statements);
  }
  const rows = (statements.policies.all(teamId) as { id: string; name: string; limits: string; action: PolicyAction; timezone: string | null; created_at: number }[]).map(
    (r): ActivePolicyRow => ({ id: r.id, name: r.name, limits: r.limits, action: r.action, timezone: r.timezone, createdAt: r.created_at, agents: [] }),
  );
  const byId = new Map(rows.map((r) => [r.id, r]));
  for (const { policy_id, external_id } of statements.agents.all(teamId) as { policy_id: string; external_id: string }[]) byId.get(policy_id)?.agents.push(external_id);
  return rows;
}

export interface PolicyCursor {
  createdAt: number;
  id: string;
}

/** Policies of a team, newest first (ties by id); `agent` keeps those that apply to that agent. */
export function listPolicies(
  db: Registry,
  teamId: string,
  options: { limit: number; after?: PolicyCursor; agent?: string; active?: boolean },
): Policy[] {
  const where = ['p.team_id = ?'];
  const args: unknown[] = [teamId];
  if (options.agent !== undefined) {
    where.push(`(NOT EXISTS (SELECT 1 FROM policy_agents pa WHERE pa.policy_id = p.id)
              OR EXISTS (SELECT 1 FROM policy_agents pa WHERE pa.policy_id = p.id AND pa.external_id = ?))`);
    args.push(options.agent);
  }
  if (options.active !== undefined) {
    where.push('p.active = ?');
    args.push(options.active ? 1 : 0);
  }
  if (options.after) {
    where.push('(p.created_at < ? OR (p.created_at = ? AND p.id < ?))');
    args.push(options.after.createdAt, options.after.createdAt, options.after.id);
  }
  const rows = db.prepare(`${SELECT} WHERE ${where.join(' AND ')} ORDER BY p.created_at DESC, p.id DESC LIMIT ?`).all(...args, options.limit) as PolicyRow[];
  return rows.map(toPolicy);
}

export function countActivePolicies(db: Registry, teamId: string): number {
  return (db.prepare('SELECT count(*) AS n FROM policies WHERE team_id = ? AND active = 1').get(teamId) as { n: number }).n;
}
