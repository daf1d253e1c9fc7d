import { TokenBucket } from './token-bucket.js';

/** The two buckets of a key's holder: records sent to the ingest routes, and every other request. */
export type LimitKind = 'records' | 'requests';

/** A key's own rates; null takes the service default (RATE_LIMIT_*_PER_SECOND). */
export interface KeyRates {
  requestsPerSecond: number | null;
  recordsPerSecond: number | null;
}

/** Service defaults; 0 turns a kind of limit off for keys without their own rate. */
export interface RateDefaults {
  requestsPerSecond: number;
  recordsPerSecond: number;
}

/** What a limited request is told: the policy, what is left, and when to come back if refused. */
export interface LimitOutcome {
  kind: LimitKind;
  allowed: boolean;
  /** Tokens a second, and the burst (one second's worth). */
  rate: number;
  remaining: number;
  /** Seconds until the bucket is full again. */
  resetSeconds: number;
  /** When refused: seconds until a request of the same cost would be admitted (at least 1). */
  retryAfterSeconds: number;
}

/** Past this many buckets, full ones (which behave exactly as new ones) are forgotten. */
const SWEEP_AT = 10_000;

/**
 * Token buckets per key holder (`KeyOwner.holderId`: a key and the keys its rotations issued share
 * one), in memory: a restart refills them, which only ever errs towards serving. One process serves
 * the API (the embedded engine allows one), so one map is the whole truth: main.ts builds one
 * limiter for the routes and the BI interface alike.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, TokenBucket>();

  constructor(
    private readonly defaults: RateDefaults,
    private readonly clock: () => number = Date.now,
  ) {}

  /** The rate a key has for a kind of request; 0: not limited. */
  rateOf(kind: LimitKind, rates: KeyRates): number {
    return kind === 'records' ? (rates.recordsPerSecond ?? this.defaults.recordsPerSecond) : (rates.requestsPerSecond ?? this.defaults.requestsPerSecond);
  }

  /** Takes `cost` from the holder's bucket of this kind; undefined when the key is not limited for it. */
  take(holderId: string, kind: LimitKind, rates: KeyRates, cost: number): LimitOutcome | undefined {
    const bucket = this.bucket(holderId, kind, rates);
    if (!bucket) return undefined;
    const now = this.clock();
    const allowed = bucket.take(cost, now);
    return this.outcome(kind, bucket, allowed, allowed ? 0 : Math.max(1, bucket.secondsUntil(cost, now)), now);
  }

  /**
   * Gives back what take() took for a request the service then refused itself (a 503: nothing was
   * done, the client will retry): a refused request costs nothing. Only ever pass what take()
   * admitted for that request. Returns the bucket's state after, for the answer's headers.
   */
  refund(holderId: string, kind: LimitKind, rates: KeyRates, cost: number): LimitOutcome | undefined {
    const bucket = this.bucket(holderId, kind, rates);
    if (!bucket) return undefined;
    const now = this.clock();
    bucket.give(cost, now);
    return this.outcome(kind, bucket, true, 0, now);
  }

  /**
   * Refuses early, before a body is read, when the bucket holds not even one token: whatever the
   * request's cost, it would be refused. Takes nothing.
   */
  precheck(holderId: string, kind: LimitKind, rates: KeyRates): LimitOutcome | undefined {
    const bucket = this.bucket(holderId, kind, rates);
    if (!bucket) return undefined;
    const now = this.clock();
    const allowed = bucket.hasAny(now);
    return this.outcome(kind, bucket, allowed, allowed ? 0 : Math.max(1, bucket.secondsUntil(1, now)), now);
  }

  private outcome(kind: LimitKind, bucket: TokenBucket, allowed: boolean, retryAfterSeconds: number, now: number): LimitOutcome {
    return {
      kind,
      allowed,
      rate: bucket.rate,
      remaining: bucket.remaining(now),
      resetSeconds: bucket.secondsUntil(bucket.rate, now),
      retryAfterSeconds,
    };
  }

  private bucket(holderId: string, kind: LimitKind, rates: KeyRates): TokenBucket | undefined {
    const rate = this.rateOf(kind, rates);
    if (rate <= 0) return undefined;
    const id = `${kind} ${holderId}`;
    let bucket = this.buckets.get(id);
    if (!bucket || bucket.rate !== rate) {
      if (this.buckets.size >= SWEEP_AT) this.sweep();
      bucket = new TokenBucket(rate, this.clock());
      this.buckets.set(id, bucket);
    }
    return bucket;
  }

  private sweep(): void {
    const now = this.clock();
    for (const [id, bucket] of this.buckets) if (bucket.isFull(now)) this.buckets.delete(id);
  }
}
