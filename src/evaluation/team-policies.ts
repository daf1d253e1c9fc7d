/** Each team's active policies, compiled and indexed, kept until its policy revision changes: compiling is too dear per group. */
import type { Limit } from '../policies/limits.js';
import { activePolicyRows } from '../policies/repository.js';
import type { PolicyRevisions } from '../policies/revisions.js';
import type { Database } from '../stores/sql.js';
import type { TotalsLedger } from './ledger.js';
import { compilePolicy, type CompiledLimit, type CompiledPolicy } from './policies.js';
import { PolicyIndex } from './policy-index.js';
import { scopeSpecOf, type ScopeSpec, type ScopeTable } from './totals.js';

export interface TeamState {
  revision: number;
  /** The team row's policy_revision the policies were read at (0 where no other instance writes). */
  storedRevision: number;
  /** Active policies by agent and by scope (see policy-index.ts). */
  index: PolicyIndex;
  scopes: ScopeTable;
  /** Each compiled policy with what it was compiled from: an unchanged one is reused at the next reload. */
  compiled: Map<string, { source: string; policy: CompiledPolicy }>;
  /** External ids of the team's suspended agents: declined, and their records raise an alert. */
  suspended: Set<string>;
}

/** A reload of a team's policies holds the event loop at most about this long at a time. */
const RELOAD_SLICE_MS = 5;

export class TeamPolicies {
  private readonly teams = new Map<string, TeamState>();
  /** Teams whose policies changed on another instance (reloaded before the next group). */
  private readonly stale = new Set<string>();

  /** `db`: where the team's policies are read (the registry, or the shared store). */
  constructor(
    private readonly db: Database,
    /** What the ledger decides of a reload: the revision read with the policies, the scopes kept. */
    private readonly totals: Pick<TotalsLedger, 'revisionOf' | 'scopesFor'>,
    /** Raised by this process's changes to a team's policies and agents. */
    private readonly revisions: PolicyRevisions,
  ) {}

  /** The team's state as last loaded, current or not (what a decision's weight is guessed from). */
  loaded(teamId: string): TeamState | undefined {
    return this.teams.get(teamId);
  }

  /** The team's active policies and scopes, unless its policies changed since they were loaded. */
  current(teamId: string): TeamState | undefined {
    const current = this.teams.get(teamId);
    return current && current.revision === this.revisions.of(teamId) && !this.stale.has(teamId) ? current : undefined;
  }

  /** These teams' policies changed on another instance: reloaded before they are evaluated again. */
  markStale(teamIds: readonly string[]): void {
    for (const teamId of teamIds) this.stale.add(teamId);
  }

  /** Forgets every team (after a rolled-back group). */
  clear(): void {
    this.teams.clear();
  }

  /** Reloads after a change: compiling only what changed, in slices with turns of the event loop between, so thousands never hold it. */
  async reload(teamId: string, now: number): Promise<TeamState> {
    const revision = this.revisions.of(teamId);
    const current = this.teams.get(teamId);
    let slice = performance.now();
    const yieldNow = async () => {
      if (performance.now() - slice < RELOAD_SLICE_MS) return;
      await new Promise<void>((resolve) => setImmediate(resolve));
      slice = performance.now();
    };
    const compiled = new Map<string, { source: string; policy: CompiledPolicy }>();
    this.stale.delete(teamId);
    // One transaction: the policies, the agents they name and the revision, read as of one commit.
    const { rows, suspended, storedRevision } = await this.db.transaction(async (sql) => ({
      rows: await activePolicyRows(sql, teamId),
      suspended: new Set((await sql.all<{ external_id: string }>("SELECT external_id FROM agents WHERE team_id = ? AND status = 'suspended'", [teamId])).map((r) => r.external_id)),
      storedRevision: await this.totals.revisionOf(sql, teamId),
    }));
    const policies: CompiledPolicy[] = [];
    for (const [order, row] of rows.entries()) {
      const source = [row.name, row.action, row.timezone, row.scope, row.match, row.notifyAt.join(','), row.startsAt, row.approvalTimeoutS, row.allow, row.currency, row.limits, ...row.agents].join('\u0000');
      const known = current?.compiled.get(row.id);
      const policy = known && known.source === source ? known.policy : compilePolicy({ ...row, limits: JSON.parse(row.limits) as Limit[] }, order);
      policy.order = order;
      compiled.set(row.id, { source, policy });
      policies.push(policy);
      if (order % 64 === 63) await yieldNow();
    }
    await yieldNow();
    const scopes = this.totals.scopesFor(teamId, current?.scopes);
    // An agent's scope keeps the totals of the agents its policies name (all when one is team-wide): a record adds only where it is read.
    const needed = new Map<string, { policy: CompiledPolicy; limit: CompiledLimit; agents: Set<string> | null }>();
    for (const policy of policies) {
      for (const limit of policy.limits) {
        if (limit.scope === null || limit.kind === 'per_call') continue;
        const agents = policy.scope === 'pool' ? null : policy.agents;
        const want = needed.get(limit.scope);
        if (!want) needed.set(limit.scope, { policy, limit, agents: agents && new Set(agents) });
        else if (want.agents) {
          if (agents === null) want.agents = null;
          else for (const agent of agents) want.agents.add(agent);
        }
      }
    }
    const widened: ScopeSpec[] = [];
    for (const [scope, { policy, limit, agents }] of needed) {
      const known = scopes.get(scope);
      if (!known) {
        scopes.add(scopeSpecOf(policy, limit, now, agents)!);
        continue;
      }
      const kept = known.agents ?? null;
      if (kept === null || (agents !== null && [...agents].every((a) => kept.has(a)))) continue;
      // Kept for more agents (never fewer, so kept totals stay exact): a new spec, whose earlier windows are read again from ClickHouse.
      widened.push(scopeSpecOf(policy, limit, now, agents === null ? null : new Set([...kept, ...agents]))!);
    }
    scopes.replace(widened);
    const state = { revision, storedRevision, index: new PolicyIndex(policies), scopes, compiled, suspended };
    this.teams.set(teamId, state);
    return state;
  }
}
