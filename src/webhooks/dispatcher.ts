import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { recordOccurrences, type Occurrence } from '../alerts/repository.js';
import type { WebhookConfig } from '../config.js';
import type { SecretBox } from '../stores/secrets.js';
import { get, perform, performNow, run, sqliteDatabase, type Database, type Statement, type Steps } from '../stores/sql.js';
import { unsyncedTransaction, type Registry } from '../stores/sqlite.js';
import { DELIVERIES_QUEUED } from './outbox.js';
import { endpointOf } from './repository.js';
import { shownUrl } from '../domain/shown-url.js';
import { Sender, sharedOutbox, sqliteOutbox, type Attempt, type SenderOptions } from './sender.js';

export { RESPONSE_CAP_BYTES, signatures } from './sender.js';

export interface DispatcherOptions extends SenderOptions {
  /** An endpoint that has failed every attempt for this long is disabled. */
  disableAfterMs?: number;
  /**
   * Where the sender runs: a worker thread (the service on SQLite), or this thread (PostgreSQL,
   * whose queries wait on the network, not the thread; and tests that inject a resolver or a
   * clock, which cannot cross into a worker).
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
  /** Another instance is attempting it (PostgreSQL). */
  | { kind: 'busy'; deliveryId: string }
  | { kind: 'log'; level: 'error'; obj: Record<string, unknown>; msg: string }
  | { kind: 'closed' };

/** How often an attempt of another instance is looked for, and for how long past its timeout. */
const ELSEWHERE_POLL_MS = 100;

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
 * the store, so a restart (or a kill -9) goes on where it was: an attempt in flight at a crash is sent
 * again, and the event id lets the receiver drop the copy. With PostgreSQL every instance runs one,
 * and a delivery is attempted by one instance at a time (leases: sharedOutbox in ./sender.ts).
 */
export class Dispatcher {
  private link: SenderLink | undefined;
  private running = false;
  private wakePosted = false;
  /** Ends the wake-ups by queued deliveries (while started). */
  private stopListening: (() => void) | undefined;
  private readonly disableAfterMs: number;
  private readonly clock: () => number;
  /** Attempts reported and not yet written; written at the next turn of the event loop. */
  private readonly unwritten: Attempt[] = [];
  private flushScheduled = false;
  /** Callers of attemptNow, by delivery: answered when that delivery's next outcome is written. */
  private readonly waiting = new Map<string, ((outcome: AttemptOutcome | undefined) => void)[]>();
  /** The SQLite connection (one instance), or undefined with PostgreSQL. */
  private readonly registry: Registry | undefined;
  private readonly db: Database;

  constructor(
    /** The registry's connection, or its Database (SQLite or PostgreSQL). */
    db: Registry | Database,
    /** Opens the endpoints' sealed URLs and secrets; its current key goes to the sender's thread. */
    private readonly box: SecretBox,
    private readonly config: WebhookConfig,
    private readonly logger: Logger,
    private readonly options: DispatcherOptions,
  ) {
    this.disableAfterMs = options.disableAfterMs ?? 24 * 3_600_000;
    this.clock = options.clock ?? Date.now;
    this.db = 'prepare' in db ? sqliteDatabase(db) : db;
    this.registry = this.db.dialect === 'sqlite' ? (this.db.origin as Registry) : undefined;
  }

  /** Starts sending due deliveries, and sending new ones as they are queued. */
  start(): void {
    this.running = true;
    this.connect().post({ kind: 'start' });
    this.stopListening = this.db.signals.on(DELIVERIES_QUEUED, () => this.wake());
  }

  /** The sender, started or not: one that is not only sends what attemptNow asks for. */
  private connect(): SenderLink {
    this.link ??= this.options.thread === 'main' || !this.registry ? this.inThisThread() : this.inWorker(this.registry);
    return this.link;
  }

