import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { ApiError } from '../http/errors.js';
import { setHeaders } from '../http/respond.js';
import type { Metrics } from '../metrics/metrics.js';
import type { KeyOwner } from '../domain/keys.js';
import type { KeyRates, LimitKind, LimitOutcome, RateLimiter } from './rate-limiter.js';

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

/** The 429 of a refused outcome (counted), naming the key field that sets the limit. */
export function rateLimited(outcome: LimitOutcome, metrics: Metrics, operator = false): ApiError {
  metrics.rateLimited.inc({ kind: outcome.kind });
  const unit = outcome.kind === 'records' ? 'records' : 'requests';
  const retry = { 'Retry-After': String(outcome.retryAfterSeconds) };
  // The operator key's limit is the service's default (RATE_LIMIT_REQUESTS_PER_SECOND), no key field of its own.
  if (operator) return new ApiError('rate_limited', `The operator key is over its limit of ${outcome.rate} requests a second; retry after ${outcome.retryAfterSeconds} s`, undefined, retry);
  return new ApiError(
    'rate_limited',
    `This API key is over its limit of ${outcome.rate} ${unit} a second; retry after ${outcome.retryAfterSeconds} s`,
    [{ field: FIELD[outcome.kind], message: `is ${outcome.rate}` }],
    retry,
  );
}

function answer(res: Response, outcome: LimitOutcome | undefined, metrics: Metrics, operator = false): void {
  if (!outcome) return;
  setHeaders(res, rateLimitHeaders(outcome));
  if (outcome.allowed) return;
  throw rateLimited(outcome, metrics, operator);
}

/**
 * A request answered 503 costs nothing: the service refused it for its own reason (backlog at its
 * bound, ingest log not writable, event store behind or down, shutting down), did nothing, and the
 * client is told to retry. Without this, clients retrying their 503s during an outage would also
 * run out of tokens and collect 429s. The tokens are taken up front and given back when the answer
 * turns out to be a 503, rather than taken only after success: the batch holds them while it is
 * being committed, so concurrent requests can never overrun the limit. Exactly what this request
 * took is given back, so a 503 answered before any token was taken (a public route, an early
 * refusal) refunds nothing. Given back just before the status line is written, so the 503 carries
 * RateLimit headers that already count the refund.
 */
function refundOn503(res: Response, limiter: RateLimiter, holderId: string, kind: LimitKind, rates: KeyRates, cost: number): void {
  const writeHead = res.writeHead;
  let done = false;
  res.writeHead = function (this: Response, ...args: unknown[]) {
    if (!done) {
      done = true;
      const status = typeof args[0] === 'number' ? args[0] : this.statusCode;
      if (status === 503 && !this.headersSent) {
        const after = limiter.refund(holderId, kind, rates, cost);
        if (after) setHeaders(this, rateLimitHeaders(after));
      }
    }
    return (writeHead as (...a: unknown[]) => Response).apply(this, args);
  } as Response['writeHead'];
}

/** Whose buckets a request draws on: a key's holder, or the operator. */
type RateHolder = Pick<KeyOwner, 'holderId' | 'rates'>;

/** The operator's bucket: the default rate of requests, apart from every team's. */
const OPERATOR: RateHolder = { holderId: 'operator', rates: { requestsPerSecond: null, recordsPerSecond: null } };

/**
 * Takes `cost` tokens, answers 429 when refused, and gives them back if the answer is a 503; then
 * calls `next`. At once with one instance; once the lease is in with a shared bucket.
 */
function take(res: Response, limiter: RateLimiter, metrics: Metrics, kind: LimitKind, cost: number, next: NextFunction, owner: RateHolder = res.locals.team as KeyOwner): void {
  const settle = (outcome: LimitOutcome | undefined) => {
    answer(res, outcome, metrics, owner === OPERATOR);
    if (outcome?.allowed) refundOn503(res, limiter, owner.holderId, kind, owner.rates, cost);
  };
  whenKnown(limiter.take(owner.holderId, kind, owner.rates, cost), settle, next);
}

/** Runs `settle` on an outcome, now or once its promise resolves, then `next` (with what it threw). */
function whenKnown(outcome: LimitOutcome | undefined | Promise<LimitOutcome | undefined>, settle: (o: LimitOutcome | undefined) => void, next: NextFunction): void {
  if (outcome instanceof Promise) {
    outcome.then((o) => {
      try {
        settle(o);
      } catch (err) {
        return next(err);
      }
      next();
    }, next);
    return;
  }
  settle(outcome);
  next();
}

/**
 * Every authenticated route but ingest (key rotation included: a rotation is a request of the key's
 * holder like any other): one request costs one token of the holder's requests bucket, none when
 * it is answered 503.
 */
export function limitRequests(limiter: RateLimiter, metrics: Metrics): RequestHandler {
  return (_req, res, next) => take(res, limiter, metrics, 'requests', 1, next);
}

/** The operator routes: one token of the operator's requests bucket per request. */
export function limitOperatorRequests(limiter: RateLimiter, metrics: Metrics): RequestHandler {
  return (_req, res, next) => take(res, limiter, metrics, 'requests', 1, next, OPERATOR);
}

/** Refuses, before the body is read, when the bucket of this kind is empty: no cost could be admitted. */
function precheck(limiter: RateLimiter, metrics: Metrics, kind: LimitKind): RequestHandler {
  return (_req, res, next) => {
    const owner = res.locals.team as KeyOwner;
    whenKnown(limiter.precheck(owner.holderId, kind, owner.rates), (o) => answer(res, o, metrics), next);
  };
}

/** Ingest, before the body is read: an empty records bucket refuses without parsing anything. */
export const precheckRecords = (limiter: RateLimiter, metrics: Metrics): RequestHandler => precheck(limiter, metrics, 'records');

/** /mcp, before the body is read: its calls are counted once it is parsed, and an empty bucket admits none. */
export const precheckRequests = (limiter: RateLimiter, metrics: Metrics): RequestHandler => precheck(limiter, metrics, 'requests');

/**
 * Ingest, once the body is parsed: a batch costs one token per record it carries, valid or not (1
 * without any); nothing when it is answered 503 (nothing stored: the backlog at its bound, the log
 * not writable).
 */
export function limitRecords(limiter: RateLimiter, metrics: Metrics, batchField: string): RequestHandler {
  return (req: Request, res, next) => {
    const body = req.body as Record<string, unknown> | undefined;
    const records = body && typeof body === 'object' ? body[batchField] : undefined;
    take(res, limiter, metrics, 'records', Array.isArray(records) ? Math.max(1, records.length) : 1, next);
  };
}
