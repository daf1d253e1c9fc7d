/**
 * JSON-RPC to one network's node: calls go in batches, a bounded number in flight, each with a
 * timeout; a node that fails, times out or rate-limits (429) is tried again after a growing pause,
 * and after the last try the caller is told it is unavailable (and decides nothing from it).
 */
export interface RpcCall {
  method: string;
  params: unknown[];
}

/** What the node answered a call of a batch with an error (the others' results stand). */
export class RpcCallError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'RpcCallError';
  }
}

/** The node could not be reached (or kept failing) after every try: nothing may be concluded. */
export class RpcUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RpcUnavailable';
  }
}

export interface RpcObserver {
  /** One HTTP request of `calls` calls went to the node. */
  requested(network: string, calls: number): void;
  /** A request failed: timeout, http (a 5xx or other status), rate_limited (429), network, invalid (not JSON-RPC). */
  failed(network: string, kind: string): void;
}

export interface RpcOptions {
  timeoutMs: number;
  concurrency: number;
  batchSize: number;
  /** Pauses before each further try (ms); their count is the number of tries after the first. */
  backoffMs?: readonly number[];
  observer?: RpcObserver;
  fetch?: typeof fetch;
}

const DEFAULT_BACKOFF_MS = [250, 1_000, 4_000];
/** A Retry-After longer than this is cut to it: the cycle tries again anyway. */
const MAX_RETRY_AFTER_MS = 30_000;

class Failure extends Error {
  constructor(
    readonly kind: string,
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

export class JsonRpc {
  private inFlight = 0;
  private readonly queue: (() => void)[] = [];
  private nextId = 1;
  private readonly fetch: typeof fetch;
  private readonly backoff: readonly number[];

  constructor(
    readonly network: string,
    private readonly url: string,
    private readonly options: RpcOptions,
  ) {
    this.fetch = options.fetch ?? globalThis.fetch;
    this.backoff = options.backoffMs ?? DEFAULT_BACKOFF_MS;
  }

  /** One call; an error answer throws RpcCallError. */
  async call<T>(method: string, params: unknown[]): Promise<T> {
    const [result] = await this.batch<T>([{ method, params }]);
    if (result instanceof RpcCallError) throw result;
    return result as T;
  }

  /** Results in the calls' order: each a value, or the RpcCallError the node answered it with. */
  async batch<T>(calls: readonly RpcCall[]): Promise<(T | RpcCallError)[]> {
    const chunks: RpcCall[][] = [];
    for (let i = 0; i < calls.length; i += this.options.batchSize) chunks.push(calls.slice(i, i + this.options.batchSize));
    const answers = await Promise.all(chunks.map((chunk) => this.limited(() => this.send<T>(chunk))));
    return answers.flat();
  }

  private async limited<R>(fn: () => Promise<R>): Promise<R> {
    // A waiter is handed the slot of the request that ends (inFlight stays as it is): a caller
    // arriving meanwhile cannot take it too.
    if (this.inFlight >= this.options.concurrency) await new Promise<void>((resolve) => this.queue.push(resolve));
    else this.inFlight++;
    try {
      return await fn();
    } finally {
      const next = this.queue.shift();
      if (next) next();
      else this.inFlight--;
    }
  }

  /** One HTTP request of a batch, tried again on failures that may pass. */
  private async send<T>(calls: readonly RpcCall[]): Promise<(T | RpcCallError)[]> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.once<T>(calls);
      } catch (err) {
        const failure = err instanceof Failure ? err : new Failure('network', err instanceof Error ? err.message : String(err));
        this.options.observer?.failed(this.network, failure.kind);
        if (attempt >= this.backoff.length) throw new RpcUnavailable(`${this.network}: ${failure.message} (after ${attempt + 1} tries)`);
        await new Promise((resolve) => setTimeout(resolve, Math.max(this.backoff[attempt]!, failure.retryAfterMs ?? 0)));
      }
    }
  }

  private async once<T>(calls: readonly RpcCall[]): Promise<(T | RpcCallError)[]> {
    const first = this.nextId;
    this.nextId += calls.length;
    const body = calls.map((c, i) => ({ jsonrpc: '2.0', id: first + i, method: c.method, params: c.params }));
    this.options.observer?.requested(this.network, calls.length);
    let response: Response;
    try {
      response = await this.fetch(this.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
    } catch (err) {
      const timedOut = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError');
      throw new Failure(timedOut ? 'timeout' : 'network', timedOut ? `no answer within ${this.options.timeoutMs} ms` : `cannot reach the node (${(err as Error).message})`);
    }
    if (response.status === 429) {
      await response.body?.cancel();
      // Seconds, or an HTTP date (RFC 9110 10.2.3).
      const header = response.headers.get('retry-after')?.trim() ?? '';
      const afterMs = /^\d+$/.test(header) ? Number(header) * 1000 : Date.parse(header) - Date.now();
      throw new Failure('rate_limited', 'the node rate-limits us (429)', Number.isFinite(afterMs) && afterMs > 0 ? Math.min(afterMs, MAX_RETRY_AFTER_MS) : undefined);
    }
    if (!response.ok) {
      await response.body?.cancel();
      throw new Failure('http', `the node answered HTTP ${response.status}`);
    }
    let answer: unknown;
    try {
      answer = await response.json();
    } catch (err) {
      // The timeout covers the body too: a node that stops halfway timed out, it did not answer badly.
      if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) throw new Failure('timeout', `no answer within ${this.options.timeoutMs} ms`);
      throw new Failure('invalid', 'the node answered something other than JSON');
    }
    if (!Array.isArray(answer)) {
      const error = (answer as { error?: { message?: string } } | null)?.error;
      throw new Failure('invalid', `the node refused the batch${error?.message ? `: ${error.message}` : ''}`);
    }
    const byId = new Map<number, { result?: unknown; error?: { code?: number; message?: string } }>();
    for (const item of answer as { id: number; result?: unknown; error?: { code?: number; message?: string } }[]) byId.set(Number(item?.id), item);
    return calls.map((c, i) => {
      const item = byId.get(first + i);
      if (!item) throw new Failure('invalid', `the node's batch answer lacks the call of ${c.method}`);
      if (item.error) {
        // A node over its limits says so per call on some providers: tried again as a 429 is.
        if (item.error.code === -32005 || item.error.code === 429) throw new Failure('rate_limited', `the node rate-limits us (${item.error.message ?? item.error.code})`);
        return new RpcCallError(item.error.code ?? 0, item.error.message ?? 'error');
      }
      return item.result as T;
    });
  }
}
