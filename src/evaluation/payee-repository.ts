/** The payees each agent has paid (agent_payees), for the new-payee anomaly (new-payees.ts). */
import { all, get, type Steps } from '../stores/sql.js';

/** The payees an agent has paid, as the registry holds them. */
export function* agentPayees(teamId: string, agentId: string): Steps<Set<string>> {
  const rows = yield* all<{ payee: string }>('SELECT payee FROM agent_payees WHERE team_id = ? AND agent_id = ?', [teamId, agentId]);
  return new Set(rows.map((r) => r.payee));
}

/** Records a payee of an agent; true only if this call added it (of two instances learning one payee, one does). */
export function* learnPayee(teamId: string, agentId: string, payee: string, firstSeen: number): Steps<boolean> {
  const inserted = yield* get(
    'INSERT INTO agent_payees (team_id, agent_id, payee, first_seen) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING payee',
    [teamId, agentId, payee, firstSeen],
  );
  return Boolean(inserted);
}

/** When the agent was first seen (its registry row made; PostgreSQL may give the number as text), if known. */
export function* agentCreatedAt(teamId: string, agentId: string): Steps<number | string | undefined> {
  const row = yield* get<{ created_at: number | string | null }>('SELECT created_at FROM agents WHERE team_id = ? AND external_id = ?', [teamId, agentId]);
  return row?.created_at ?? undefined;
}
