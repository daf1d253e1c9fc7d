import { run, type Steps } from '../stores/sql.js';

/** What ingest knows of a stored event: whose it was and when it happened. */
export interface AgentEvent {
  agent_id: string;
  event_time: number;
}

const UPSERT = {
  sqlite: `INSERT INTO agents (team_id, external_id, name, authorized_by, created_at, created_via, last_event_at)
           VALUES (?, ?, ?, NULL, ?, 'events', ?)
           ON CONFLICT (team_id, external_id) DO UPDATE
             SET last_event_at = max(coalesce(last_event_at, excluded.last_event_at), excluded.last_event_at)`,
  postgres: `INSERT INTO agents (team_id, external_id, name, authorized_by, created_at, created_via, last_event_at)
             VALUES ($1, $2, $3, NULL, $4, 'events', $5)
             ON CONFLICT (team_id, external_id) DO UPDATE
               SET last_event_at = greatest(agents.last_event_at, excluded.last_event_at)`,
};

/**
 * Registers agents first seen in events (name = the id, authorized_by unset), so the agents API
 * lists them, and keeps each agent's latest event time, which orders that list. Remembers what it
 * wrote, so steady ingest writes only when an agent's activity moves forward.
 */
export class AgentActivity {
  private readonly written = new Map<string, number>();

  constructor(private readonly capacity = 200_000) {}

  /** Forgets what was written (after a rolled-back transaction): the next events write again. */
  reset(): void {
    this.written.clear();
  }

  /**
   * Records the events of a batch for a team, inside the group commit's transaction. Duplicates of
   * stored events may be included: their times are real, and a retry after a crash between insert
   * and this write heals the registry. Agents are written in id order, so two instances' groups
   * lock the rows in one order (PostgreSQL).
   */
  *record(teamId: string, events: Iterable<AgentEvent>): Steps<void> {
    const latest = new Map<string, number>();
    for (const e of events) latest.set(e.agent_id, Math.max(latest.get(e.agent_id) ?? -Infinity, e.event_time));
    const fresh = [...latest].filter(([agentId, at]) => (this.written.get(`${teamId}\u0000${agentId}`) ?? -Infinity) < at);
    if (fresh.length === 0) return;
    fresh.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const now = Date.now();
    for (const [agentId, at] of fresh) yield* run(UPSERT, [teamId, agentId, agentId, now, at]);
    // A bounded memory: forgetting only costs an upsert that changes nothing. Remembered before the
    // commit: a rollback calls reset().
    if (this.written.size + fresh.length > this.capacity) this.written.clear();
    for (const [agentId, at] of fresh) this.written.set(`${teamId}\u0000${agentId}`, at);
  }
}
