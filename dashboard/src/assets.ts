/**
 * Which assets a figure adds up, from GET /analytics/by-asset over the same records. The team's
 * assets of all time come once per sign-in (a context); a range or an agent asks for its own.
 */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import { api, type Query } from './api';
import { useLoad } from './components/panel';
import { denominationOf, UNKNOWN, type Denomination } from './money';
import type { SpendRow } from './types';

/** The team's assets of all time: what policy limits and all-time figures add up. */
export const TeamAssetsContext = createContext<Denomination>(UNKNOWN);

export function useTeamAssets(): Denomination {
  return useContext(TeamAssetsContext);
}

/** All time, as a range: from the epoch to now (the API's default `to`). */
export const ALL_TIME: Query = { from: 0 };

export function fetchAssets(query: Query, signal?: AbortSignal): Promise<SpendRow[]> {
  return api<SpendRow[]>('GET', '/analytics/by-asset', { query: { ...query, limit: 50 }, signal });
}

/**
 * The assets of the records a query covers (range, agent), as a denomination; unknown while it
 * loads or if it fails (an amount is then shown without an asset rather than with a wrong one).
 */
export function useAssets(query: Query, tick = 0): { denomination: Denomination; rows: SpendRow[] } {
  const load = useLoad((signal) => fetchAssets(query, signal), [query], tick);
  const rows = load.data ?? [];
  return { denomination: load.data ? denominationOf(rows.map((r) => r.key)) : UNKNOWN, rows };
}
