import type { AppDeps } from '../http/routes.js';
import { countActiveKeys } from './repository.js';

/** The calendar month (UTC) that holds `now`: start inclusive, end exclusive. */
export function calendarMonth(now: Date): { start: Date; end: Date } {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return { start, end };
}

/** `usage` of GET /team: what the team used this month. Features add their counts here. */
export async function teamUsage(deps: Pick<AppDeps, 'registry'>, teamId: string, now = new Date()) {
  const month = calendarMonth(now);
  return {
    period: { start: month.start.toISOString(), end: month.end.toISOString() },
    activeApiKeys: countActiveKeys(deps.registry, teamId),
  };
}
