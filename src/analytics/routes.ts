import { ApiError } from '../http/errors.js';
import { defineRoute, type RouteDeps, type RouteSpec } from '../http/routes.js';
import type { EventStore } from '../stores/clickhouse.js';
import { isTimeZone, parseQueryTime } from '../http/validation.js';
import type { Dimension, Granularity, TimeRange } from './queries.js';
import { breakdownReport, defaultGranularity, summaryReport, timeseriesReport } from './reports.js';
import { DEFAULT_CURRENCY } from '../domain/currencies.js';
import type { Sql } from '../stores/sql.js';
import { findTeam } from '../teams/repository.js';

const DAY = 86_400_000;
const DEFAULT_RANGE_MS = 30 * DAY;
const DEFAULT_LIMIT = 100;
const MAX_BUCKETS = 10_000;

interface RangeQuery {
  from?: string;
  to?: string;
  limit?: number;
  /** Only this agent's records. */
  agent?: string;
}

const invalid = (field: string, message: string) =>
  new ApiError('validation_failed', `Query string is invalid: ${field} ${message}`, [{ field, message }]);

/** from/to of a query: Unix ms or ISO 8601; the last 30 days by default; from after to is a 400. */
export function parseRange(query: RangeQuery, now = Date.now()): TimeRange {
  const to = query.to !== undefined ? parseQueryTime(query.to, 'to') : now;
  const from = query.from !== undefined ? parseQueryTime(query.from, 'from') : to - DEFAULT_RANGE_MS;
  if (from > to) throw invalid('from', 'must not be after to');
  return { from, to };
}

const RANGE_DOC =
  '`from` (inclusive) and `to` (exclusive) take Unix ms or ISO 8601; the default is the last 30 days. Answers are ' +
  'exact to the millisecond: whole UTC days and hours come from the rollups, the ragged ends from the raw events. ' +
  '`agent` keeps one agent\'s records (read from the raw events). `spend` adds amounts of every asset as they are; ' +
  '`value` is the sum of the records\' values in the team\'s currency (`currency`), and `unvalued` counts the records ' +
  'it leaves out (no rate valued them, or they were valued in a currency the team had before). A read waits only ' +
  'while records it counts (of event times in the range) are still being loaded, and then says so in `Server-Timing` ' +
  '(`loader;dur=<ms>`).';

/**
 * The read session once the team's records of event times in `times` are loaded, and the header
 * saying how long the read waited for them, when it did.
 */
async function freshRead(deps: RouteDeps, teamId: string, times: TimeRange): Promise<{ events: EventStore; headers?: Record<string, string> }> {
  const { events, waitedMs } = await deps.readEventsIn(teamId, times);
  if (waitedMs === 0) return { events };
  return { events, headers: { 'Server-Timing': `loader;dur=${waitedMs.toFixed(1)};desc="waited for acknowledged records to load"` } };
}

/** The team's currency: what analytics answer values in. */
async function teamCurrency(db: Sql, teamId: string): Promise<string> {
  return (await findTeam(db, teamId))?.currency ?? DEFAULT_CURRENCY;
}

export const analyticsSummary = defineRoute<unknown, RangeQuery>({
  method: 'get',
  path: '/analytics/summary',
  operationId: 'analyticsSummary',
  summary: 'Total spend and counts of the team over a range, by agent and by endpoint domain',
  description: `${RANGE_DOC} \`limit\` caps byAgent and byEndpoint (default 100, largest value first, then spend).`,
  tag: 'analytics',
  query: 'analytics-query.json',
  responses: { 200: { description: 'The summary', schema: 'analytics-summary.json' } },
  async handler({ query, team, deps }) {
    const range = parseRange(query);
    const currency = await teamCurrency(deps.db, team.teamId);
    // The previous period of equal length counts too.
    const { events, headers } = await freshRead(deps, team.teamId, { from: range.from - (range.to - range.from), to: range.to });
    return { body: await summaryReport(events, team.teamId, range, query.limit ?? DEFAULT_LIMIT, query.agent, currency), headers };
  },
});

const BUCKET_MS: Record<Granularity, number> = { minute: 60_000, hour: 3_600_000, day: DAY, week: 7 * DAY, month: 28 * DAY };

export const analyticsTimeseries = defineRoute<unknown, RangeQuery & { granularity?: Granularity; tz?: string }>({
  method: 'get',
  path: '/analytics/timeseries',
  operationId: 'analyticsTimeseries',
  summary: 'Spend over time in buckets, zero-filled across the whole range',
  description: `${RANGE_DOC} Buckets are UTC unless \`tz\` (IANA) moves hour, day, week and month boundaries.`,
  tag: 'analytics',
  query: 'timeseries-query.json',
  responses: { 200: { description: 'One entry per bucket, oldest first', schema: 'timeseries.json' } },
  async handler({ query, team, deps }) {
    const range = parseRange(query);
    const tz = query.tz ?? 'UTC';
    if (!isTimeZone(tz)) throw invalid('tz', 'is not an IANA time zone');
    const granularity = query.granularity ?? defaultGranularity(range.to - range.from);
    if ((range.to - range.from) / BUCKET_MS[granularity] > MAX_BUCKETS) {
      throw invalid('granularity', `would yield more than ${MAX_BUCKETS} buckets for this range; choose a larger one`);
    }
    const currency = await teamCurrency(deps.db, team.teamId);
    const { events, headers } = await freshRead(deps, team.teamId, range);
    return { body: await timeseriesReport(events, team.teamId, range, granularity, tz, query.agent, currency), headers };
  },
});

function breakdownRoute(path: string, operationId: string, summary: string, dimension: Dimension | 'domain-or-url'): RouteSpec {
  return defineRoute<unknown, RangeQuery & { level?: 'domain' | 'url' }>({
    method: 'get',
    path,
    operationId,
    summary,
    description: `${RANGE_DOC} Sorted by value, then spend, largest first; share is the fraction of the range's total spend.`,
    tag: 'analytics',
    query: dimension === 'domain-or-url' ? 'endpoint-query.json' : 'analytics-query.json',
    responses: { 200: { description: 'Spend per key', schema: 'spend-breakdown.json' } },
    async handler({ query, team, deps }) {
      const by: Dimension = dimension === 'domain-or-url' ? (query.level === 'url' ? 'url' : 'domain') : dimension;
      const range = parseRange(query);
      const currency = await teamCurrency(deps.db, team.teamId);
      const { events, headers } = await freshRead(deps, team.teamId, range);
      return { body: await breakdownReport(events, team.teamId, range, by, query.limit ?? DEFAULT_LIMIT, query.agent, currency), headers };
    },
  });
}

export const analyticsRoutes: RouteSpec[] = [
  analyticsSummary,
  analyticsTimeseries,
  breakdownRoute('/analytics/by-agent', 'analyticsByAgent', 'Spend per agent', 'agent'),
  breakdownRoute('/analytics/by-category', 'analyticsByCategory', 'Spend per category (llm, api, data, ...)', 'category'),
  breakdownRoute('/analytics/by-endpoint', 'analyticsByEndpoint', 'Spend per endpoint domain, or per full URL with level=url', 'domain-or-url'),
  breakdownRoute('/analytics/by-network', 'analyticsByNetwork', 'Spend per blockchain network (CAIP-2)', 'network'),
  breakdownRoute('/analytics/by-asset', 'analyticsByAsset', 'Spend per asset (symbol or token address as sent): other totals add amounts of different assets', 'asset'),
];
