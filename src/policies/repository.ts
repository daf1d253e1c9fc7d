import { lockTeam } from '../teams/repository.js';
import { numberedPlaceholders, postgresOnly, type Sql } from '../stores/sql.js';
import { totalsRead } from '../evaluation/policies.js';
import { newId } from '../domain/ids.js';
import type { Limit, PolicyAllow, PolicyMatch, PolicyScope } from './limits.js';
import type { Policy, PolicyAction, PolicyInput } from './policy.js';
import type { PolicyRevisions } from './revisions.js';

export type { Policy, PolicyAction, PolicyInput };

/** flag: an alert; block: declined (an alert for a record); approve: a person decides (pending). */

/**
 * After any change to what evaluation reads of a team (its policies, an agent suspended or
 * resumed), in its transaction: the team's `policy_revision` rises
 * (other instances sharing the store compare it, under a share lock, before they count records:
 * src/evaluation/postgres-ledger.ts), and this process's `revisions` once it commits. The team's row is
 * locked first (the UPDATE), then its totals, the order the group commit takes them in.
 */
export async function policiesChanged(sql: Sql, teamId: string, revisions: PolicyRevisions): Promise<void> {
  await sql.run('UPDATE teams SET policy_revision = policy_revision + 1 WHERE id = ?', [teamId]);
  if (sql.dialect === 'postgres') {
    // Shared running totals no active policy reads any more go now: of scopes no policy reads, and
    // of agents no policy reading the scope names. No instance counts them while unread, so a
    // total read again later starts from ClickHouse, not from a row that missed the records
    // between (src/evaluation/postgres-ledger.ts, lock).
    const { scopes, agentsOf } = totalsRead(await activePolicyRows(sql, teamId));
    const pairs = [...agentsOf].flatMap(([scope, agents]) => [...agents].map((agent) => [scope, agent] as const));
    await sql.run(
      postgresOnly(`DELETE FROM spend_totals t
                     WHERE t.team_id = $1
                       AND (NOT (t.window_kind = ANY($2::text[]))
                            OR (t.scope = 'agent' AND t.window_kind = ANY($3::text[])
                                AND NOT EXISTS (SELECT 1 FROM unnest($4::text[], $5::text[]) AS k(w, s) WHERE k.w = t.window_kind AND k.s = t.subject)))`),
      [teamId, scopes, [...agentsOf.keys()], pairs.map((p) => p[0]), pairs.map((p) => p[1])],
    );
  }
  sql.afterCommit(() => revisions.raise(teamId));
}

interface PolicyRow {
  id: string;
  name: string;
  limits: string;
  action: PolicyAction;
  timezone: string | null;
  scope: PolicyScope;
  match_filter: string | null;
  notify_at: string;
  /** bigint on PostgreSQL: text there. */
  starts_at: number | string | null;
  approval_timeout_s: number | null;
  allow_list: string | null;
  currency: string | null;
  on_unreported: 'suspend' | null;
  active: number;
  created_at: number;
  updated_at: number;
  agents: string | null;
}

// Agents come along as a JSON array, so a page is one statement, not one per policy.
const SELECT = {
  sqlite: `SELECT p.id, p.name, p.limits, p.action, p.timezone, p.scope, p.match_filter, p.notify_at, p.starts_at, p.approval_timeout_s, p.allow_list, p.currency, p.on_unreported, p.active, p.created_at, p.updated_at,
       (SELECT json_group_array(external_id) FROM (SELECT external_id FROM policy_agents pa WHERE pa.policy_id = p.id ORDER BY external_id)) AS agents
  FROM policies p`,
  postgres: `SELECT p.id, p.name, p.limits, p.action, p.timezone, p.scope, p.match_filter, p.notify_at, p.starts_at, p.approval_timeout_s, p.allow_list, p.currency, p.on_unreported, p.active, p.created_at, p.updated_at,
       (SELECT coalesce(json_agg(external_id ORDER BY external_id), '[]')::text FROM policy_agents pa WHERE pa.policy_id = p.id) AS agents
  FROM policies p`,
};
/** The select above, narrowed by `rest` (written with `?`, numbered for PostgreSQL here). */
const selectWhere = (rest: string) => ({ sqlite: `${SELECT.sqlite} ${rest}`, postgres: numberedPlaceholders(`${SELECT.postgres} ${rest}`) });

