import type { Registry } from '../stores/sqlite.js';

/**
 * Registers agents first seen in events (name = the id, authorized_by unset), so the agents API
 * lists them. Remembers which agents it has registered, so steady ingest costs no registry write.
 */
export class AgentDiscovery {
  private readonly known = new Set<string>();

  constructor(
    private readonly registry: Registry,
    private readonly capacity = 200_000,
  ) {}

  /** Makes sure each agent id exists for the team. */
  discover(teamId: string, agentIds: Iterable<string>): void {
    const fresh: string[] = [];
    for (const agentId of new Set(agentIds)) {
      if (!this.known.has(`${teamId}\u0000${agentId}`)) fresh.push(agentId);
    }
    if (fresh.length === 0) return;
    const insert = this.registry.prepare(
      `INSERT OR IGNORE INTO agents (team_id, external_id, name, authorized_by, created_at, created_via)
       VALUES (?, ?, ?, NULL, ?, 'events')`,
    );
    const now = Date.now();
    this.registry.transaction(() => {
      for (const agentId of fresh) insert.run(teamId, agentId, agentId, now);
    })();
    // A bounded memory: forgetting only costs an INSERT OR IGNORE that changes nothing.
    if (this.known.size + fresh.length > this.capacity) this.known.clear();
    for (const agentId of fresh) this.known.add(`${teamId}\u0000${agentId}`);
  }
}