  /** Stops taking deliveries, waits (up to `waitMs`) for the attempts in flight and writes their outcomes. */
  async close(waitMs = 5_000): Promise<void> {
    this.stopListening?.();
    this.stopListening = undefined;
    this.running = false;
    const link = this.link;
    this.link = undefined;
    if (!link) return;
    link.post({ kind: 'close', waitMs });
    await Promise.race([link.closed, new Promise((r) => setTimeout(r, waitMs + 1_000).unref())]);
    await this.flush();
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
      case 'busy':
        void this.outcomeElsewhere(message.deliveryId).then((outcome) => this.answer(message.deliveryId, outcome));
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

  /**
   * The outcome of an attempt another instance is making: read from the row once its lease ends
   * (the outcome written, or the lease run out), undefined if the delivery went meanwhile.
   */
  private async outcomeElsewhere(deliveryId: string): Promise<AttemptOutcome | undefined> {
    const until = this.clock() + (this.options.timeoutMs ?? 10_000) + 35_000;
    for (;;) {
      const row = await this.db
        .get<{ status: string; leased_until: number | null; last_status_code: number | null; last_latency_ms: number | null; last_error: string | null; next_attempt_at: number | null }>(
          'SELECT status, leased_until, last_status_code, last_latency_ms, last_error, next_attempt_at FROM webhook_deliveries WHERE id = ?',
          [deliveryId],
        )
        .catch(() => undefined);
      if (!row) return undefined;
      if (row.leased_until === null || row.leased_until <= this.clock() || this.clock() > until) {
        return {
          deliveryId,
          delivered: row.status === 'delivered',
          statusCode: row.last_status_code,
          latencyMs: row.last_latency_ms ?? 0,
          error: row.last_error,
          nextAttemptAt: row.status === 'pending' ? row.next_attempt_at : null,
        };
      }
      await new Promise((resolve) => setTimeout(resolve, ELSEWHERE_POLL_MS));
    }
  }

  /** Writes the outcomes reported since the last flush, then releases their deliveries to the sender. */
  private async flush(): Promise<void> {
    if (this.unwritten.length === 0) return;
    const attempts = this.unwritten.splice(0);
    this.flushScheduled = false;
    let outcomes: (AttemptOutcome | undefined)[];
    const now = this.clock();
    try {
      const registry = this.registry;
      // Without a disk flush on SQLite: a lost outcome (power loss) only means the delivery is
      // sent again, which receivers handle anyway.
      outcomes = registry
        ? unsyncedTransaction(registry, () => attempts.map((a) => performNow(registry, this.record(a, now))))
        : await this.db.transaction((sql) => perform(sql, this.recordAll(attempts, now)));
    } catch (err) {
      // Not written: the deliveries are still pending in the outbox and will be sent again.
      this.logger.error({ err, attempts: attempts.length }, 'webhooks: writing attempt outcomes failed');
      outcomes = [];
    }
    this.link?.post({ kind: 'recorded', ids: attempts.map((a) => a.row.id) });
    for (const outcome of outcomes) {
      if (!outcome) continue;
      if (!outcome.delivered) this.logger.warn({ ...outcome }, 'webhooks: attempt failed');
      this.answer(outcome.deliveryId, outcome);
    }
    for (const a of attempts) this.answer(a.row.id, undefined);
  }

  private *recordAll(attempts: readonly Attempt[], now: number): Steps<(AttemptOutcome | undefined)[]> {
    const outcomes: (AttemptOutcome | undefined)[] = [];
    for (const a of attempts) outcomes.push(yield* this.record(a, now));
    return outcomes;
  }

  /**
   * Writes an attempt's outcome; disables an endpoint failing for disableAfterMs, with a system
   * alert. Undefined when the delivery was attempted again meanwhile (an instance whose lease ran
   * out): the later attempt's outcome stands.
   */
  private *record(a: Attempt, now: number): Steps<AttemptOutcome | undefined> {
    const { row } = a;
    const delivered = a.error === null;
    const attempts = row.attempts + 1;
    const delay = this.config.retrySchedule[attempts - 1];
    const nextAttemptAt = delivered || delay === undefined ? null : a.at + a.latencyMs + Math.round(delay * (0.9 + 0.2 * Math.random()));
    const status = delivered ? 'delivered' : nextAttemptAt === null ? 'failed' : 'pending';
    const written = yield* run(OUTCOME_SQL.record, [status, attempts, nextAttemptAt, a.at, a.statusCode, a.latencyMs, a.error, a.body || null, delivered ? now : null, row.id, row.attempts]);
    if (written === 0) return undefined;
    if (delivered) {
      yield* run(OUTCOME_SQL.succeeded, [row.endpoint_id]);
    } else {
      yield* run(OUTCOME_SQL.failed, [a.at, row.endpoint_id]);
      const endpoint = yield* get<{ failing_since: number; disabled_at: number | null }>(OUTCOME_SQL.failing, [row.endpoint_id]);
      if (endpoint && endpoint.disabled_at === null && now - endpoint.failing_since >= this.disableAfterMs) yield* this.disable(row, now);
    }
    return { deliveryId: row.id, delivered, statusCode: a.statusCode, latencyMs: a.latencyMs, error: a.error, nextAttemptAt };
  }

  private *disable(row: Attempt['row'], now: number): Steps<void> {
    // The alert is stored and sent on: it names the URL as the API shows it, masked.
    let url: string;
    try {
      const endpoint = yield* endpointOf(this.box, row.team_id, row.endpoint_id);
      if (!endpoint) return;
      url = shownUrl(endpoint.url, endpoint.format);
    } catch {
      // A stored URL that does not open must not stop the outcomes from being written.
      url = 'its stored URL does not decrypt';
    }
    const hours = Math.round(this.disableAfterMs / 3_600_000);
    const reason = `every attempt failed for ${hours} hours`;
    yield* run('UPDATE webhook_endpoints SET disabled_at = ?, disabled_reason = ?, updated_at = ? WHERE id = ?', [now, reason, now, row.endpoint_id]);
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
    yield* recordOccurrences([disabled], now);
    this.logger.warn({ endpointId: row.endpoint_id, teamId: row.team_id }, 'webhooks: endpoint disabled after failing for 24 hours');
  }

  /** The sender on this thread, on this connection. */
  private inThisThread(): SenderLink {
    const outbox = this.registry ? sqliteOutbox(this.registry, this.box) : sharedOutbox(this.db, this.box, this.options.timeoutMs ?? 10_000);
    const sender = new Sender(outbox, this.box, this.config, this.logger, this.options, (attempt) => this.received({ kind: 'attempted', attempt }));
    let closing: Promise<void> = new Promise(() => {});
    const link: SenderLink = {
      post: (message) => {
        if (message.kind === 'start') sender.start();
        else if (message.kind === 'wake') sender.wake();
        else if (message.kind === 'recorded') sender.recorded(message.ids);
        else if (message.kind === 'attempt') {
          const deliveryId = message.deliveryId;
          void sender.attemptNow(deliveryId).then(
            (taken) => taken === true || this.received({ kind: taken, deliveryId }),
            () => this.received({ kind: 'unknown', deliveryId }),
          );
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
  private inWorker(registry: Registry): SenderLink {
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
        workerData: { registryPath: registry.name, config: this.config, options, secretsKey: this.box.currentKey() },
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

/**
 * An outcome is written only over the attempt it follows (`attempts` unchanged): of two attempts
 * of one delivery (a lease that ran out mid-attempt), the second is not counted twice.
 */
const OUTCOME_SQL: Record<'record' | 'succeeded' | 'failed' | 'failing', Statement> = {
  record: {
    sqlite: `UPDATE webhook_deliveries SET status = ?, attempts = ?, next_attempt_at = ?, last_attempt_at = ?, last_status_code = ?,
                    last_latency_ms = ?, last_error = ?, response_body = ?, delivered_at = ?
              WHERE id = ? AND attempts = ?`,
    postgres: `UPDATE webhook_deliveries SET status = $1, attempts = $2, next_attempt_at = $3, last_attempt_at = $4, last_status_code = $5,
                      last_latency_ms = $6, last_error = $7, response_body = $8, delivered_at = $9, leased_until = NULL
                WHERE id = $10 AND attempts = $11`,
  },
  // Only when it changes: a healthy endpoint's row is not rewritten on every delivery.
  succeeded: 'UPDATE webhook_endpoints SET failing_since = NULL WHERE id = ? AND failing_since IS NOT NULL',
  failed: 'UPDATE webhook_endpoints SET failing_since = coalesce(failing_since, ?) WHERE id = ?',
  failing: 'SELECT failing_since, disabled_at FROM webhook_endpoints WHERE id = ?',
};
