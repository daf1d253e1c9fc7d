import type { RouteDeps } from '../http/routes.js';

/**
 * A counter per team, raised once a change to what evaluation reads of it (its policies, an agent
 * suspended or resumed) commits: the evaluator compares it to decide when to reload the team's
 * policies. One per process, built by the composition root, given to the routes that make such
 * changes and to the evaluator.
 */
export class PolicyRevisions {
  private readonly revisions = new Map<string, number>();

  of(teamId: string): number {
    return this.revisions.get(teamId) ?? 0;
  }

  raise(teamId: string): void {
    this.revisions.set(teamId, this.of(teamId) + 1);
  }
}

/** What the routes that change policies or agents take. */
export interface PolicyRouteDeps extends RouteDeps {
  policyRevisions: PolicyRevisions;
}
