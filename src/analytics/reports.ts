import BigNumber from 'bignumber.js';
import { domainToUnicode } from 'node:url';
import type { EventStore } from '../stores/clickhouse.js';
import { spendByDimensions, spendTimeseries, type Dimension, type Granularity, type SpendRow, type TimeRange } from './queries.js';

/** Money arithmetic: exact to 18 decimals, the scale of the event store. */
const Money = BigNumber.clone({ DECIMAL_PLACES: 18, ROUNDING_MODE: BigNumber.ROUND_HALF_EVEN, EXPONENTIAL_AT: 1e9 });

const DAY = 86_400_000;

/** Bucket size for a range when the query names none: about 100 to 3,000 buckets. */
export function defaultGranularity(spanMs: number): Granularity {
  if (spanMs <= 2 * 3_600_000) return 'minute';
  if (spanMs <= 2 * DAY) return 'hour';
  if (spanMs <= 90 * DAY) return 'day';
  if (spanMs <= 730 * DAY) return 'week';
  return 'month';
}

const iso = (ms: number) => new Date(ms).toISOString();
const period = (range: TimeRange) => ({ from: iso(range.from), to: iso(range.to) });

/** Percent change, rounded to 2 decimals; null when there is nothing to compare with. */
function percentChange(current: string | number, previous: string | number): number | null {
  const before = new Money(previous);
  if (before.isZero()) return null;
  return new Money(current).minus(before).div(before).times(100).decimalPlaces(2).toNumber();
}

/**
 * A key as people read it: a host in Unicode (stored as the URL parser gives it, punycode, which
 * policies and filters match), and a named key for records sent without a network.
 */
export function displayKey(dimension: Dimension, key: string): string {
  if (dimension === 'domain') return domainToUnicode(key) || key;
  if (dimension === 'network' && key === '') return NO_NETWORK;
  return key;
}

/** The key of records sent without a network (CAIP-2 names always hold a colon, so none is called this). */
export const NO_NETWORK = 'unknown';

const asMap = (rows: SpendRow[], dimension: Dimension) =>
  Object.fromEntries(rows.map((r) => [displayKey(dimension, r.key), { spend: r.spend, value: r.value, count: r.count, unvalued: r.count - r.valued }]));

/**
 * GET /analytics/summary: totals, top agents and domains, and the previous period of equal length;
 * values in `currency` (the team's), with the count of records without one.
 */
export async function summaryReport(store: EventStore, teamId: string, range: TimeRange, limit: number, agent: string | undefined, currency: string) {
  const previousRange = { from: range.from - (range.to - range.from), to: range.from };
  const { current, previous } = await spendByDimensions(store, teamId, range, ['agent', 'domain', 'unpriced'], limit, { previous: true, agent, currency });
  const totals = current.totals;
  const before = previous!.totals;
  return {
    period: period(range),
    currency,
    totalValue: totals.value,
    unvalued: totals.unvalued,
    totalSpend: totals.spend,
    count: totals.count,
    avgPayment: totals.count === 0 ? '0' : new Money(totals.spend).div(totals.count).toFixed(),
    maxPayment: totals.maxPayment,
    activeAgents: current.by.agent!.keys,
    flagged: totals.flagged,
    blocked: totals.blocked,
    unpriced: totals.unpriced,
    byAgent: asMap(current.by.agent!.rows, 'agent'),
    byEndpoint: asMap(current.by.domain!.rows, 'domain'),
    previous: { period: period(previousRange), totalValue: before.value, totalSpend: before.spend, count: before.count },
    change: { value: percentChange(totals.value, before.value), spend: percentChange(totals.spend, before.spend), count: percentChange(totals.count, before.count) },
  };
}

/** GET /analytics/by-*: spend per key with its share of the range's total. */
export async function breakdownReport(store: EventStore, teamId: string, range: TimeRange, dimension: Dimension, limit: number, agent: string | undefined, currency: string) {
  const { current } = await spendByDimensions(store, teamId, range, [dimension], limit, { agent, currency });
  const sum = new Money(current.totals.spend);
  return current.by[dimension]!.rows.map((r) => ({
    key: displayKey(dimension, r.key),
    spend: r.spend,
    value: r.value,
    currency,
    count: r.count,
    unvalued: r.count - r.valued,
    share: sum.isZero() ? 0 : new Money(r.spend).div(sum).decimalPlaces(6).toNumber(),
  }));
}

/** GET /analytics/timeseries: zero-filled buckets with ISO starts. */
export async function timeseriesReport(store: EventStore, teamId: string, range: TimeRange, granularity: Granularity, tz: string, agent: string | undefined, currency: string) {
  const buckets = await spendTimeseries(store, teamId, range, granularity, tz, agent, currency);
  return buckets.map((b) => ({ t: iso(b.t), spend: b.spend, value: b.value, count: b.count, unvalued: b.unvalued }));
}
