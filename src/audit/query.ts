import type { EventStore } from '../stores/clickhouse.js';

/**
 * The body of /audit/query, /summarize and /count: any JSON object. The client SDK switches to its
 * local storage for good after one non-2xx answer, so nothing in an object is refused; each field
 * means what the SDK's own MemoryStorage makes of it (matchesQuery, sort, slice), JavaScript
 * coercions included. Known fields: agentId, team, endpoint, minAmount, maxAmount, startTime,
 * endTime, status, tags, limit, offset, orderBy, order.
 */
export type AuditQuery = Record<string, unknown>;

/** A WHERE clause and its parameters. */
export interface Filter {
  where: string;
  params: Record<string, unknown>;
}

/**
 * Thrown while reading a query where MemoryStorage would throw (a TypeError from `.trim()` on a
 * number, a BigInt SyntaxError on "1e3"). It throws only once a record reaches that check, so
 * "nothing matches" is its answer whenever it answers at all: that is what the service answers.
 */
class NoRecordMatches extends Error {}
const noMatch = (): never => {
  throw new NoRecordMatches();
};

/** The SDK's parseUSDC, step for step (BigInt's own parsing included): 10^-6 units, or throws. */
function parseUsdc(human: string): bigint {
  const trimmed = human.trim();
  if (trimmed === '' || trimmed.startsWith('-')) return noMatch();
  const dot = trimmed.indexOf('.');
  if (dot === -1) return BigInt(trimmed) * 1_000_000n;
  const fraction = trimmed.slice(dot + 1);
  if (fraction.length > 6) return noMatch();
  return BigInt(trimmed.slice(0, dot) || '0') * 1_000_000n + BigInt(fraction.padEnd(6, '0'));
}

/** Amounts the service stores are below 10^20; a bound past this one only says "all" or "none". */
const AMOUNT_CEILING_MICROS = 10n ** 30n;

function microsToDecimal(micros: bigint): string {
  return `${micros / 1_000_000n}.${(micros % 1_000_000n).toString().padStart(6, '0')}`;
}

/** `compareUSDC(record.amount, bound)`: the bound must be a string the SDK can parse. */
function amountBound(value: unknown): bigint {
  if (typeof value !== 'string') return noMatch(); // a number has no .trim()
  return parseUsdc(value);
}

/** Stored event times lie in [2000-01-01, now + 5 min]: a time bound outside says "all" or "none". */
const EARLIEST_STORED_MS = Date.UTC(2000, 0, 1);
const latestStoredMs = () => Date.now() + 86_400_000;

/**
 * `record.created_at < value` (or `>`) compares numbers after JavaScript's ToNumber: "123" is 123,
 * [5] is 5, "yesterday" is NaN and NaN never excludes a record. undefined means no bound.
 */
function timeThreshold(value: unknown): number | undefined {
  const n = Number(value); // throws where the SDK's comparison would (an object whose toString is not a function)
  return Number.isNaN(n) ? undefined : n;
}

/** `query.status?.length && !query.status.includes(record.policy_evaluation)` */
function statusCondition(status: unknown, params: Record<string, unknown>): string | undefined {
  if (!(status as { length?: unknown } | null | undefined)?.length) return undefined;
  if (typeof status === 'string') {
    // String.prototype.includes: "flagged,blocked" matches both; "BLOCKED" matches nothing.
    params.statusText = status;
    return 'position({statusText:String}, policy_evaluation) > 0';
  }
  if (!Array.isArray(status)) return noMatch(); // an object with a length has no .includes()
  const values = status.filter((s): s is string => typeof s === 'string');
  if (values.length === 0) return noMatch();
  params.status = values;
  return 'policy_evaluation IN {status:Array(String)}';
}

/** `query.tags?.length && !query.tags.some((t) => record.tags.includes(t))` */
function tagsCondition(tags: unknown, params: Record<string, unknown>): string | undefined {
  if (!(tags as { length?: unknown } | null | undefined)?.length) return undefined;
  if (!Array.isArray(tags)) return noMatch(); // a string or object has no .some()
  const values = tags.filter((t): t is string => typeof t === 'string');
  if (values.length === 0) return noMatch();
  params.tags = values;
  return 'hasAny(tags, {tags:Array(String)})';
}

