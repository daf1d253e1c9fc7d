import type { RateDefaults } from '../config.js';
import type { KeyRates } from '../domain/keys.js';
import { postgresOnly, type Sql } from '../stores/sql.js';
import { TokenBucket } from './token-bucket.js';

export type { KeyRates, RateDefaults };

/** The two buckets of a key's holder: records sent to the ingest routes, and every other request. */
export type LimitKind = 'records' | 'requests';

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
 * The buckets every instance draws on (PostgreSQL: rate_lease in schema/postgres/008): takes
 * `need` tokens, and up to `extra` more when they are there, or nothing when the bucket cannot
 * admit `need` on top of the `held` tokens the instance already holds toward the same request;
 * answers what it granted and what the bucket holds after.
 */
export interface RateLedger {
  lease(holderId: string, kind: LimitKind, rate: number, need: number, extra: number, held: number, now: number): Promise<{ granted: number; remaining: number }>;
}

/** Tokens an instance leases beyond what a request needs: 50 ms of the rate (at least one). */
const leaseExtra = (rate: number) => Math.max(1, Math.ceil(rate / 20));

/** What one instance holds of a shared bucket: tokens leased and not yet spent. */
interface Allowance {
  rate: number;
  tokens: number;
  /** What the shared bucket held after this instance's last lease. */
  shared: number;
  /** The lease in progress: requests of the holder queue behind it rather than each lease. */
  leasing: Promise<unknown> | undefined;
}

/**
 * Token buckets per key holder (`KeyOwner.holderId`: a key and the keys its rotations issued share
 * one). One instance (SQLite): in memory, the whole truth; a restart refills them, which only ever
 * errs towards serving. main.ts builds one limiter for the routes and the BI interface alike.
 *
 * Several instances (a `ledger`: PostgreSQL): the bucket is shared, and each instance leases tokens
 * from it in batches (what a request needs and 50 ms of the rate more), spending them from memory,
 * so most requests cost no write and what all instances admit together stays within the rate (less
 * the few leased tokens an instance may leave unspent). take() and precheck() then answer with a
 * promise when they must lease; the single instance's answers stay synchronous.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, TokenBucket>();
  private readonly allowances = new Map<string, Allowance>();

  constructor(
    private readonly defaults: RateDefaults,
    private readonly clock: () => number = Date.now,
    private readonly ledger?: RateLedger,
    private readonly logger?: { error(obj: object, msg: string): void },
  ) {}

  /** The rate a key has for a kind of request; 0: not limited. */
  rateOf(kind: LimitKind, rates: KeyRates): number {
    return kind === 'records' ? (rates.recordsPerSecond ?? this.defaults.recordsPerSecond) : (rates.requestsPerSecond ?? this.defaults.requestsPerSecond);
  }

  /** Takes `cost` from the holder's bucket of this kind; undefined when the key is not limited for it. */
  take(holderId: string, kind: LimitKind, rates: KeyRates, cost: number): LimitOutcome | undefined | Promise<LimitOutcome | undefined> {
    if (this.ledger) return this.takeShared(holderId, kind, rates, cost, cost);
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
    if (this.ledger) {
      // Kept by this instance for the holder's next requests: the shared bucket is not written for it.
      const rate = this.rateOf(kind, rates);
      const allowance = rate > 0 ? this.allowance(holderId, kind, rate) : undefined;
      if (!allowance) return undefined;
      allowance.tokens += cost;
      return this.sharedOutcome(kind, allowance, true, 0);
    }
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
  precheck(holderId: string, kind: LimitKind, rates: KeyRates): LimitOutcome | undefined | Promise<LimitOutcome | undefined> {
    // Shared: one token leased now is one the body's take() need not lease.
    if (this.ledger) return this.takeShared(holderId, kind, rates, 0, 1);
    const bucket = this.bucket(holderId, kind, rates);
    if (!bucket) return undefined;
    const now = this.clock();
    const allowed = bucket.hasAny(now);
    return this.outcome(kind, bucket, allowed, allowed ? 0 : Math.max(1, bucket.secondsUntil(1, now)), now);
  }

  /**
   * take() on a shared bucket: spends `cost` of this instance's allowance, leasing more when the
   * allowance holds less than `holding` (cost, or 1 for a precheck, which spends nothing).
   */
  private async takeShared(holderId: string, kind: LimitKind, rates: KeyRates, cost: number, holding: number): Promise<LimitOutcome | undefined> {
    const rate = this.rateOf(kind, rates);
    if (rate <= 0) return undefined;
    const allowance = this.allowance(holderId, kind, rate);
    while (allowance.leasing) await allowance.leasing;
    if (allowance.tokens >= holding) {
      allowance.tokens -= cost;
      return this.sharedOutcome(kind, allowance, true, 0);
    }
    const need = holding - allowance.tokens;
    // What this instance holds counts toward the request, as it would in one bucket: a batch larger
    // than the burst is admitted by a full bucket even after a precheck leased a few of its tokens.
    const leasing = this.ledger!.lease(holderId, kind, rate, need, leaseExtra(rate), Math.max(0, allowance.tokens), this.clock());
    allowance.leasing = leasing.catch(() => {});
    try {
      const { granted, remaining } = await leasing;
      allowance.shared = remaining;
      if (granted <= 0) return this.sharedOutcome(kind, allowance, false, Math.max(1, Math.ceil((Math.min(need, rate) - remaining) / rate)));
      allowance.tokens += granted - cost;
      return this.sharedOutcome(kind, allowance, true, 0);
    } catch (err) {
      // The shared store not answering is not the client's excess: served, and the store's own
      // failure answers the request if it needs the store.
      this.logger?.error({ err }, 'rate limits: leasing tokens failed; this request is not limited');
      return undefined;
    } finally {
      allowance.leasing = undefined;
    }
  }

  private allowance(holderId: string, kind: LimitKind, rate: number): Allowance {
    const id = `${kind} ${holderId}`;
    let allowance = this.allowances.get(id);
    if (!allowance || allowance.rate !== rate) {
      // Unspent leases are few (50 ms of a rate each): forgotten with the map when it grows past its bound.
      if (this.allowances.size >= SWEEP_AT) this.allowances.clear();
      allowance = { rate, tokens: 0, shared: rate, leasing: undefined };
      this.allowances.set(id, allowance);
    }
    return allowance;
  }

  private sharedOutcome(kind: LimitKind, allowance: Allowance, allowed: boolean, retryAfterSeconds: number): LimitOutcome {
    // What the shared bucket held after the last lease (negative: in debt) and this instance still holds.
    const left = allowance.shared + Math.max(0, allowance.tokens);
    return {
      kind,
      allowed,
      rate: allowance.rate,
      remaining: Math.max(0, Math.floor(Math.min(allowance.rate, left))),
      resetSeconds: Math.max(0, Math.ceil((allowance.rate - left) / allowance.rate)),
      retryAfterSeconds,
    };
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

/** The ledger of every instance's buckets in PostgreSQL (schema/postgres/007, 008). */
export function sharedRateLedger(db: Pick<Sql, 'get'>): RateLedger {
  return {
    async lease(holderId, kind, rate, need, extra, held, now) {
      const row = await db.get<{ granted: number; remaining: number }>(postgresOnly('SELECT granted, remaining FROM rate_lease($1, $2, $3, $4, $5, $6, $7)'), [
        holderId,
        kind,
        rate,
        need,
        extra,
        held,
        now,
      ]);
      return { granted: Number(row!.granted), remaining: Number(row!.remaining) };
    },
  };
}
