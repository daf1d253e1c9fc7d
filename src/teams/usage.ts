import { countAgents } from '../agents/repository.js';
import { countOpenAlerts } from '../alerts/repository.js';
import { spendByDimensions } from '../analytics/queries.js';
import type { RouteDeps } from '../http/routes.js';
import { countActivePolicies } from '../policies/repository.js';
import { countActiveKeys } from './repository.js';

/** The calendar month (UTC) that holds `now`: start inclusive, end exclusive. */
export function calendarMonth(now: Date): { start: Date; end: Date } {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return { start, end };
}

/** `usage` of GET /team: what the team used this month, and what it has now. */
export async function teamUsage(deps: Pick<RouteDeps, 'db' | 'readEvents'>, teamId: string, now = new Date()) {
  const month = calendarMonth(now);
  const { current } = await spendByDimensions(await deps.readEvents(teamId), teamId, { from: month.start.getTime(), to: month.end.getTime() }, [], 1);
  return {
    period: { start: month.start.toISOString(), end: month.end.toISOString() },
    events: current.totals.count,
    spend: current.totals.spend,
    agents: await countAgents(deps.db, teamId),
    activePolicies: await countActivePolicies(deps.db, teamId),
    openAlerts: await countOpenAlerts(deps.db, teamId),
    activeApiKeys: await countActiveKeys(deps.db, teamId),
  };
}
