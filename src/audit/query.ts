import type { EventStore } from '../stores/clickhouse.js';

/** The client SDK's AuditQuery as it arrives (null is the same as absent). */
export interface AuditQuery {
  agentId?: string | null;
  team?: string | null;
  endpoint?: string | null;
  minAmount?: string | null;
  maxAmount?: string | null;
  startTime?: number | null;
  endTime?: number | null;
  status?: string[] | null;
  tags?: string[] | null;
  limit?: number | null;
  offset?: number | null;
  orderBy?: 'created_at' | 'amount' | 'endpoint' | null;
  order?: 'asc' | 'desc' | null;
}

/** A WHERE clause and its parameters. */
export interface Filter {
  where: string;
  params: Record<string, unknown>;
}

/**
 * The SDK's filter (matchesQuery in its MemoryStorage) as SQL, with the same truthiness: an empty
 * string, 0 or an empty list filters nothing. Times are inclusive at both ends; amounts compare
 * exactly; endpoint is a case-sensitive substring; tags match when any is present.
 */
export function auditFilter(teamId: string, q: AuditQuery): Filter {
  const where = ['team_id = {team:String}'];
  const params: Record<string, unknown> = { team: teamId };
  if (q.agentId) {
    where.push('agent_id = {agentId:String}');
    params.agentId = q.agentId;
  }
  if (q.team) {
    where.push('team_label = {teamLabel:String}');
    params.teamLabel = q.team;
  }
  if (q.endpoint) {
    where.push('position(endpoint, {endpoint:String}) > 0');
    params.endpoint = q.endpoint;
  }
  if (q.minAmount) {
    where.push('amount >= toDecimal128({minAmount:String}, 18)');
    params.minAmount = q.minAmount;
  }
  if (q.maxAmount) {
    where.push('amount <= toDecimal128({maxAmount:String}, 18)');
    params.maxAmount = q.maxAmount;
  }
  // Naming the hour lets the sort key narrow the read (schema/clickhouse/004).
  if (q.startTime) {
    where.push(`event_time >= fromUnixTimestamp64Milli({startTime:Int64})
      AND toStartOfHour(event_time) >= toStartOfHour(fromUnixTimestamp64Milli({startTime:Int64}, 'UTC'))`);
    params.startTime = q.startTime;
  }
  if (q.endTime) {
    where.push(`event_time <= fromUnixTimestamp64Milli({endTime:Int64})
      AND toStartOfHour(event_time) <= toStartOfHour(fromUnixTimestamp64Milli({endTime:Int64}, 'UTC'))`);
    params.endTime = q.endTime;
  }
  if (q.status?.length) {
    where.push('policy_evaluation IN {status:Array(String)}');
    params.status = q.status;
  }
  if (q.tags?.length) {
    where.push('hasAny(tags, {tags:Array(String)})');
    params.tags = q.tags;
  }
  return { where: where.join(' AND '), params };
}

/** Storage order: the SDK's insertion order, used when no orderBy is given and to break ties. */
const STORAGE_ORDER = 'ingest_seq, received_at, id';

/**
 * ORDER BY for a query. Endpoints sort as JavaScript's localeCompare does (the SDK's order:
 * locale-aware, "search" before "Search"), which no ClickHouse collation reproduces exactly: the
 * distinct endpoints that match are sorted here, and ClickHouse orders by their rank.
 */
export async function auditOrder(store: EventStore, filter: Filter, q: AuditQuery): Promise<{ orderBy: string; params: Record<string, unknown> }> {
  const dir = q.order === 'desc' ? 'DESC' : 'ASC';
  switch (q.orderBy) {
    case 'created_at':
      return { orderBy: `event_time ${dir}, ${STORAGE_ORDER}`, params: {} };
    case 'amount':
      return { orderBy: `amount ${dir}, ${STORAGE_ORDER}`, params: {} };
    case 'endpoint': {
      const rows = await store.query<{ endpoint: string }>(`SELECT DISTINCT endpoint FROM events WHERE ${filter.where}`, filter.params);
      const sorted = rows.map((r) => r.endpoint).sort((a, b) => a.localeCompare(b));
      // Strings localeCompare calls equal share a rank, so storage order decides between them.
      const ranks: number[] = [];
      sorted.forEach((e, i) => ranks.push(i > 0 && sorted[i - 1]!.localeCompare(e) === 0 ? ranks[i - 1]! : i));
      return {
        orderBy: `transform(endpoint, {endpointKeys:Array(String)}, {endpointRanks:Array(UInt32)}, 0) ${dir}, ${STORAGE_ORDER}`,
        params: { endpointKeys: sorted, endpointRanks: ranks },
      };
    }
    default:
      return { orderBy: STORAGE_ORDER, params: {} };
  }
}
