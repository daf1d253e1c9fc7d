/**
 * A token bucket: `rate` tokens a second, holding at most `rate` (a burst of one second's worth).
 * A request of cost c is admitted when the bucket holds min(c, rate) tokens; it then takes all c,
 * which may leave the bucket in debt. So a batch larger than the burst is still served (once the
 * bucket is full) and the average rate holds: the debt is paid by waiting before the next request.
 */
export class TokenBucket {
  private tokens: number;
  private updatedAt: number;

  constructor(
    readonly rate: number,
    now: number,
  ) {
    this.tokens = rate;
    this.updatedAt = now;
  }

  private refill(now: number): void {
    if (now > this.updatedAt) {
      this.tokens = Math.min(this.rate, this.tokens + ((now - this.updatedAt) / 1000) * this.rate);
      this.updatedAt = now;
    }
  }

  /** Takes `cost` tokens if the bucket allows it now; else takes nothing. */
  take(cost: number, now: number): boolean {
    this.refill(now);
    if (this.tokens < Math.min(cost, this.rate)) return false;
    this.tokens -= cost;
    return true;
  }

  /**
   * Gives back `cost` tokens taken by a request that was then refused for the service's own reason
   * (a 503): as if it had taken nothing, never past the burst.
   */
  give(cost: number, now: number): void {
    this.refill(now);
    this.tokens = Math.min(this.rate, this.tokens + cost);
  }

  /** Whether a request of any cost could be admitted now (the bucket holds at least one token). */
  hasAny(now: number): boolean {
    this.refill(now);
    return this.tokens >= 1;
  }

  /** Whole tokens left now (0 in debt). */
  remaining(now: number): number {
    this.refill(now);
    return Math.max(0, Math.floor(this.tokens));
  }

  /** Seconds until the bucket holds `tokens` (rounded up; 0 when it does now). */
  secondsUntil(tokens: number, now: number): number {
    this.refill(now);
    const missing = Math.min(tokens, this.rate) - this.tokens;
    return missing <= 0 ? 0 : Math.ceil(missing / this.rate);
  }

  /** Whether the bucket is full: it then behaves exactly as a new one, and may be forgotten. */
  isFull(now: number): boolean {
    this.refill(now);
    return this.tokens >= this.rate;
  }
}
