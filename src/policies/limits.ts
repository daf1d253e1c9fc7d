import { ApiError, type FieldError } from '../http/errors.js';
import { isTimeZone } from '../http/validation.js';
import { caip2Network } from '../domain/networks.js';

/** Limits on money (`amount`, a decimal string). */
export type SpendKind = 'per_call' | 'per_hour' | 'daily' | 'weekly' | 'monthly' | 'total' | 'per_endpoint';
/** Limits on the number of calls (`count`, an integer). */
export type CallKind = 'calls_per_minute' | 'calls_per_hour' | 'calls_per_day';
export type LimitKind = SpendKind | CallKind;

export const CALL_KINDS: ReadonlySet<LimitKind> = new Set<LimitKind>(['calls_per_minute', 'calls_per_hour', 'calls_per_day']);
export const isCallKind = (kind: LimitKind): kind is CallKind => CALL_KINDS.has(kind);

/** A limit as stored and returned: `amount` an exact decimal string, or `count` for the call kinds. */
export interface Limit {
  kind: LimitKind;
  amount?: string;
  count?: number;
  endpoint?: string;
}

/** What a limit allows, as text: the amount, or the count of calls. */
export const limitText = (l: Limit): string => (isCallKind(l.kind) ? String(l.count) : l.amount!);

/**
 * Which records a policy counts and checks: each list given narrows it (a record must match one
 * entry of every list given). Stored canonical: lists sorted, networks CAIP-2, assets and hosts
 * lowercase, endpoint patterns normalised.
 */
export interface PolicyMatch {
  categories?: string[];
  networks?: string[];
  assets?: string[];
  endpoints?: string[];
  tags?: string[];
}

export type PolicyScope = 'agent' | 'pool';

/**
 * What a policy allows, deny by default: each list given must hold the record's (or the
 * authorization's) value, else it breaks the policy with kind `not_allowed`; a value not given
 * (no payee on an authorization) is not on the list. Stored canonical: EVM addresses and assets
 * lowercase (compared without case), other payees (Solana's base58) as written, networks CAIP-2,
 * endpoint patterns normalised.
 */
export interface PolicyAllow {
  payees?: string[];
  networks?: string[];
  assets?: string[];
  endpoints?: string[];
}

/** How long an authorization under an approve policy waits for a person, unless the policy says. */
export const DEFAULT_APPROVAL_TIMEOUT_S = 900;

const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
/** A payee as compared: EVM addresses without case (their mixed case is only a checksum), others exact. */
export const canonicalPayee = (payee: string): string => (EVM_ADDRESS.test(payee) ? payee.toLowerCase() : payee);

const LABEL = '[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?';
const HOST = new RegExp(`^(?=.{1,253}$)${LABEL}(\\.${LABEL})*$`);

/**
 * The endpoint pattern of a per_endpoint limit in its stored form, or a reason it is not one:
 * a host, `*.` and a host, or an http(s) URL prefix. Hosts are compared lowercase, as events store them.
 */
