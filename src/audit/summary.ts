import type { EventStore } from '../stores/clickhouse.js';
import type { AuditQuery, Filter } from './query.js';

/** Decimal digits the SDK formats money with (USDC). */
const PLACES = 6;

/** "1.5" -> "1.500000" (the SDK's formatUSDC); more digits than 6 are kept when they are not zeros. */
export function sixPlaces(decimal: string): string {
  const [whole = '0', fraction = ''] = decimal.split('.');
  const digits = fraction.padEnd(PLACES, '0');
  const kept = digits.length > PLACES ? digits.slice(0, PLACES) + digits.slice(PLACES).replace(/0+$/, '') : digits;
  return `${whole}.${kept}`;
}

/** "1.500000" -> "1.50", "0.000100" -> "0.0001" (the SDK's formatUSDCHuman: at least 2 places). */
export function humanAmount(decimal: string): string {
  const six = sixPlaces(decimal);
  const dot = six.indexOf('.');
  let end = six.length;
  while (end > dot + 3 && six[end - 1] === '0') end--;
  return six.slice(0, end);
}

/** A decimal string in whole 10^-6 units, truncated (the SDK's parseUSDC, for 6-decimal amounts). */
function toMicros(decimal: string): bigint {
  const [whole = '0', fraction = ''] = decimal.split('.');
  return BigInt(whole || '0') * 10n ** BigInt(PLACES) + BigInt(fraction.padEnd(PLACES, '0').slice(0, PLACES) || '0');
}

function microsToDecimal(micros: bigint): string {
  const scale = 10n ** BigInt(PLACES);
  return `${micros / scale}.${(micros % scale).toString().padStart(PLACES, '0')}`;
}

interface SummaryRow {
  g: string;
  agent_id: string;
  endpoint: string;
  team_key: string;
  n: string;
  spend: string;
  max_amount: string;
  violations: string;
  min_ms: string;
  max_ms: string;
}

/**
 * The SDK's AuditSummary in one aggregation: totals and the three breakdowns as grouping sets
 * (one scan), keys in the order the SDK would meet them (first stored record first).
 */
export async function auditSummary(store: EventStore, filter: Filter, q: AuditQuery) {
  const rows = await store.query<SummaryRow>(
    `SELECT grouping(agent_id, endpoint, team_key) AS g, agent_id, endpoint, team_key,
            count() AS n, toString(sum(toDecimal256(amount, 18))) AS spend, toString(max(amount)) AS max_amount,
            countIf(policy_evaluation = 'blocked') AS violations,
            min(toUnixTimestamp64Milli(event_time)) AS min_ms, max(toUnixTimestamp64Milli(event_time)) AS max_ms,
            min(ingest_seq) AS first_seq
       FROM (SELECT agent_id, endpoint, ifNull(team_label, '(none)') AS team_key, amount, policy_evaluation, event_time, ingest_seq
               FROM events WHERE ${filter.where})
      GROUP BY GROUPING SETS ((agent_id), (endpoint), (team_key), ())
      ORDER BY g, first_seq`,
    filter.params,
  );
  // Prototype-less maps: an agent called "__proto__" is a key like any other.
  const map = () => Object.create(null) as Record<string, { spend: string; count: number }>;
  const by = { agent_id: map(), endpoint: map(), team_key: map() };
  // grouping() sets a bit for each column NOT in the set: 3 = by agent, 5 = by endpoint, 6 = by team, 7 = all.
  const SETS: Record<string, 'agent_id' | 'endpoint' | 'team_key'> = { '3': 'agent_id', '5': 'endpoint', '6': 'team_key' };
  let total: SummaryRow | undefined;
  for (const row of rows) {
    const set = SETS[row.g];
    if (set) by[set][row[set]] = { spend: sixPlaces(row.spend), count: Number(row.n) };
    else total = row;
  }
  const count = Number(total?.n ?? 0);
  const totalSpend = count ? total!.spend : '0';
  return {
    total_spend: humanAmount(totalSpend),
    total_transactions: count,
    // Distinct URLs and agents are the keys of their breakdowns: no separate distinct count.
    unique_endpoints: Object.keys(by.endpoint).length,
    unique_agents: Object.keys(by.agent_id).length,
    avg_payment: count > 0 ? humanAmount(microsToDecimal(toMicros(totalSpend) / BigInt(count))) : '0.00',
    max_payment: humanAmount(count ? total!.max_amount : '0'),
    by_agent: by.agent_id,
    by_endpoint: by.endpoint,
    by_team: by.team_key,
    violations: Number(total?.violations ?? 0),
    period: {
      start: q.startTime ?? (count ? Number(total!.min_ms) : 0),
      end: q.endTime ?? (count ? Number(total!.max_ms) : 0),
    },
  };
}
