/**
 * How many calls of one MCP request run at once. A batch carries up to 100 calls; run all at once
 * they weigh on the stores and the event loop as 100 clients would, and other teams' requests wait
 * behind them. Four at once is a client with a few connections: a batch of quick calls still
 * overlaps their waits on the stores, and slow ones (summaries over long ranges, waits for a
 * decision) take four slots of the service, not a hundred.
 */
export const CALLS_AT_ONCE = 4;

/** A request's slots: calls beyond the free ones queue in their order. */
export class CallSlots {
  private free: number;
  private readonly queue: (() => void)[] = [];

  constructor(size = CALLS_AT_ONCE) {
    this.free = size;
  }

  /**
   * Runs `call` in a slot, after a turn of the event loop (other requests' I/O is served between a
   * batch's calls); `queued` says whether it waited for a slot, time in which its key may have been
   * revoked.
   */
  async run<T>(call: (queued: boolean) => Promise<T>): Promise<T> {
    const queued = this.free === 0;
    if (queued) await new Promise<void>((resolve) => this.queue.push(resolve));
    else this.free--;
    try {
      await new Promise((resolve) => setImmediate(resolve));
      return await call(queued);
    } finally {
      // The slot passes straight to the next call in the queue, so none overtakes it.
      const next = this.queue.shift();
      if (next) next();
      else this.free++;
    }
  }
}
