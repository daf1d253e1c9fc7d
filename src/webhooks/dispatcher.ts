import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { recordOccurrences, type Occurrence } from '../alerts/repository.js';
import type { WebhookConfig } from '../config.js';
import type { SecretBox } from '../stores/secrets.js';
import { performNow } from '../stores/sql.js';
import { unsyncedTransaction, type Registry } from '../stores/sqlite.js';
import { onDeliveriesQueued } from './outbox.js';
import { endpointOf, shownUrl } from './repository.js';
import { Sender, type Attempt, type SenderOptions } from './sender.js';

export { RESPONSE_CAP_BYTES, signatures } from './sender.js';

export interface DispatcherOptions extends SenderOptions {
  /** An endpoint that has failed every attempt for this long is disabled. */
  disableAfterMs?: number;
  /**
   * Where the sender runs: a worker thread (the service), or this thread (tests that inject a
   * resolver or a clock, which cannot cross into a worker).
   */
  thread?: 'worker' | 'main';
}

/** What one attempt came to. */
export interface AttemptOutcome {
  deliveryId: string;
  delivered: boolean;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
  /** When the next attempt is due; null when delivered or out of attempts. */
  nextAttemptAt: number | null;
}

/** How long outcomes wait to be written together (a delivery stays in flight meanwhile). */
const OUTCOME_BATCH_MS = 100;

/** Messages to the sender's thread. */
export type ToSender =
  | { kind: 'start' }
  | { kind: 'wake' }
  | { kind: 'recorded'; ids: string[] }
  | { kind: 'attempt'; deliveryId: string }
  | { kind: 'close'; waitMs: number };

/** Messages from the sender's thread. */
export type FromSender =
  | { kind: 'attempted'; attempt: Attempt }
  | { kind: 'unknown'; deliveryId: string }
  | { kind: 'log'; level: 'error'; obj: Record<string, unknown>; msg: string }
  | { kind: 'closed' };

/** The sender, wherever it runs. */
interface SenderLink {
  post(message: ToSender): void;
  /** Resolves once the sender has stopped and reported its last attempts. */
  closed: Promise<void>;
  terminate(): Promise<void>;
}

/**
 * Delivers queued webhook events in the background, never on the ingest path. The Sender (in a
 * worker thread) finds due deliveries and sends them; this side writes what each attempt came to:
 * delivered, or tried again after the next delay of WEBHOOK_RETRY_SCHEDULE (±10% jitter), or
 * failed after the last. Outcomes that arrive together are written in one transaction, on the
 * connection that writes everything else, so the registry keeps a single writer. Everything is in
 * SQLite, so a restart (or a kill -9) goes on where it was: an attempt in flight at a crash is sent
 * again, and the event id lets the receiver drop the copy.
 */
export class Dispatcher {
  private link: SenderLink | undefined;
  private running = false;
  private wakePosted = false;
  private readonly disableAfterMs: number;
  private readonly clock: () => number;
  /** Attempts reported and not yet written; written at the next turn of the event loop. */
  private readonly unwritten: Attempt[] = [];
  private flushScheduled = false;
  /** Callers of attemptNow, by delivery: answered when that delivery's next outcome is written. */
  private readonly waiting = new Map<string, ((outcome: AttemptOutcome | undefined) => void)[]>();
  /** Prepared once: they run for every attempt. */
  private readonly sql: ReturnType<typeof prepareStatements>;

  constructor(
    private readonly db: Registry,
    /** Opens the endpoints' sealed URLs and secrets; its current key goes to the sender's thread. */
    private readonly box: SecretBox,
    private readonly config: WebhookConfig,
    private readonly logger: Logger,
    private readonly options: DispatcherOptions,
  ) {
    this.disableAfterMs = options.disableAfterMs ?? 24 * 3_600_000;
    this.clock = options.clock ?? Date.now;
    this.sql = prepareStatements(db);
  }

  /** Starts sending due deliveries, and sending new ones as they are queued. */
  start(): void {
    this.running = true;
    this.connect().post({ kind: 'start' });
    onDeliveriesQueued(this.db, () => this.wake());
  }

  /** The sender, started or not: one that is not only sends what attemptNow asks for. */
  private connect(): SenderLink {
    this.link ??= this.options.thread === 'main' ? this.inThisThread() : this.inWorker();
    return this.link;
  }

  /** Stops taking deliveries, waits (up to `waitMs`) for the attempts in flight and writes their outcomes. */
  async close(waitMs = 5_000): Promise<void> {
    if (this.running) onDeliveriesQueued(this.db, undefined);
    this.running = false;
    const link = this.link;
    this.link = undefined;
    if (!link) return;
    link.post({ kind: 'close', waitMs });
    await Promise.race([link.closed, new Promise((r) => setTimeout(r, waitMs + 1_000).unref())]);
    this.flush();
    await link.terminate();
    for (const id of [...this.waiting.keys()]) this.answer(id, undefined);
  }

