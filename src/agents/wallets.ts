/** Agents' registered wallets: the settlement verifier follows their transfers (docs/reconciliation.md). */
import type { Sql } from '../stores/sql.js';

export interface Wallet {
  network: string;
  address: string;
}

/** An agent's wallets, in (network, address) order. */
export async function walletsOf(sql: Sql, teamId: string, agentId: string): Promise<Wallet[]> {
  return sql.all<Wallet>('SELECT network, address FROM agent_wallets WHERE team_id = ? AND agent_id = ? ORDER BY network, address', [teamId, agentId]);
}

/** The wallets of several agents, by agent. */
export async function walletsOfAgents(sql: Sql, teamId: string, agentIds: readonly string[]): Promise<Map<string, Wallet[]>> {
  const out = new Map<string, Wallet[]>();
  if (agentIds.length === 0) return out;
  const rows = await sql.all<Wallet & { agent_id: string }>(
    `SELECT agent_id, network, address FROM agent_wallets WHERE team_id = ? AND agent_id IN (${agentIds.map(() => '?').join(', ')}) ORDER BY network, address`,
    [teamId, ...agentIds],
  );
  for (const r of rows) out.set(r.agent_id, [...(out.get(r.agent_id) ?? []), { network: r.network, address: r.address }]);
  return out;
}

/** Replaces an agent's wallets. A wallet another agent of the team holds is refused: returns that agent. */
export async function setWallets(sql: Sql, teamId: string, agentId: string, wallets: readonly Wallet[], now: number): Promise<{ taken: Wallet & { agentId: string } } | undefined> {
  for (const w of wallets) {
    const holder = await sql.get<{ agent_id: string }>('SELECT agent_id FROM agent_wallets WHERE team_id = ? AND network = ? AND address = ? AND agent_id <> ?', [teamId, w.network, w.address, agentId]);
    if (holder) return { taken: { ...w, agentId: holder.agent_id } };
  }
  await sql.run('DELETE FROM agent_wallets WHERE team_id = ? AND agent_id = ?', [teamId, agentId]);
  for (const w of wallets) await sql.run('INSERT INTO agent_wallets (team_id, agent_id, network, address, created_at) VALUES (?, ?, ?, ?, ?)', [teamId, agentId, w.network, w.address, now]);
  return undefined;
}

/** Every team's wallets on a network: who holds each address. */
export async function walletsOn(sql: Sql, network: string): Promise<{ teamId: string; agentId: string; address: string }[]> {
  return sql.all<{ teamId: string; agentId: string; address: string }>('SELECT team_id AS "teamId", agent_id AS "agentId", address FROM agent_wallets WHERE network = ? ORDER BY address', [network]);
}
