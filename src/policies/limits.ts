import { ApiError, type FieldError } from '../http/errors.js';
import { isTimeZone } from '../http/validation.js';

export type LimitKind = 'per_call' | 'per_hour' | 'daily' | 'weekly' | 'monthly' | 'per_endpoint';

/** A limit as stored and returned; amount is an exact decimal string. */
export interface Limit {
  kind: LimitKind;
  amount: string;
  endpoint?: string;
}

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

/**
 * Checks what the JSON schema cannot: endpoint only and always on per_endpoint, a valid pattern,
 * no limit given twice, a known time zone. Returns limits in stored form; throws a 400 naming fields.
 */
export function checkPolicyFields(input: { limits?: Limit[]; timezone?: string | null }): Limit[] | undefined {
  const problems: FieldError[] = [];
  const seen = new Set<string>();
  const limits = input.limits?.map((limit, i) => {
    const field = `limits[${i}]`;
    let stored: Limit = { kind: limit.kind, amount: limit.amount };
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
  if (problems.length > 0) {
    throw new ApiError('validation_failed', `Request body is invalid: ${problems[0]!.field} ${problems[0]!.message}`, problems);
  }
  return limits;
}