  /** Tells the sender to look for due deliveries (new ones were queued): once per turn of the event loop. */
  wake(): void {
    if (!this.running || this.wakePosted) return;
    this.wakePosted = true;
    setImmediate(() => {
      this.wakePosted = false;
      this.link?.post({ kind: 'wake' });
    });
  }

  /**
   * Sends one delivery now, whatever its schedule (POST /webhooks/:id/test, and .../retry), and
   * answers with the outcome once it is written. A delivery already being sent is not sent again:
   * the answer is that attempt's outcome. Undefined when there is no such delivery.
   */
  attemptNow(deliveryId: string): Promise<AttemptOutcome | undefined> {
    const link = this.connect();
    return new Promise((resolve) => {
      const callers = this.waiting.get(deliveryId) ?? [];
      callers.push(resolve);
      this.waiting.set(deliveryId, callers);
      link.post({ kind: 'attempt', deliveryId });
    });
  }

  private received(message: FromSender): void {
    switch (message.kind) {
      case 'attempted':
        this.unwritten.push(message.attempt);
        if (this.waiting.has(message.attempt.row.id)) {
          // Somebody waits for this one (POST .../test, .../retry): now.
          setImmediate(() => this.flush());
        } else if (!this.flushScheduled) {
          // Otherwise in batches: a storm's outcomes cost a few transactions a second, not hundreds.
          this.flushScheduled = true;
          setTimeout(() => this.flush(), OUTCOME_BATCH_MS).unref();
        }
        break;
      case 'unknown':
        this.answer(message.deliveryId, undefined);
        break;
      case 'log':
        this.logger.error(message.obj, message.msg);
        break;
      case 'closed':
        break;
    }
  }

  private answer(deliveryId: string, outcome: AttemptOutcome | undefined): void {
    const callers = this.waiting.get(deliveryId);
    if (!callers) return;
    this.waiting.delete(deliveryId);
    for (const resolve of callers) resolve(outcome);
  }

  /** Writes the outcomes reported since the last flush, then releases their deliveries to the sender. */
  private flush(): void {
    if (this.unwritten.length === 0) return;
    const attempts = this.unwritten.splice(0);
    this.flushScheduled = false;
    let outcomes: AttemptOutcome[];
    try {
      // Without a disk flush: a lost outcome (power loss) only means the delivery is sent again,
      // which receivers handle anyway.
      outcomes = unsyncedTransaction(this.db, () => attempts.map((a) => this.record(a)));
    } catch (err) {
      // Not written: the deliveries are still pending in the outbox and will be sent again.
      this.logger.error({ err, attempts: attempts.length }, 'webhooks: writing attempt outcomes failed');
      outcomes = [];
    }
    this.link?.post({ kind: 'recorded', ids: attempts.map((a) => a.row.id) });
    for (const outcome of outcomes) {
      if (!outcome.delivered) this.logger.warn({ ...outcome }, 'webhooks: attempt failed');
      this.answer(outcome.deliveryId, outcome);
    }
    for (const a of attempts) this.answer(a.row.id, undefined);
  }

  /** Writes an attempt's outcome; disables an endpoint failing for disableAfterMs, with a system alert. */
  private record(a: Attempt): AttemptOutcome {
    const { row } = a;
    const delivered = a.error === null;
    const attempts = row.attempts + 1;
    const delay = this.config.retrySchedule[attempts - 1];
    const nextAttemptAt = delivered || delay === undefined ? null : a.at + a.latencyMs + Math.round(delay * (0.9 + 0.2 * Math.random()));
    const status = delivered ? 'delivered' : nextAttemptAt === null ? 'failed' : 'pending';
    const now = this.clock();
    this.sql.record.run(status, attempts, nextAttemptAt, a.at, a.statusCode, a.latencyMs, a.error, a.body || null, delivered ? now : null, row.id);
    if (delivered) {
      this.sql.succeeded.run(row.endpoint_id);
    } else {
      this.sql.failed.run(a.at, row.endpoint_id);
      const endpoint = this.sql.failing.get(row.endpoint_id) as { failing_since: number; disabled_at: number | null } | undefined;
      if (endpoint && endpoint.disabled_at === null && now - endpoint.failing_since >= this.disableAfterMs) this.disable(row, now);
    }
    return { deliveryId: row.id, delivered, statusCode: a.statusCode, latencyMs: a.latencyMs, error: a.error, nextAttemptAt };
  }

