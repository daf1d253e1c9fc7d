import type { Registry } from '../stores/sqlite.js';

/** What ingest knows of a stored event: whose it was and when it happened. */
export interface AgentEvent {
  agent_id: string;
  event_time: number;
}

/**
 * Registers agents first seen in events (name = the id, authorized_by unset), so the agents API
 * lists them, and keeps each agent's latest event time, which orders that list. Remembers what it
 * wrote, so steady ingest writes only when an agent's activity moves forward.
 */
export class AgentActivity {
  private readonly written = new Map<string, number>();
  private readonly upsert;

  constructor(
    private readonly registry: Registry,
    private readonly capacity = 200_000,
  ) {
    this.upsert = registry.prepare(
      `INSERT INTO agents (team_id, external_id, name, authorized_by, created_at, created_via, last_event_at)
       VALUES (?, ?, ?, NULL, ?, 'events', ?)
       ON CONFLICT (team_id, external_id) DO UPDATE
         SET last_event_at = max(coalesce(last_event_at, excluded.last_event_at), excluded.last_event_at)`,
    );
  }

  /** Forgets what was written (after a rolled-back transaction): the next events write again. */
  reset(): void {
    this.written.clear();
  }

  /**
   * Records the events of a batch for a team. Duplicates of stored events may be included: their
   * times are real, and a retry after a crash between insert and this write heals the registry.
   */
  record(teamId: string, events: Iterable<AgentEvent>): void {
    const latest = new Map<string, number>();
    for (const e of events) latest.set(e.agent_id, Math.max(latest.get(e.agent_id) ?? -Infinity, e.event_time));
    const fresh = [...latest].filter(([agentId, at]) => (this.written.get(`${teamId}\u0000${agentId}`) ?? -Infinity) < at);
    if (fresh.length === 0) return;
    const upsert = this.upsert;
    const now = Date.now();
    this.registry.transaction(() => {
      for (const [agentId, at] of fresh) upsert.run(teamId, agentId, agentId, now, at);
    })();
    // A bounded memory: forgetting only costs an upsert that changes nothing.
    if (this.written.size + fresh.length > this.capacity) this.written.clear();
    for (const [agentId, at] of fresh) this.written.set(`${teamId}\u0000${agentId}`, at);
  }
}
