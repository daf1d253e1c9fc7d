import type { RouteDeps } from '../http/routes.js';
import type { Sql } from '../stores/sql.js';

/** What a team used in a period, as the operator sees it: nothing of its records but counts and sums. */
export interface OperatorTeamUsage {
  period: { start: string; end: string };
  records: number;
  /** Spend per asset as sent (never added across assets), exact decimal strings; largest first. */
  spendByAsset: { asset: string; amount: string; records: number }[];
  agents: number;
  activeApiKeys: number;
}

const placeholders = (n: number) => Array.from({ length: n }, () => '?').join(', ');

/** Counts per team of a registry table's rows matching `where`, for the teams listed. */
async function countsByTeam(sql: Sql, table: 'agents' | 'api_keys', teamIds: readonly string[], where = '', params: unknown[] = []): Promise<Map<string, number>> {
  const rows = await sql.all<{ team_id: string; n: number }>(
    `SELECT team_id, count(*) AS n FROM ${table} WHERE team_id IN (${placeholders(teamIds.length)}) ${where} GROUP BY team_id`,
    [...teamIds, ...params],
  );
  return new Map(rows.map((r) => [r.team_id, Number(r.n)]));
}

/**
 * Usage of a page of teams in [start, end), a period of whole UTC days (a calendar month): one
 * query of the event store for all of them (after each team's acknowledged records are loaded),
 * two of the registry.
 */
export async function usageOfTeams(
  deps: Pick<RouteDeps, 'db' | 'readEvents'>,
  teamIds: readonly string[],
  period: { start: Date; end: Date },
  now = Date.now(),
): Promise<Map<string, OperatorTeamUsage>> {
  const usage = new Map<string, OperatorTeamUsage>();
  if (teamIds.length === 0) return usage;
  const stores = await Promise.all(teamIds.map((id) => deps.readEvents(id)));
  // A calendar month is whole UTC days: the daily rollup's asset dimension (every record once)
  // answers it exactly, in rows per team, asset and day rather than per record.
  // Output aliases differ from column names: a ClickHouse alias would shadow the column.
  const rows = await stores[0]!.query<{ team_id: string; asset_sent: string; records: string; total: string }>(
    `SELECT team_id, key AS asset_sent, sum(events) AS records, sum(spend) AS spent, toString(spent) AS total
       FROM spend_daily_by
      WHERE team_id IN {teams:Array(String)} AND dimension = 'asset'
        AND day >= toDate(fromUnixTimestamp64Milli({from:Int64}, 'UTC')) AND day < toDate(fromUnixTimestamp64Milli({to:Int64}, 'UTC'))
      GROUP BY team_id, asset_sent
      ORDER BY team_id, spent DESC, asset_sent`,
    { teams: teamIds, from: period.start.getTime(), to: period.end.getTime() },
  );
  const agents = await countsByTeam(deps.db, 'agents', teamIds);
  const keys = await countsByTeam(deps.db, 'api_keys', teamIds, 'AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)', [now]);
  for (const id of teamIds) {
    usage.set(id, {
      period: { start: period.start.toISOString(), end: period.end.toISOString() },
      records: 0,
      spendByAsset: [],
      agents: agents.get(id) ?? 0,
      activeApiKeys: keys.get(id) ?? 0,
    });
  }
  for (const row of rows) {
    const team = usage.get(row.team_id)!;
    team.records += Number(row.records);
    team.spendByAsset.push({ asset: row.asset_sent, amount: row.total, records: Number(row.records) });
  }
  return usage;
}