const toPolicy = (r: PolicyRow): Policy => ({
  id: r.id,
  name: r.name,
  agents: JSON.parse(r.agents ?? '[]') as string[],
  limits: JSON.parse(r.limits) as Limit[],
  action: r.action,
  active: r.active === 1,
  timezone: r.timezone,
  scope: r.scope,
  match: r.match_filter === null ? null : (JSON.parse(r.match_filter) as PolicyMatch),
  notifyAt: JSON.parse(r.notify_at) as number[],
  startsAt: startsAtOf(r.starts_at, Number(r.created_at)),
  approvalTimeoutS: r.approval_timeout_s,
  allow: r.allow_list === null ? null : (JSON.parse(r.allow_list) as PolicyAllow),
  currency: r.currency,
  onUnreported: r.on_unreported,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** Where a policy's `total` limits start: as stored, else (rows from before the field) its creation's minute. */
export const startsAtOf = (stored: number | string | null, createdAt: number): number =>
  stored === null ? createdAt - (createdAt % 60_000) : Number(stored);

async function setAgents(sql: Sql, teamId: string, policyId: string, agents: readonly string[]): Promise<void> {
  await sql.run('DELETE FROM policy_agents WHERE policy_id = ?', [policyId]);
  for (const agent of agents) await sql.run('INSERT INTO policy_agents (policy_id, team_id, external_id) VALUES (?, ?, ?)', [policyId, teamId, agent]);
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

/**
 * Throws TooManyActivePolicies when the team already has `max` (or more) active policies. On
 * PostgreSQL the team's row is locked first, so two instances activating policies at once count in
 * turn (SQLite's write transactions already take turns).
 */
async function checkRoomForActive(sql: Sql, teamId: string, max: number | undefined): Promise<void> {
  if (max === undefined) return;
  await lockTeam(sql, teamId);
  if ((await countActivePolicies(sql, teamId)) >= max) throw new TooManyActivePolicies(max);
}

/**
 * Creates a policy; run it in a transaction. With `maxActive`, an active one is refused
 * (TooManyActivePolicies) when the team has that many active policies already.
 */
export async function createPolicy(sql: Sql, teamId: string, input: PolicyInput, revisions: PolicyRevisions, maxActive?: number): Promise<Policy> {
  const id = await insertPolicy(sql, teamId, input, maxActive);
  await policiesChanged(sql, teamId, revisions);
  return (await findPolicy(sql, teamId, id))!;
}

/**
 * Several policies in one transaction (a seeded or imported team), their ids in order: the team's
 * revision and shared totals are settled once after the last, where one createPolicy each would
 * read every active policy of the team each time on PostgreSQL.
 */
export async function createPolicies(sql: Sql, teamId: string, inputs: readonly PolicyInput[], revisions: PolicyRevisions, maxActive?: number): Promise<string[]> {
  const ids: string[] = [];
  for (const input of inputs) ids.push(await insertPolicy(sql, teamId, input, maxActive));
  await policiesChanged(sql, teamId, revisions);
  return ids;
}

async function insertPolicy(sql: Sql, teamId: string, input: PolicyInput, maxActive: number | undefined): Promise<string> {
  const id = newId('pol');
  const now = Date.now();
  if (input.active) await checkRoomForActive(sql, teamId, maxActive);
  await sql.run(
    `INSERT INTO policies (id, team_id, name, limits, action, timezone, scope, match_filter, notify_at, starts_at, approval_timeout_s, allow_list, currency, on_unreported, active, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    [
      id,
      teamId,
      input.name,
      JSON.stringify(input.limits),
      input.action,
      input.timezone,
      input.scope ?? 'agent',
      input.match ? JSON.stringify(input.match) : null,
      JSON.stringify(input.notifyAt ?? []),
      input.startsAt ?? startsAtOf(null, now),
      input.approvalTimeoutS ?? null,
      input.allow ? JSON.stringify(input.allow) : null,
      input.currency ?? null,
      input.onUnreported ?? null,
      input.active ? 1 : 0,
      now,
      now,
    ],
  );
  await setAgents(sql, teamId, id, input.agents);
  return id;
}

/** One policy of the team. `lock`: on PostgreSQL its row stays locked until the transaction ends (see findAlert). */
export async function findPolicy(sql: Sql, teamId: string, id: string, lock = false): Promise<Policy | undefined> {
  const statement = selectWhere('WHERE p.team_id = ? AND p.id = ?');
  const row = await sql.get<PolicyRow>(lock ? { ...statement, postgres: `${statement.postgres} FOR UPDATE OF p` } : statement, [teamId, id]);
  return row && toPolicy(row);
}

/**
 * Applies the given fields; run it in a transaction. Undefined when the team has no such policy.
 * With `maxActive`, activating an inactive policy is refused (TooManyActivePolicies) when the team
 * has that many active already; a policy that stays active is never refused (a lowered bound keeps
 * what exists).
 */
export async function updatePolicy(
  sql: Sql,
  teamId: string,
  id: string,
  changes: Partial<PolicyInput>,
  revisions: PolicyRevisions,
  maxActive?: number,
): Promise<Policy | undefined> {
  // The team before the policy, as creation takes it: two activations at once count in turn.
  if (changes.active === true && maxActive !== undefined) await lockTeam(sql, teamId);
  const current = await findPolicy(sql, teamId, id, true);
  if (!current) return undefined;
  if (changes.active === true && !current.active) await checkRoomForActive(sql, teamId, maxActive);
  const next = { ...current, ...changes };
  await sql.run(
    'UPDATE policies SET name = ?, limits = ?, action = ?, timezone = ?, scope = ?, match_filter = ?, notify_at = ?, starts_at = ?, approval_timeout_s = ?, allow_list = ?, currency = ?, on_unreported = ?, active = ?, updated_at = ? WHERE id = ?',
    [
      next.name,
      JSON.stringify(next.limits),
      next.action,
      next.timezone,
      next.scope,
      next.match ? JSON.stringify(next.match) : null,
      JSON.stringify(next.notifyAt),
      // null: back to the creation's minute.
      next.startsAt ?? startsAtOf(null, current.createdAt),
      next.approvalTimeoutS,
      next.allow ? JSON.stringify(next.allow) : null,
      next.currency,
      next.onUnreported,
      next.active ? 1 : 0,
      Math.max(Date.now(), current.updatedAt),
      id,
    ],
  );
  if (changes.agents) await setAgents(sql, teamId, id, changes.agents);
  await policiesChanged(sql, teamId, revisions);
  return findPolicy(sql, teamId, id);
}

/**
 * The team's currency changed: its policies counting in the old one count in the new one from now
 * on (records are valued in the team's currency only). Their limits keep their figures. Run it in
 * the transaction that changes the currency; the ids moved, for the audit log.
 */
export async function movePoliciesCurrency(sql: Sql, teamId: string, from: string, to: string, revisions: PolicyRevisions): Promise<string[]> {
  const moved = (await sql.all<{ id: string }>('SELECT id FROM policies WHERE team_id = ? AND currency = ? ORDER BY created_at, id', [teamId, from])).map((r) => r.id);
  if (moved.length === 0) return moved;
  await sql.run('UPDATE policies SET currency = ?, updated_at = ? WHERE team_id = ? AND currency = ?', [to, Date.now(), teamId, from]);
  await policiesChanged(sql, teamId, revisions);
  return moved;
}

export async function deletePolicy(sql: Sql, teamId: string, id: string, revisions: PolicyRevisions): Promise<boolean> {
  const deleted = (await sql.run('DELETE FROM policies WHERE team_id = ? AND id = ?', [teamId, id])) === 1;
  if (deleted) await policiesChanged(sql, teamId, revisions);
  return deleted;
}

/** An active policy as evaluation loads it: limits still JSON, so an unchanged one is not parsed again. */
export interface ActivePolicyRow {
  id: string;
  name: string;
  limits: string;
  action: PolicyAction;
  timezone: string | null;
  scope: PolicyScope;
  /** JSON, as stored (null: every record). */
  match: string | null;
  notifyAt: number[];
  startsAt: number;
  approvalTimeoutS: number | null;
  /** JSON, as stored (null: no allowlist). */
  allow: string | null;
  /** Limits of money in value of this currency; null: amounts of the asset. */
  currency: string | null;
  createdAt: number;
  /** External ids, sorted; empty: every agent of the team. */
  agents: string[];
}

/**
 * Every active policy of a team, oldest first (created_at, id), for evaluation, which reloads them
 * after every change: two flat statements (policies, then the agents they name), no statement per
 * policy. Run it in a transaction where the two must agree (PostgreSQL, with changes from other
 * instances); on SQLite changes take turns with it.
 */
export async function activePolicyRows(sql: Sql, teamId: string): Promise<ActivePolicyRow[]> {
  const policies = await sql.all<Omit<PolicyRow, 'active' | 'updated_at' | 'agents'>>(
    'SELECT id, name, limits, action, timezone, scope, match_filter, notify_at, starts_at, approval_timeout_s, allow_list, currency, created_at FROM policies WHERE team_id = ? AND active = 1 ORDER BY created_at, id',
    [teamId],
  );
  const agents = await sql.all<{ policy_id: string; external_id: string }>(
    `SELECT pa.policy_id, pa.external_id FROM policy_agents pa JOIN policies p ON p.id = pa.policy_id
      WHERE pa.team_id = ? AND p.active = 1 ORDER BY pa.policy_id, pa.external_id`,
    [teamId],
  );
  const rows = policies.map(
    (r): ActivePolicyRow => ({
      id: r.id,
      name: r.name,
      limits: r.limits,
      action: r.action,
      timezone: r.timezone,
      scope: r.scope,
      match: r.match_filter,
      notifyAt: JSON.parse(r.notify_at) as number[],
      startsAt: startsAtOf(r.starts_at, Number(r.created_at)),
      approvalTimeoutS: r.approval_timeout_s,
      allow: r.allow_list,
      currency: r.currency,
      createdAt: r.created_at,
      agents: [],
    }),
  );
  const byId = new Map(rows.map((r) => [r.id, r]));
  for (const { policy_id, external_id } of agents) byId.get(policy_id)?.agents.push(external_id);
  return rows;
}

export interface PolicyCursor {
  createdAt: number;
  id: string;
}

/** Policies of a team, newest first (ties by id); `agent` keeps those that apply to that agent. */
export async function listPolicies(
  sql: Sql,
  teamId: string,
  options: { limit: number; after?: PolicyCursor; agent?: string; active?: boolean },
): Promise<Policy[]> {
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
  const rows = await sql.all<PolicyRow>(selectWhere(`WHERE ${where.join(' AND ')} ORDER BY p.created_at DESC, p.id DESC LIMIT ?`), [...args, options.limit]);
  return rows.map(toPolicy);
}

export async function countActivePolicies(sql: Sql, teamId: string): Promise<number> {
  return Number((await sql.get<{ n: number }>('SELECT count(*) AS n FROM policies WHERE team_id = ? AND active = 1', [teamId]))!.n);
}
