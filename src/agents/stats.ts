import type { EventStore } from '../stores/clickhouse.js';

export interface AgentStats {
  /** Exact decimal string. */
  totalSpend: string;
  transactionCount: number;
}

/**
 * All-time spend and event count of some agents of a team: one query over the daily rollup for a
 * whole page of agents (about one row per agent and active day), never one query per agent.
 */
export async function agentStats(store: EventStore, teamId: string, agentIds: readonly string[]): Promise<Map<string, AgentStats>> {
  if (agentIds.length === 0) return new Map();
  const rows = await store.query<{ key: string; spend_total: string; count: string }>(
    `SELECT key, toString(sum(spend)) AS spend_total, sum(events) AS count
       FROM spend_daily_by
      WHERE team_id = {team:String} AND dimension = 'agent' AND key IN {agents:Array(String)}
      GROUP BY key`,
    { team: teamId, agents: agentIds },
  );
  return new Map(rows.map((r) => [r.key, { totalSpend: r.spend_total, transactionCount: Number(r.count) }]));
}
