/** The new-payee anomaly: a first payment to a payee, past the agent's learning period (so a new agent raises none). */
import type { Occurrence } from '../domain/alerts.js';
import type { EventRow } from '../domain/record-row.js';
import type { Steps } from '../stores/sql.js';
import { newPayeeOccurrence } from './occurrence-builders.js';
import { agentCreatedAt, agentPayees, learnPayee } from './payee-repository.js';

/** Agents whose payees are held, over all teams: past this, all are let go. */
const MAX_AGENTS = 100_000;

export class NewPayees {
  /** Payees per team, then agent, read on first use: maps by the strings as parsed, no joined key built per record. */
  private readonly payees = new Map<string, Map<string, Set<string>>>();
  private agents = 0;

  constructor(private readonly learningHours: number) {}

  /** The new payees of the rows the commit claimed, each with the index of its row. */
  *check(rows: readonly EventRow[], claimed: readonly number[], now: number): Steps<{ row: number; occurrence: Occurrence }[]> {
    const found: { row: number; occurrence: Occurrence }[] = [];
    const learning = this.learningHours * 3_600_000;
    for (const i of claimed) {
      const row = rows[i]!;
      if (!row.payee_address) continue;
      // A payee known in memory, the common case, costs no generator per record.
      const known = this.payees.get(row.team_id)?.get(row.agent_id) ?? (yield* this.load(row.team_id, row.agent_id));
      if (known.has(row.payee_address)) continue;
      // New only if this insert made it: of two instances learning one payee, one raises the alert.
      const inserted = yield* learnPayee(row.team_id, row.agent_id, row.payee_address, row.event_time);
      known.add(row.payee_address);
      if (!inserted) continue;
      const firstSeen = (yield* agentCreatedAt(row.team_id, row.agent_id)) ?? now;
      if (known.size === 1 || now - Number(firstSeen) < learning) continue;
      found.push({ row: i, occurrence: newPayeeOccurrence(row, known.size - 1) });
    }
    return found;
  }

  /** Forgets every payee kept (after a rolled-back group, which may have learned some). */
  clear(): void {
    this.payees.clear();
    this.agents = 0;
  }

  /** An agent's payees read from the registry and kept (on a miss of `payees`). */
  private *load(teamId: string, agentId: string): Steps<Set<string>> {
    if (++this.agents > MAX_AGENTS) {
      this.payees.clear();
      this.agents = 1;
    }
    const known = yield* agentPayees(teamId, agentId);
    let team = this.payees.get(teamId);
    if (!team) this.payees.set(teamId, (team = new Map()));
    team.set(agentId, known);
    return known;
  }
}