  private disable(row: Attempt['row'], now: number): void {
    // The alert is stored and sent on: it names the URL as the API shows it (a slack one masked).
    let url: string;
    try {
      const endpoint = performNow(this.db, endpointOf(this.box, row.team_id, row.endpoint_id));
      if (!endpoint) return;
      url = shownUrl(endpoint);
    } catch {
      // A stored URL that does not open must not stop the outcomes from being written.
      url = 'its stored URL does not decrypt';
    }
    const hours = Math.round(this.disableAfterMs / 3_600_000);
    const reason = `every attempt failed for ${hours} hours`;
    this.db.prepare('UPDATE webhook_endpoints SET disabled_at = ?, disabled_reason = ?, updated_at = ? WHERE id = ?').run(now, reason, now, row.endpoint_id);
    const disabled: Occurrence = {
      teamId: row.team_id,
      dedupKey: `webhook_disabled:${row.endpoint_id}`,
      type: 'system',
      kind: 'webhook_disabled',
      severity: 'warning',
      agentId: '',
      policyId: null,
      window: null,
      observed: null,
      limit: null,
      subject: row.endpoint_id,
      details: { endpointId: row.endpoint_id, url, failingForHours: hours },
      message: `Webhook endpoint ${row.endpoint_id} (${url}) was disabled: ${reason}. Fix it, then PATCH it with {"active": true}.`,
      count: 1,
      firstSeen: now,
      lastSeen: now,
      eventIds: [],
    };
    performNow(this.db, recordOccurrences([disabled], now));
    this.logger.warn({ endpointId: row.endpoint_id, teamId: row.team_id }, 'webhooks: endpoint disabled after failing for 24 hours');
  }

  /** The sender on this thread, on this connection. */
  private inThisThread(): SenderLink {
    const sender = new Sender(this.db, this.box, this.config, this.logger, this.options, (attempt) => this.received({ kind: 'attempted', attempt }));
    let closing: Promise<void> = new Promise(() => {});
    const link: SenderLink = {
      post: (message) => {
        if (message.kind === 'start') sender.start();
        else if (message.kind === 'wake') sender.wake();
        else if (message.kind === 'recorded') sender.recorded(message.ids);
        else if (message.kind === 'attempt') {
          if (!sender.attemptNow(message.deliveryId)) this.received({ kind: 'unknown', deliveryId: message.deliveryId });
        } else closing = sender.close(message.waitMs);
      },
      get closed() {
        return closing;
      },
      terminate: async () => {},
    };
    return link;
  }

  /** The sender in a worker thread with a read-only connection of its own; restarted if it dies. */
  private inWorker(): SenderLink {
    const { clock: _clock, resolver: _resolver, disableAfterMs: _disable, thread: _thread, ...options } = this.options;
    let worker!: Worker;
    let closed!: () => void;
    const link: SenderLink = {
      post: (message) => worker.postMessage(message),
      closed: new Promise<void>((resolve) => (closed = resolve)),
      terminate: async () => {
        await worker.terminate();
      },
    };
    const spawn = () => {
      worker = new Worker(new URL('./sender-worker.js', import.meta.url), {
        workerData: { registryPath: this.db.name, config: this.config, options, secretsKey: this.box.currentKey() },
      });
      // The service's own handles (the HTTP server) keep the process alive, not this thread.
      worker.unref();
      worker.on('message', (message: FromSender) => {
        if (message.kind === 'closed') closed();
        this.received(message);
      });
      worker.on('error', (err) => this.logger.error({ err }, 'webhooks: the sender thread failed'));
      worker.on('exit', (code) => {
        if (this.link !== link) return closed();
        // Whatever it had in flight is still pending in the outbox; a new thread sends it.
        this.logger.error({ code }, 'webhooks: the sender thread stopped; starting another');
        for (const id of [...this.waiting.keys()]) this.answer(id, undefined);
        setTimeout(() => {
          if (this.link !== link) return;
          spawn();
          if (this.running) link.post({ kind: 'start' });
        }, 1_000).unref();
      });
    };
    spawn();
    return link;
  }
}

function prepareStatements(db: Registry) {
  return {
    record: db.prepare(
      `UPDATE webhook_deliveries SET status = ?, attempts = ?, next_attempt_at = ?, last_attempt_at = ?, last_status_code = ?,
              last_latency_ms = ?, last_error = ?, response_body = ?, delivered_at = ?
        WHERE id = ?`,
    ),
    // Only when it changes: a healthy endpoint's row is not rewritten on every delivery.
    succeeded: db.prepare('UPDATE webhook_endpoints SET failing_since = NULL WHERE id = ? AND failing_since IS NOT NULL'),
    failed: db.prepare('UPDATE webhook_endpoints SET failing_since = coalesce(failing_since, ?) WHERE id = ?'),
    failing: db.prepare('SELECT failing_since, disabled_at FROM webhook_endpoints WHERE id = ?'),
  };
}
