/** Two steps of the group commit's transaction that stand alone: the claims of a group, and its agents' activity. */
import type { Logger } from 'pino';
import type { AgentActivity } from '../agents/activity.js';
import { savepoint, type Steps } from '../stores/sql.js';
import { contentPrint, type ClaimOutcome, type GroupLog } from './log.js';
import type { EventRow } from '../domain/record-row.js';

/**
 * Claims the ids of these requests: one claim per team, in team order, each over every request
 * of that team in request order (the first of an id repeated across requests is the one stored).
 * On PostgreSQL a claim takes row locks in id order (shared-log.ts), so every group takes all of
 * its claims' locks in one order, (team, id): two instances' groups holding the same batches in
 * other orders (a client's retry sent to another instance) wait for each other, never deadlock.
 */
export function* claimByTeam<P extends { teamId: string; rows: EventRow[] }>(log: GroupLog, pendings: readonly P[], now: number): Steps<Map<P, ClaimOutcome[]>> {
  const byTeam = new Map<string, P[]>();
  for (const pending of pendings) (byTeam.get(pending.teamId) ?? byTeam.set(pending.teamId, []).get(pending.teamId)!).push(pending);
  const claims = new Map<P, ClaimOutcome[]>();
  for (const teamId of [...byTeam.keys()].sort()) {
    const requests = byTeam.get(teamId)!;
    const rows = requests.length === 1 ? requests[0]!.rows : requests.flatMap((pending) => pending.rows);
    const claimed = yield* log.claiming(teamId, rows.map((r) => r.id), now, rows.map(contentPrint));
    let offset = 0;
    for (const pending of requests) {
      claims.set(pending, requests.length === 1 ? claimed : claimed.slice(offset, offset + pending.rows.length));
      offset += pending.rows.length;
    }
  }
  return claims;
}

/**
 * Records the group's agents' activity in a savepoint: a failure leaves the records stored, and
 * the next event of the agent writes its row again. Duplicates count too (their times are real,
 * and a lost registry row is healed by a retry); conflicts do not (their content was not stored).
 */
export function* recordAgents(agents: AgentActivity, all: readonly EventRow[], conflicting: ReadonlySet<EventRow>, logger: Logger): Steps<void> {
  const byTeam = new Map<string, EventRow[]>();
  for (const row of all) if (!conflicting.has(row)) (byTeam.get(row.team_id) ?? byTeam.set(row.team_id, []).get(row.team_id)!).push(row);
  try {
    // In team order, like the claims; agents in id order within a team (AgentActivity).
    const teams = [...byTeam.keys()].sort();
    yield* savepoint(
      (function* () {
        for (const teamId of teams) yield* agents.record(teamId, byTeam.get(teamId)!);
      })(),
    );
  } catch (err) {
    agents.reset();
    logger.error({ err }, 'recording agent activity failed; the records are stored');
  }
}
