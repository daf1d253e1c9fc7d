import type { EventStore } from '../stores/clickhouse.js';

/** A time range in Unix ms: from inclusive, to exclusive. */
export interface TimeRange {
  from: number;
  to: number;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/**
 * Rollups hold whole UTC hours (or minutes). A range with arbitrary ms ends is answered exactly by
 * reading the whole units in the middle from the rollup and the ragged ends from the raw events:
 * [from, bodyFrom) and [bodyTo, to) raw, [bodyFrom, bodyTo) rolled up.
 */
export function splitRange(range: TimeRange, unitMs: number): { bodyFrom: number; bodyTo: number } {
  const bodyFrom = Math.ceil(range.from / unitMs) * unitMs;
  const bodyTo = Math.floor(range.to / unitMs) * unitMs;
  // No whole unit inside: everything comes from the raw table.
  return bodyFrom < bodyTo ? { bodyFrom, bodyTo } : { bodyFrom: range.to, bodyTo: range.to };
}

function rangeParams(teamId: string, range: TimeRange, unitMs: number) {
  const { bodyFrom, bodyTo } = splitRange(range, unitMs);
  return { team: teamId, from: range.from, to: range.to, bodyFrom, bodyTo };
}

/** Raw events of the ragged ends of a split range. */
const RAW_EDGES = `team_id = {team:String}
  AND ((event_time >= fromUnixTimestamp64Milli({from:Int64}) AND event_time < fromUnixTimestamp64Milli({bodyFrom:Int64}))
    OR (event_time >= fromUnixTimestamp64Milli({bodyTo:Int64}) AND event_time < fromUnixTimestamp64Milli({to:Int64})))`;

/** The dimensions of spend_hourly_by, and the events column each one is rolled up from. */
const DIMENSION_COLUMN = {
  agent: 'agent_id',
  domain: 'domain',
  url: 'endpoint',
  category: 'category',
  network: 'network',
  outcome: 'policy_evaluation',
} as const;

/** A dimension the analytics can group by. */
export type Dimension = keyof typeof DIMENSION_COLUMN;

/**
 * Rows of one dimension of spend_hourly_by over the whole hours of the range, plus the raw rows of
 * its edges in the same shape. `param` names the query parameter holding the dimension, so two
 * unions can share a query.
 */
function dimensionUnion(dimension: Dimension, param: string): string {
  return `
  SELECT key, spend, events, max_amount
    FROM spend_hourly_by
   WHERE team_id = {team:String} AND dimension = {${param}:String}
     AND hour >= toDateTime(intDiv({bodyFrom:Int64}, 1000), 'UTC') AND hour < toDateTime(intDiv({bodyTo:Int64}, 1000), 'UTC')
  UNION ALL
  SELECT toString(${DIMENSION_COLUMN[dimension]}), toDecimal256(amount, 18), toUInt64(1), amount
    FROM events
   WHERE ${RAW_EDGES}`;
}

const MINUTE_UNION = `
  SELECT minute AS at, spend, events
    FROM spend_minutely
   WHERE team_id = {team:String}
     AND minute >= toDateTime(intDiv({bodyFrom:Int64}, 1000), 'UTC') AND minute < toDateTime(intDiv({bodyTo:Int64}, 1000), 'UTC')
  UNION ALL
  SELECT toDateTime(event_time, 'UTC'), toDecimal256(amount, 18), toUInt64(1)
    FROM events
   WHERE ${RAW_EDGES}`;

export interface SpendRow {
  key: string;
  /** Exact decimal string. */
  spend: string;
  count: number;
}

/** Spend per value of a dimension over the range, largest first (ties by key), at most `limit`. */
export async function spendBy(store: EventStore, teamId: string, range: TimeRange, dimension: Dimension, limit: number): Promise<SpendRow[]> {
  // Output aliases differ from column names: a ClickHouse alias would shadow the column in ORDER BY.
  const rows = await store.query<{ key: string; spend_total: string; count: string }>(
    `SELECT key, toString(sum(spend)) AS spend_total, sum(events) AS count
       FROM (${dimensionUnion(dimension, 'dimension')})
      GROUP BY key
      ORDER BY sum(spend) DESC, key ASC
      LIMIT {limit:UInt32}`,
    { ...rangeParams(teamId, range, HOUR), dimension, limit },
  );
  return rows.map((r) => ({ key: r.key, spend: r.spend_total, count: Number(r.count) }));
}

export interface SpendTotals {
  spend: string;
  count: number;
  /** Largest single payment; "0" when there is none. */
  maxPayment: string;
  activeAgents: number;
  flagged: number;
  blocked: number;
}

/** Totals of the range: the outcome dimension (every event once), and the agents seen. */
export async function spendTotals(store: EventStore, teamId: string, range: TimeRange): Promise<SpendTotals> {
  const [row] = await store.query<{ spend_total: string; count: string; max: string; agents: string; flagged: string; blocked: string }>(
    `SELECT toString(sum(spend)) AS spend_total, sum(events) AS count, toString(max(max_amount)) AS max,
            (SELECT uniqExact(key) FROM (${dimensionUnion('agent', 'agentDimension')})) AS agents,
            sumIf(events, key = 'flagged') AS flagged, sumIf(events, key = 'blocked') AS blocked
       FROM (${dimensionUnion('outcome', 'outcomeDimension')})`,
    { ...rangeParams(teamId, range, HOUR), outcomeDimension: 'outcome', agentDimension: 'agent' },
  );
  return {
    spend: row!.spend_total,
    count: Number(row!.count),
    maxPayment: row!.max,
    activeAgents: Number(row!.agents),
    flagged: Number(row!.flagged),
    blocked: Number(row!.blocked),
  };
}

export type Granularity = 'minute' | 'hour' | 'day' | 'week' | 'month';

/** ClickHouse expression of the bucket start of a UTC DateTime `t` in zone `{tz:String}`. */
const BUCKET: Record<Granularity, string> = {
  minute: 'toStartOfMinute(t)',
  hour: 'toStartOfHour(toDateTime(t, {tz:String}))',
  day: 'toStartOfDay(toDateTime(t, {tz:String}))',
  week: 'toStartOfWeek(toDateTime(t, {tz:String}), 1)', // weeks start on Monday
  month: 'toStartOfMonth(toDateTime(t, {tz:String}))',
};

/** Steps that visit every bucket of a range: zone offsets are whole multiples of 15 minutes. */
const BUCKET_PROBE_SECONDS: Record<Granularity, number> = { minute: 60, hour: 900, day: 900, week: 900, month: 900 };

export interface TimeBucket {
  /** Bucket start, Unix ms. */
  t: number;
  spend: string;
  count: number;
}

/**
 * Every bucket start of the range (the one holding `from` first), without data: the buckets of
 * probes every few minutes from `from`, and of the range's last instant, which a probe can miss.
 */
export async function bucketStarts(store: EventStore, range: TimeRange, granularity: Granularity, tz: string): Promise<number[]> {
  if (range.to <= range.from) return [];
  const step = BUCKET_PROBE_SECONDS[granularity];
  const probes = Math.max(1, Math.ceil((range.to - range.from) / 1000 / step));
  const rows = await store.query<{ b: string }>(
    `SELECT DISTINCT toUnixTimestamp(${BUCKET[granularity]}) * 1000 AS b
       FROM (SELECT toDateTime(arrayJoin(arrayConcat(
                      arrayFilter(s -> s * 1000 < {to:Int64}, arrayMap(i -> intDiv({from:Int64}, 1000) + i * {step:UInt32}, range({probes:UInt64}))),
                      [intDiv({to:Int64} - 1, 1000)])), 'UTC') AS t)
      ORDER BY b`,
    { from: range.from, to: range.to, step, probes, tz },
  );
  return rows.map((r) => Number(r.b));
}

/** Spend per bucket over the range, zero-filled, from the minute rollup and the raw edges. */
export async function spendTimeseries(
  store: EventStore,
  teamId: string,
  range: TimeRange,
  granularity: Granularity,
  tz: string,
): Promise<TimeBucket[]> {
  const [buckets, rows] = await Promise.all([
    bucketStarts(store, range, granularity, tz),
    store.query<{ b: string; spend_total: string; count: string }>(
      `SELECT toUnixTimestamp(${BUCKET[granularity]}) * 1000 AS b, toString(sum(spend)) AS spend_total, sum(events) AS count
         FROM (SELECT at AS t, spend, events FROM (${MINUTE_UNION}))
        GROUP BY b`,
      { ...rangeParams(teamId, range, MINUTE), tz },
    ),
  ]);
  const byBucket = new Map(rows.map((r) => [Number(r.b), r]));
  return buckets.map((t) => {
    const row = byBucket.get(t);
    return { t, spend: row?.spend_total ?? '0', count: Number(row?.count ?? 0) };
  });
}
