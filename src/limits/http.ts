import type { Request, RequestHandler, Response } from 'express';
import { ApiError } from '../http/errors.js';
import type { Metrics } from '../metrics/metrics.js';
import type { KeyOwner } from '../teams/repository.js';
import type { LimitKind, LimitOutcome, RateLimiter } from './rate-limiter.js';

/** The key-creation field that sets each kind of limit: named in a 429's details. */
const FIELD: Record<LimitKind, string> = { records: 'rate_limit.records_per_second', requests: 'rate_limit.requests_per_second' };

/**
 * RateLimit-Policy and RateLimit as in draft-ietf-httpapi-ratelimit-headers-09: the policy is named
 * after what it counts ("records" on the ingest routes, "requests" elsewhere), q is its quota over
 * a window of w=1 second (the bucket's rate and burst), r what is left, t the seconds until full.
 */
export function rateLimitHeaders(o: LimitOutcome): { 'RateLimit-Policy': string; RateLimit: string } {
  return { 'RateLimit-Policy': `"${o.kind}";q=${o.rate};w=1`, RateLimit: `"${o.kind}";r=${o.remaining};t=${o.resetSeconds}` };
}

function answer(res: Response, outcome: LimitOutcome | undefined, metrics: Metrics): void {
  if (!outcome) return;
  res.set(rateLimitHeaders(outcome));
  if (outcome.allowed) return;
  metrics.rateLimited.inc({ kind: outcome.kind });
  const unit = outcome.kind === 'records' ? 'records' : 'requests';
  throw new ApiError(
    'rate_limited',
    `This API key is over its limit of ${outcome.rate} ${unit} a second; retry after ${outcome.retryAfterSeconds} s`,
    [{ field: FIELD[outcome.kind], message: `is ${outcome.rate}` }],
    { 'Retry-After': String(outcome.retryAfterSeconds) },
  );
}

/**
 * Every authenticated route but ingest (key rotation included: a rotation is a request of the key's
 * holder like any other): one request costs one token of the holder's requests bucket.
 */
export function limitRequests(limiter: RateLimiter, metrics: Metrics): RequestHandler {
  return (_req, res, next) => {
    const owner = res.locals.team as KeyOwner;
    answer(res, limiter.take(owner.holderId, 'requests', owner.rates, 1), metrics);
    next();
  };
}

/** Ingest, before the body is read: an empty records bucket refuses without parsing anything. */
export function precheckRecords(limiter: RateLimiter, metrics: Metrics): RequestHandler {
  return (_req, res, next) => {
    const owner = res.locals.team as KeyOwner;
    answer(res, limiter.precheck(owner.holderId, 'records', owner.rates), metrics);
    next();
  };
}

/** Ingest, once the body is parsed: a batch costs one token per record it carries, valid or not (1 without any). */
export function limitRecords(limiter: RateLimiter, metrics: Metrics, batchField: string): RequestHandler {
  return (req: Request, res, next) => {
    const owner = res.locals.team as KeyOwner;
    const body = req.body as Record<string, unknown> | undefined;
    const records = body && typeof body === 'object' ? body[batchField] : undefined;
    answer(res, limiter.take(owner.holderId, 'records', owner.rates, Array.isArray(records) ? Math.max(1, records.length) : 1), metrics);
    next();
  };
}