function buildFilter(teamId: string, q: AuditQuery): Filter {
  const where = ['team_id = {team:String}'];
  const params: Record<string, unknown> = { team: teamId };
  // A truthy filter that is not a string never equals a record's string field.
  if (q.agentId) {
    if (typeof q.agentId !== 'string') return noMatch();
    where.push('agent_id = {agentId:String}');
    params.agentId = q.agentId;
  }
  if (q.team) {
    if (typeof q.team !== 'string') return noMatch();
    where.push('team_label = {teamLabel:String}');
    params.teamLabel = q.team;
  }
  if (q.endpoint) {
    // String.prototype.includes turns its argument into a string: 5 looks for "5".
    where.push('position(endpoint, {endpoint:String}) > 0');
    params.endpoint = String(q.endpoint);
  }
  if (q.minAmount) {
    const min = amountBound(q.minAmount);
    if (min > AMOUNT_CEILING_MICROS) return noMatch();
    where.push('amount >= toDecimal256({minAmount:String}, 18)');
    params.minAmount = microsToDecimal(min);
  }
  if (q.maxAmount) {
    const max = amountBound(q.maxAmount);
    if (max < AMOUNT_CEILING_MICROS) {
      where.push('amount <= toDecimal256({maxAmount:String}, 18)');
      params.maxAmount = microsToDecimal(max);
    }
  }
  // Naming the hour lets the sort key narrow the read (schema/clickhouse/004). Times are whole ms.
  const start = q.startTime ? timeThreshold(q.startTime) : undefined;
  if (start !== undefined && start > EARLIEST_STORED_MS) {
    if (start > latestStoredMs()) return noMatch();
    where.push(`event_time >= fromUnixTimestamp64Milli({startTime:Int64})
      AND toStartOfHour(event_time) >= toStartOfHour(fromUnixTimestamp64Milli({startTime:Int64}, 'UTC'))`);
    params.startTime = Math.ceil(start);
  }
  const end = q.endTime ? timeThreshold(q.endTime) : undefined;
  if (end !== undefined && end < latestStoredMs()) {
    if (end < EARLIEST_STORED_MS) return noMatch();
    where.push(`event_time <= fromUnixTimestamp64Milli({endTime:Int64})
      AND toStartOfHour(event_time) <= toStartOfHour(fromUnixTimestamp64Milli({endTime:Int64}, 'UTC'))`);
    params.endTime = Math.floor(end);
  }
  const status = statusCondition(q.status, params);
  if (status) where.push(status);
  const tags = tagsCondition(q.tags, params);
  if (tags) where.push(tags);
  return { where: where.join(' AND '), params };
}

/**
 * The SDK's filter (matchesQuery in its MemoryStorage) as SQL, with the same truthiness: an empty
 * string, 0 or an empty list filters nothing. Times are inclusive at both ends; amounts compare
 * exactly; endpoint is a case-sensitive substring; tags match when any is present. A filter the SDK
 * could not apply without throwing matches nothing.
 */
export function auditFilter(teamId: string, q: AuditQuery): Filter {
  try {
    return buildFilter(teamId, q);
  } catch (err) {
    // JavaScript's own coercions (String(), Number(), BigInt()) throw TypeError or SyntaxError here.
    if (err instanceof NoRecordMatches || err instanceof TypeError || err instanceof SyntaxError || err instanceof RangeError) {
      return { where: 'team_id = {team:String} AND 0', params: { team: teamId } };
    }
    throw err;
  }
}

/** Storage order: the SDK's insertion order, used when no orderBy is given and to break ties. */
const STORAGE_ORDER = 'ingest_seq, received_at, id';

/**
 * ORDER BY for a query, as the SDK's sort: a known `orderBy` sorts, anything else keeps storage
 * order; only `order: "desc"` reverses (not "DESC"); ties keep storage order (a stable sort).
 * Endpoints sort as JavaScript's localeCompare does (locale-aware, "search" before "Search"), which
 * no ClickHouse collation reproduces exactly: the distinct endpoints that match are sorted here,
 * and ClickHouse orders by their rank.
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

/** Rows to skip and to return; `limit` undefined means all the rest. */
export interface Page {
  offset: number;
  limit?: number;
}

/** The ECMAScript ToIntegerOrInfinity that Array.prototype.slice applies to its arguments. */
function toIntegerOrInfinity(value: unknown): number {
  const n = Number(value);
  return Number.isNaN(n) ? 0 : Math.trunc(n);
}

/** slice's relative index: a negative one counts from the end. */
function relativeIndex(value: unknown, length: number): number {
  const n = toIntegerOrInfinity(value);
  return n < 0 ? Math.max(length + n, 0) : Math.min(n, length);
}

const isPlainCount = (v: unknown) => v === undefined || v === null || (typeof v === 'number' && v >= 0);
const capped = (n: number) => Math.min(n, Number.MAX_SAFE_INTEGER);

/**
 * The SDK's page: `offset = query.offset ?? 0; limit = query.limit ?? results.length;
 * results.slice(offset, offset + limit)`, with JavaScript's `+` ("5" + 10 is "510") and slice's
 * negative indexes. Non-negative numbers need no count; anything else is computed against the
 * number of matching records, which `count` supplies only then. undefined: the SDK would throw
 * (an object whose valueOf and toString are not functions), so no record is returned.
 */
export async function auditPage(q: AuditQuery, count: () => Promise<number>): Promise<Page | undefined> {
  try {
    if (isPlainCount(q.offset) && isPlainCount(q.limit)) {
      const offset = toIntegerOrInfinity(q.offset ?? 0);
      if (q.limit === undefined || q.limit === null) return { offset: capped(offset) };
      const end = toIntegerOrInfinity(((q.offset ?? 0) as number) + (q.limit as number));
      return { offset: capped(offset), limit: capped(Math.max(end - offset, 0)) };
    }
    const length = await count();
    const offset = q.offset ?? 0;
    const limit = q.limit ?? length;
    const end = (offset as never) + (limit as never); // JavaScript's + on whatever was sent, as the SDK does
    const from = relativeIndex(offset, length);
    return { offset: from, limit: Math.max(relativeIndex(end, length) - from, 0) };
  } catch (err) {
    if (err instanceof TypeError) return undefined;
    throw err;
  }
}