export function normalizeEndpointPattern(pattern: string): { pattern: string } | { problem: string } {
  if (/^https?:\/\//i.test(pattern)) {
    let url: URL;
    try {
      url = new URL(pattern);
    } catch {
      return { problem: 'is not a valid URL prefix' };
    }
    if (!url.hostname) return { problem: 'is not a valid URL prefix' };
    // Keep the path as written (prefix match); only scheme and host are case-insensitive.
    const rest = pattern.slice(pattern.indexOf('//') + 2).replace(/^[^/?#]*/, '');
    return { pattern: `${url.protocol}//${url.host}${rest}` };
  }
  const host = pattern.toLowerCase();
  const bare = host.startsWith('*.') ? host.slice(2) : host;
  if (!HOST.test(bare)) return { problem: 'must be a host (api.example.com), a host wildcard (*.example.com) or a URL prefix (https://api.example.com/v1/)' };
  return { pattern: host };
}

/** What checkPolicyFields gets: the body's fields it checks, as sent. */
export interface PolicyFieldsInput {
  limits?: Limit[];
  timezone?: string | null;
  match?: PolicyMatch | null;
  notify_at?: number[];
  starts_at?: string | null;
  allow?: PolicyAllow | null;
}

/** The same fields in stored form (undefined: not given). */
export interface CheckedPolicyFields {
  limits?: Limit[];
  match?: PolicyMatch | null;
  notifyAt?: number[];
  startsAt?: number | null;
  allow?: PolicyAllow | null;
}

const ALLOW_LISTS = ['payees', 'networks', 'assets', 'endpoints'] as const;

const MATCH_LISTS = ['categories', 'networks', 'assets', 'endpoints', 'tags'] as const;

/**
 * A filter's or allowlist's lists in stored form (sorted, each value once): networks as CAIP-2,
 * endpoint patterns normalised, the rest by `canonical`; a bad entry is a problem naming it
 * (`match.networks[0]`). null when no list is given; undefined when the field is not.
 */
function canonicalLists<L extends string, T extends Partial<Record<L, string[]>>>(
  given: T | null | undefined,
  lists: readonly L[],
  name: string,
  problems: FieldError[],
  canonical: (list: L, value: string) => string,
): T | null | undefined {
  if (given === undefined) return undefined;
  if (given === null) return null;
  const out: Partial<Record<L, string[]>> = {};
  for (const list of lists) {
    const values = given[list];
    if (values === undefined) continue;
    const stored = values.map((value, i) => {
      const field = `${name}.${list}[${i}]`;
      if (list === 'networks') {
        const network = caip2Network(value);
        if (network === undefined) problems.push({ field, message: 'must be CAIP-2 (<namespace>:<reference>) or a known x402 network name' });
        return network ?? value;
      }
      if (list === 'endpoints') {
        const checked = normalizeEndpointPattern(value);
        if ('problem' in checked) problems.push({ field, message: checked.problem });
        return 'problem' in checked ? value : checked.pattern;
      }
      return canonical(list, value);
    });
    out[list] = [...new Set(stored)].sort();
  }
  return Object.keys(out).length > 0 ? (out as T) : null;
}

/**
 * Checks what the JSON schema cannot: endpoint only and always on per_endpoint, `amount` on money
 * limits and `count` on call limits, a valid pattern, no limit given twice, a known time zone,
 * known networks and valid endpoint patterns in `match`, a `starts_at` on a whole minute. Returns
 * the fields in stored form; throws a 400 naming fields.
 */
export function checkPolicyFields(input: PolicyFieldsInput): CheckedPolicyFields {
  const problems: FieldError[] = [];
  const seen = new Set<string>();
  const limits = input.limits?.map((limit, i) => {
    const field = `limits[${i}]`;
    let stored: Limit;
    if (isCallKind(limit.kind)) {
      if (limit.count === undefined) problems.push({ field: `${field}.count`, message: `is required for a ${limit.kind} limit` });
      if (limit.amount !== undefined) problems.push({ field: `${field}.amount`, message: `is not allowed on a ${limit.kind} limit: it counts calls (give count)` });
      stored = { kind: limit.kind, count: limit.count ?? 0 };
    } else {
      if (limit.amount === undefined) problems.push({ field: `${field}.amount`, message: `is required for a ${limit.kind} limit` });
      if (limit.count !== undefined) problems.push({ field: `${field}.count`, message: `is only allowed on the calls_per_* limits` });
      stored = { kind: limit.kind, amount: limit.amount ?? '0' };
    }
    if (limit.kind === 'per_endpoint') {
      if (limit.endpoint === undefined) problems.push({ field: `${field}.endpoint`, message: 'is required for a per_endpoint limit' });
      else {
        const checked = normalizeEndpointPattern(limit.endpoint);
        if ('problem' in checked) problems.push({ field: `${field}.endpoint`, message: checked.problem });
        else stored = { ...stored, endpoint: checked.pattern };
      }
    } else if (limit.endpoint !== undefined) {
      problems.push({ field: `${field}.endpoint`, message: 'is only allowed on a per_endpoint limit' });
    }
    const identity = `${stored.kind} ${stored.endpoint ?? ''}`;
    if (seen.has(identity)) problems.push({ field, message: `repeats a ${stored.kind} limit${stored.endpoint ? ` for ${stored.endpoint}` : ''}` });
    seen.add(identity);
    return stored;
  });
  if (typeof input.timezone === 'string' && !isTimeZone(input.timezone)) problems.push({ field: 'timezone', message: 'is not an IANA time zone' });
  // Assets and categories compared without case.
  const match = canonicalLists(input.match, MATCH_LISTS, 'match', problems, (list, value) => (list === 'assets' || list === 'categories' ? value.toLowerCase() : value));
  const notifyAt = input.notify_at === undefined ? undefined : [...new Set(input.notify_at)].sort((a, b) => a - b);
  let startsAt: number | null | undefined = input.starts_at === undefined ? undefined : null;
  if (typeof input.starts_at === 'string') {
    startsAt = Date.parse(input.starts_at);
    // Holds and totals count in whole minutes (src/authorizations/holds.ts).
    if (!Number.isFinite(startsAt)) problems.push({ field: 'starts_at', message: 'is not an ISO 8601 date-time' });
    else if (startsAt % 60_000 !== 0) problems.push({ field: 'starts_at', message: 'must fall on a whole minute (no seconds)' });
  }
  const allow = canonicalLists(input.allow, ALLOW_LISTS, 'allow', problems, (list, value) => (list === 'assets' ? value.toLowerCase() : canonicalPayee(value)));
  if (problems.length > 0) {
    throw new ApiError('validation_failed', `Request body is invalid: ${problems[0]!.field} ${problems[0]!.message}`, problems);
  }
  return { limits, match, notifyAt, startsAt, allow };
}
