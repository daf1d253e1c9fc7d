import BigNumber from 'bignumber.js';
import type { EventStore } from '../stores/clickhouse.js';
import { DEFAULT_CURRENCY } from '../domain/currencies.js';
import { offsetAt } from '../domain/windows.js';
import { DIMENSION_COLUMN, UNPRICED_CONDITION, type Dimension } from './rollups.js';

export type { Dimension };

/** A time range in Unix ms: from inclusive, to exclusive. */
export interface TimeRange {
  from: number;
  to: number;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** A rollup grain: spend_daily_by, spend_hourly_by, spend_minutely (totals only). */
export type Level = 'day' | 'hour' | 'minute';
const UNIT_MS: Record<Level, number> = { day: DAY, hour: HOUR, minute: MINUTE };

/** A piece of a range answered from one source: a rollup of whole units, or the raw events. */
export interface Segment {
  level: Level | 'raw';
  from: number;
  to: number;
}

/**
 * Splits a range into the coarsest whole units each part allows: whole days in the middle, whole
 * hours around them, and so on, down to the raw events for the ragged ms ends. `levels` lists the
 * usable rollups, coarsest first. Answers are exact to the ms and read few rows: a 30-day range is
 * about 29 day rows and 46 hour rows per key plus under two hours of raw events.
 */
export function splitRange(range: TimeRange, levels: readonly Level[]): Segment[] {
  if (range.from >= range.to) return [];
  const [level, ...finer] = levels;
  if (!level) return [{ level: 'raw', from: range.from, to: range.to }];
  const unit = UNIT_MS[level];
  const bodyFrom = Math.ceil(range.from / unit) * unit;
  const bodyTo = Math.floor(range.to / unit) * unit;
  if (bodyFrom >= bodyTo) return splitRange(range, finer);
  return [
    ...splitRange({ from: range.from, to: bodyFrom }, finer),
    { level, from: bodyFrom, to: bodyTo },
    ...splitRange({ from: bodyTo, to: range.to }, finer),
  ];
}

/** Merges touching segments of one level: each range in a condition costs a look-up per part. */
function joinAdjacent(segments: readonly Segment[]): Segment[] {
  const joined: Segment[] = [];
  for (const s of segments) {
    const last = joined.at(-1);
    if (last && last.level === s.level && last.to === s.from) last.to = s.to;
    else joined.push({ ...s });
  }
  return joined;
}

/** Query parameters named as they are added, so one query can hold any number of segments. */
class Params {
  readonly values: Record<string, unknown> = {};
  add(value: unknown, type: string): string {
    const name = `p${Object.keys(this.values).length}`;
    this.values[name] = value;
    return `{${name}:${type}}`;
  }
  /** A UTC DateTime from Unix ms (rollup units are whole seconds). */
  dateTime(ms: number): string {
    return `toDateTime(${this.add(Math.floor(ms / 1000), 'Int64')}, 'UTC')`;
  }
}

/** Per source: its table, the column holding the unit start, and that start as a UTC DateTime. */
const SOURCE: Record<Level | 'raw', { table: string; at: string }> = {
  day: { table: 'spend_daily_by', at: "toDateTime(day, 'UTC')" },
  hour: { table: 'spend_hourly_by', at: 'hour' },
  minute: { table: 'spend_minutely', at: 'minute' },
  raw: { table: 'events', at: "toDateTime(event_time, 'UTC')" },
};

/** WHERE condition selecting the segments of one level (OR-ed); undefined when there are none. */
function segmentsCondition(segments: readonly Segment[], level: Level | 'raw', p: Params): string | undefined {
  const own = segments.filter((s) => s.level === level);
  if (own.length === 0) return undefined;
  const parts = own.map((s) => {
    if (level === 'day') return `(day >= toDate(${p.dateTime(s.from)}) AND day < toDate(${p.dateTime(s.to)}))`;
    if (level !== 'raw') return `(${level} >= ${p.dateTime(s.from)} AND ${level} < ${p.dateTime(s.to)})`;
    // The sort key leads with the hour: name it, or the index does not narrow the read (see
    // schema/clickhouse/004). A raw segment spans at most a few hours.
    const firstHour = Math.floor(s.from / HOUR) * HOUR;
    const lastHour = Math.floor((s.to - 1) / HOUR) * HOUR;
    return `(toStartOfHour(event_time) >= ${p.dateTime(firstHour)} AND toStartOfHour(event_time) <= ${p.dateTime(lastHour)}
        AND event_time >= fromUnixTimestamp64Milli(${p.add(s.from, 'Int64')}) AND event_time < fromUnixTimestamp64Milli(${p.add(s.to, 'Int64')}))`;
  });
  return `(${parts.join(' OR ')})`;
}

/** Money arithmetic: exact; sums of up to three outcome rows. */
const Money = BigNumber.clone({ EXPONENTIAL_AT: 1e9 });

export interface SpendRow {
  key: string;
  /** Exact decimal string. */
  spend: string;
  /** The sum of the records' values in the asked currency, exact. */
  value: string;
  count: number;
  /** Records with a value in that currency (the others: unvalued, or valued in a currency the team had before). */
  valued: number;
}

export interface SpendTotals {
  spend: string;
  count: number;
  /** Largest single payment; "0" when there is none. */
  maxPayment: string;
  flagged: number;
  blocked: number;
  /** Records with an amount_raw in an asset of unknown decimals: stored as 0 spend. Counted only when asked (dimension unpriced). */
  unpriced: number;
  /** The records' values in the asked currency, exact. */
  value: string;
  /** Records without a value in that currency. */
  unvalued: number;
}

/**
 * Each source's value columns, in the asked currency only (values never add across currencies):
 * `worth` and `worth_count` (aliases that shadow no column).
 */
function valueColumns(level: Level | 'raw', currency: string): string {
  if (level === 'raw') {
    return `if(currency = ${currency} AND value IS NOT NULL, toDecimal256(value, 18), toDecimal256(0, 18)) AS worth, toUInt64(currency = ${currency} AND value IS NOT NULL) AS worth_count`;
  }
  return `if(currency = ${currency}, value, toDecimal256(0, 18)) AS worth, if(currency = ${currency}, valued, toUInt64(0)) AS worth_count`;
}

export interface PeriodSpend {
  totals: SpendTotals;
  /** Per requested dimension: the top keys by spend (ties by key) and how many keys there are. */
  by: Partial<Record<Dimension, { rows: SpendRow[]; keys: number }>>;
}

/**
 * Spend of a range (and, when asked, of the period of equal length before it) by each requested
 * dimension, with totals, in one query: rollup rows of every level and the raw edges as one union,
 * grouped and ranked in ClickHouse. One query because the embedded engine runs one at a time.
 */
export async function spendByDimensions(
  store: EventStore,
  teamId: string,
  range: TimeRange,
  dimensions: readonly Dimension[],
  limit: number,
  options: { previous?: boolean; agent?: string; currency?: string } = {},
): Promise<{ current: PeriodSpend; previous?: PeriodSpend }> {
  const p = new Params();
  const team = p.add(teamId, 'String');
  const currency = p.add(options.currency ?? DEFAULT_CURRENCY, 'String');
  const periodStart = p.add(range.from, 'Int64');
  // Every event counts once in the outcome dimension: it gives the totals.
  const dims = [...new Set<Dimension>([...dimensions, 'outcome'])];
  // Dimension names are a closed set of our own (never user input): literals.
  const dimList = `(${dims.map((d) => `'${d}'`).join(', ')})`;
  // The previous period ends where this one starts; rows are told apart by time (`previous`).
  const previousRange = { from: range.from - (range.to - range.from), to: range.from };
  // The rollups hold one dimension per row, so one agent's endpoints (or anything else) come from
  // the raw events, whose sort key (team, hour, agent) still narrows the read to that agent.
  const levels = options.agent === undefined ? (['day', 'hour'] as const) : [];
  const segments = options.previous
    ? joinAdjacent([...splitRange(previousRange, levels), ...splitRange(range, levels)])
    : splitRange(range, levels);
  const agentCondition = options.agent === undefined ? '' : `AND agent_id = ${p.add(options.agent, 'String')}`;

  const branches: string[] = [];
  for (const level of ['day', 'hour'] as const) {
    const where = segmentsCondition(segments, level, p);
    if (!where) continue;
    const at = SOURCE[level].at;
    branches.push(`
      SELECT toUnixTimestamp(${at}) * 1000 < ${periodStart} AS previous, dimension, key, spend, events, max_amount, ${valueColumns(level, currency)}
        FROM ${SOURCE[level].table}
       WHERE team_id = ${team} AND dimension IN ${dimList} AND ${where}`);
  }
  const rawWhere = segmentsCondition(segments, 'raw', p);
  if (rawWhere) {
    const pairs = `[${dims.filter((d) => d !== 'unpriced').map((d) => `('${d}', ${DIMENSION_COLUMN[d]})`).join(', ')}]`;
    const dimensionsOfRow = dims.includes('unpriced')
      ? `arrayConcat(${pairs}, if(${UNPRICED_CONDITION}, [('unpriced', ${DIMENSION_COLUMN.unpriced})], []))`
      : pairs;
    branches.push(`
      SELECT toUnixTimestamp64Milli(event_time) < ${periodStart} AS previous, dim.1 AS dimension, dim.2 AS key,
             toDecimal256(amount, 18) AS spend, toUInt64(1) AS events, amount AS max_amount, ${valueColumns('raw', currency)}
        FROM events ARRAY JOIN ${dimensionsOfRow} AS dim
       WHERE team_id = ${team} ${agentCondition} AND ${rawWhere}`);
  }
  const result = { current: emptyPeriod(dims), ...(options.previous ? { previous: emptyPeriod(dims) } : {}) };
  if (branches.length === 0) return result;

  // Output aliases differ from column names: a ClickHouse alias would shadow the column.
  const rows = await store.query<{
    previous: number;
    dimension: Dimension;
    key: string;
    spend_total: string;
    count: string;
    max_total: string;
    keys: string;
    value_total: string;
    valued: string;
  }>(
    `SELECT previous, dimension, key, spend_total, count, max_total, keys, value_total, valued
       FROM (SELECT previous, dimension, key, toString(sum(spend)) AS spend_total, sum(events) AS count,
                    toString(max(max_amount)) AS max_total, toString(sum(worth)) AS value_total, sum(worth_count) AS valued,
                    count() OVER (PARTITION BY previous, dimension) AS keys,
                    row_number() OVER (PARTITION BY previous, dimension ORDER BY sum(worth) DESC, sum(spend) DESC, key ASC) AS rank
               FROM (${branches.join('\n      UNION ALL')})
              GROUP BY previous, dimension, key)
      WHERE rank <= ${p.add(limit, 'UInt32')} OR dimension IN ('outcome', 'unpriced')
      ORDER BY previous, dimension, rank`,
    p.values,
  );
  for (const row of rows) {
    const period = Number(row.previous) ? result.previous! : result.current;
    const by = period.by[row.dimension]!;
    by.keys = Number(row.keys);
    by.rows.push({ key: row.key, spend: row.spend_total, value: row.value_total, count: Number(row.count), valued: Number(row.valued) });
    if (row.dimension === 'outcome') addOutcome(period.totals, row.key, row.spend_total, Number(row.count), row.max_total, row.value_total, Number(row.valued));
    if (row.dimension === 'unpriced') period.totals.unpriced += Number(row.count);
  }
  return result;
}

function emptyPeriod(dims: readonly Dimension[]): PeriodSpend {
  return {
    totals: { spend: '0', count: 0, maxPayment: '0', flagged: 0, blocked: 0, unpriced: 0, value: '0', unvalued: 0 },
    by: Object.fromEntries(dims.map((d) => [d, { rows: [], keys: 0 }])),
  };
}

function addOutcome(totals: SpendTotals, outcome: string, spend: string, count: number, max: string, value: string, valued: number): void {
  totals.spend = new Money(totals.spend).plus(spend).toFixed();
  totals.value = new Money(totals.value).plus(value).toFixed();
  totals.count += count;
  totals.unvalued += count - valued;
  if (new Money(max).gt(totals.maxPayment)) totals.maxPayment = max;
  if (outcome === 'flagged') totals.flagged += count;
  if (outcome === 'blocked') totals.blocked += count;
}

export type Granularity = 'minute' | 'hour' | 'day' | 'week' | 'month';

/** ClickHouse expression of the bucket start of a UTC DateTime `t` in zone `{tz:String}`. */
const BUCKET: Record<Granularity, string> = {
  minute: 'toStartOfMinute(t)',
  hour: 'toStartOfHour(toDateTime(t, {tz:String}))',
  day: 'toStartOfDay(toDateTime(t, {tz:String}))',
  // toStartOfWeek and toStartOfMonth give a Date, which toUnixTimestamp reads as UTC midnight:
  // made a DateTime in the zone again, it is the zone's midnight. Weeks start on Monday.
  week: 'toDateTime(toStartOfWeek(toDateTime(t, {tz:String}), 1), {tz:String})',
  month: 'toDateTime(toStartOfMonth(toDateTime(t, {tz:String})), {tz:String})',
};

/** Steps that visit every bucket of a range: zone offsets are whole multiples of 15 minutes. */
const BUCKET_PROBE_SECONDS: Record<Granularity, number> = { minute: 60, hour: 900, day: 900, week: 900, month: 900 };

export interface TimeBucket {
  /** Bucket start, Unix ms. */
  t: number;
  spend: string;
  /** The records' values in the asked currency. */
  value: string;
  count: number;
  /** Records without a value in that currency. */
  unvalued: number;
}

/**
 * Rollups whose units never straddle a bucket boundary: a unit can be summed into a bucket only
 * if every boundary inside the range falls on a unit start (a zone at +05:30 puts day boundaries
 * on half hours, so its days are summed from minutes).
 */
function alignedLevels(buckets: readonly number[]): Level[] {
  const boundaries = buckets.slice(1);
  return (['day', 'hour', 'minute'] as const).filter((level) => boundaries.every((b) => b % UNIT_MS[level] === 0));
}

/**
 * The rollups likely aligned with the buckets, from the zone's offsets at the range's ends: a
 * guess the answer's own bucket starts then check (a zone can change offset in between).
 */
function likelyAlignedLevels(range: TimeRange, granularity: Granularity, tz: string): Level[] {
  if (granularity === 'minute') return ['minute'];
  const offsets = tz === 'UTC' ? [0] : [offsetAt(tz, range.from), offsetAt(tz, range.to - 1)];
  if (granularity !== 'hour' && offsets.every((o) => o === 0)) return ['day', 'hour', 'minute'];
  return offsets.every((o) => o % HOUR === 0) ? ['hour', 'minute'] : ['minute'];
}

/**
 * Spend per bucket over the range, zero-filled, from the coarsest rollups that fit the buckets and
 * the raw edges, in one query: probes every few minutes from `from` (and the range's last instant,
 * which a probe can miss) name every bucket, data or not. Should the buckets show a rollup that
 * does not fit (the zone changed offset inside the range), the answer is read again without it.
 */
export async function spendTimeseries(
  store: EventStore,
  teamId: string,
  range: TimeRange,
  granularity: Granularity,
  tz: string,
  agent?: string,
  currency = DEFAULT_CURRENCY,
): Promise<TimeBucket[]> {
  if (range.to <= range.from) return [];
  // One agent's spend: the raw events only (the rollups are not per agent and per time at once).
  const guess = agent === undefined ? likelyAlignedLevels(range, granularity, tz) : [];
  const buckets = await bucketsOf(store, teamId, range, granularity, tz, guess, agent, currency);
  const aligned = alignedLevels(buckets.map((b) => b.t));
  if (guess.every((level) => aligned.includes(level))) return buckets;
  return bucketsOf(store, teamId, range, granularity, tz, aligned, agent, currency);
}

async function bucketsOf(
  store: EventStore,
  teamId: string,
  range: TimeRange,
  granularity: Granularity,
  tz: string,
  levels: readonly Level[],
  agent: string | undefined,
  currency: string,
): Promise<TimeBucket[]> {
  const p = new Params();
  const team = p.add(teamId, 'String');
  const valuedIn = p.add(currency, 'String');
  const segments = splitRange(range, levels);
  const agentCondition = agent === undefined ? '' : `AND agent_id = ${p.add(agent, 'String')}`;
  const branches: string[] = [];
  for (const level of ['day', 'hour', 'minute', 'raw'] as const) {
    const where = segmentsCondition(segments, level, p);
    if (!where) continue;
    const { table, at } = SOURCE[level];
    // The outcome dimension counts every event once: its rows are the totals.
    const outcome = level === 'day' || level === 'hour' ? "AND dimension = 'outcome'" : '';
    // Raw rows summed per minute: bucket boundaries fall on whole minutes in every zone.
    const [t, sums] =
      level === 'raw'
        ? ["toStartOfMinute(toDateTime(event_time, 'UTC'))", 'sum(toDecimal256(amount, 18)) AS s, count() AS n, sum(toDecimal256(ifNull(value, 0), 18)) AS v, count(value) AS vn']
        : [at, 'sum(spend) AS s, sum(events) AS n, sum(value) AS v, sum(valued) AS vn'];
    branches.push(`
      SELECT ${t} AS t, currency, ${sums}
        FROM ${table}
       WHERE team_id = ${team} ${outcome} ${agentCondition} AND ${where}
       GROUP BY t, currency`);
  }
  const step = BUCKET_PROBE_SECONDS[granularity];
  const probes = Math.max(1, Math.ceil((range.to - range.from) / 1000 / step));
  const from = p.add(range.from, 'Int64');
  const to = p.add(range.to, 'Int64');
  branches.push(`
      SELECT toDateTime(arrayJoin(arrayConcat(
               arrayFilter(s -> s * 1000 < ${to}, arrayMap(i -> intDiv(${from}, 1000) + i * ${p.add(step, 'UInt32')}, range(${p.add(probes, 'UInt64')}))),
               [intDiv(${to} - 1, 1000)])), 'UTC') AS t,
             '' AS currency, toDecimal256(0, 18) AS s, toUInt64(0) AS n, toDecimal256(0, 18) AS v, toUInt64(0) AS vn`);
  const rows = await store.query<{ b: string; spend_total: string; count: string; value_total: string; valued: string }>(
    `SELECT toUnixTimestamp(${BUCKET[granularity]}) * 1000 AS b, toString(sum(s)) AS spend_total, sum(n) AS count,
            toString(sumIf(v, currency = ${valuedIn})) AS value_total, sumIf(vn, currency = ${valuedIn}) AS valued
       FROM (${branches.join('\n      UNION ALL')})
      GROUP BY b
      ORDER BY b`,
    { ...p.values, tz },
  );
  return rows.map((row) => {
    const count = Number(row.count);
    return { t: Number(row.b), spend: row.spend_total, value: row.value_total, count, unvalued: count - Number(row.valued) };
  });
}
