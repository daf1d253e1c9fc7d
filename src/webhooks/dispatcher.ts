import crypto from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import net from 'node:net';
import type { Logger } from 'pino';
import { recordOccurrences } from '../alerts/repository.js';
import type { WebhookConfig } from '../config.js';
import { unsyncedTransaction, type Registry } from '../stores/sqlite.js';
import { isPrivateAddress, systemResolver, urlProblem, type Resolver } from './address.js';
import { onDeliveriesQueued, type WebhookEvent } from './outbox.js';
import { findEndpoint, signingSecrets, type WebhookEndpoint } from './repository.js';
import { slackMessage } from './slack.js';

export interface DispatcherOptions {
  /** Base URL of the API, for the alert links in Slack messages. */
  publicUrl: string;
  /** Per attempt, from connecting to the last byte of the answer. */
  timeoutMs?: number;
  /** Requests in flight at once to one endpoint, and in all. */
  perEndpoint?: number;
  total?: number;
  /** How often due deliveries are looked for when nothing wakes the dispatcher. */
  pollMs?: number;
  /** An endpoint that has failed every attempt for this long is disabled. */
  disableAfterMs?: number;
  clock?: () => number;
  resolver?: Resolver;
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

/** Bytes of an answer read (and stored): enough to see an error message, never a large body. */
export const RESPONSE_CAP_BYTES = 1024;

interface DueRow {
  id: string;
  team_id: string;
  endpoint_id: string;
  event_id: string;
  payload: string;
  attempts: number;
}

/**
 * Sends queued webhook deliveries in the background, never on the ingest path: at most a few
 * requests at once per endpoint, each with a timeout, no redirects, answers read up to a cap. A
 * failed attempt (timeout, network error, non-2xx) is tried again after the next delay of
 * WEBHOOK_RETRY_SCHEDULE, with ±10% jitter; after the last, the delivery is failed. Everything is
 * in SQLite, so a restart (or a kill -9) goes on where it was: an attempt in flight at a crash is
 * sent again, and the event id lets the receiver drop the copy.
 */
export class Dispatcher {
  private readonly inFlight = new Set<string>();
  private readonly perEndpointInFlight = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private ticking = false;
  private again = false;
  private readonly timeoutMs: number;
  private readonly perEndpoint: number;
  private readonly total: number;
  private readonly pollMs: number;
  private readonly disableAfterMs: number;
  private readonly clock: () => number;
  private readonly resolver: Resolver;
  private readonly agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };
  private readonly pending = new Set<Promise<unknown>>();
  /** Prepared once: the dispatcher runs them for every attempt, and preparing costs more than running. */
  private readonly sql: ReturnType<typeof prepareStatements>;

  constructor(
    private readonly db: Registry,
    private readonly config: WebhookConfig,
    private readonly logger: Logger,
    private readonly options: DispatcherOptions,
  ) {
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.perEndpoint = options.perEndpoint ?? 4;
    this.total = options.total ?? 32;
    this.pollMs = options.pollMs ?? 1_000;
    this.disableAfterMs = options.disableAfterMs ?? 24 * 3_600_000;
    this.clock = options.clock ?? Date.now;
    this.resolver = options.resolver ?? systemResolver;
    this.sql = prepareStatements(db);
  }

  start(): void {
    this.running = true;
    onDeliveriesQueued(this.db, () => this.wake());
    this.schedule(0);
  }

  /** Stops taking deliveries and waits (up to `waitMs`) for the attempts in flight. */
  async close(waitMs = 5_000): Promise<void> {
    this.running = false;
    onDeliveriesQueued(this.db, undefined);
    if (this.timer) clearTimeout(this.timer);
    await Promise.race([Promise.allSettled([...this.pending]), new Promise((r) => setTimeout(r, waitMs).unref())]);
    this.agents.http.destroy();
    this.agents.https.destroy();
  }

  /** Looks for due deliveries now (new ones were queued). */
  wake(): void {
    if (this.running) this.schedule(0);
  }

  private schedule(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.tick(), ms);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    if (!this.running) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = true;
    try {
      const room = this.total - this.inFlight.size;
      if (room > 0) {
        const due = this.sql.due.all(this.clock(), room + this.inFlight.size) as DueRow[];
        for (const row of due) {
          if (this.inFlight.size >= this.total) break;
          if (this.inFlight.has(row.id) || (this.perEndpointInFlight.get(row.endpoint_id) ?? 0) >= this.perEndpoint) continue;
          this.track(this.attempt(row));
        }
      }
    } catch (err) {
      this.logger.error({ err }, 'webhooks: looking for due deliveries failed');
    } finally {
      this.ticking = false;
    }
    if (this.again) {
      this.again = false;
      this.schedule(0);
    } else if (this.running) {
      this.schedule(this.pollMs);
    }
  }

  private track<T>(promise: Promise<T>): Promise<T> {
    this.pending.add(promise);
    void promise.finally(() => this.pending.delete(promise));
    return promise;
  }

  /**
   * Sends one delivery now, whatever its schedule (POST /webhooks/:id/test, and .../retry), and
   * answers with the outcome. Undefined when it is already being sent.
   */
  async attemptNow(deliveryId: string): Promise<AttemptOutcome | undefined> {
    const row = this.sql.delivery.get(deliveryId) as DueRow | undefined;
    if (!row || this.inFlight.has(row.id)) return undefined;
    return this.track(this.attempt(row));
  }

  private async attempt(row: DueRow): Promise<AttemptOutcome> {
    this.inFlight.add(row.id);
    this.perEndpointInFlight.set(row.endpoint_id, (this.perEndpointInFlight.get(row.endpoint_id) ?? 0) + 1);
    const started = this.clock();
    let statusCode: number | null = null;
    let error: string | null = null;
    let body = '';
    try {
      const endpoint = findEndpoint(this.db, row.team_id, row.endpoint_id, this.sql.endpoint);
      if (!endpoint) throw new Error('the endpoint was deleted');
      const problem = await urlProblem(endpoint.url, this.config, this.resolver);
      if (problem) throw new Error(`url ${problem}`);
      const request = this.request(endpoint, row);
      const answer = await this.send(endpoint.url, request.headers, request.body);
      statusCode = answer.statusCode;
      body = answer.body;
      if (statusCode < 200 || statusCode > 299) error = `answered ${statusCode}`;
    } catch (err) {
      error = (err as Error).message;
    }
    const latencyMs = Math.max(0, this.clock() - started);
    try {
      return this.record(row, { statusCode, error, body, latencyMs, at: started });
    } finally {
      this.inFlight.delete(row.id);
      const left = (this.perEndpointInFlight.get(row.endpoint_id) ?? 1) - 1;
      if (left > 0) this.perEndpointInFlight.set(row.endpoint_id, left);
      else this.perEndpointInFlight.delete(row.endpoint_id);
      // A slot is free: the next due delivery of this endpoint need not wait for the poll.
      this.wake();
    }
  }

  /** The body and headers of an attempt: signed JSON, or a Slack message. */
  private request(endpoint: WebhookEndpoint, row: DueRow): { headers: Record<string, string>; body: string } {
    if (endpoint.format === 'slack') {
      return { headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(slackMessage(JSON.parse(row.payload) as WebhookEvent, this.options.publicUrl)) };
    }
    const timestamp = String(Math.floor(this.clock() / 1000));
    return {
      headers: {
        'Content-Type': 'application/json',
        'webhook-id': row.event_id,
        'webhook-timestamp': timestamp,
        'webhook-signature': signatures(signingSecrets(endpoint, this.clock()), row.event_id, timestamp, row.payload),
      },
      body: row.payload,
    };
  }

  /**
   * One POST. The connection's address is checked again as it is made (DNS can change between the
   * URL check and the connect); redirects are not followed; at most RESPONSE_CAP_BYTES are read.
   */
  private send(url: string, headers: Record<string, string>, body: string): Promise<{ statusCode: number; body: string }> {
    const target = new URL(url);
    const secure = target.protocol === 'https:';
    const lookup: LookupFunction = (host, options, callback) => {
      const done = (err: Error | null, address?: string) => {
        const family = address ? net.isIP(address) : 0;
        if ((options as { all?: boolean }).all) (callback as unknown as (e: Error | null, a: { address: string; family: number }[]) => void)(err, address ? [{ address, family }] : []);
        else callback(err, address ?? '', family);
      };
      const pick = (addresses: string[]) => {
        const allowed = this.config.allowPrivate ? addresses : addresses.filter((a) => !isPrivateAddress(a));
        if (allowed.length === 0) done(new Error(`${host} resolves to no public address`));
        else done(null, allowed[0]!);
      };
      if (net.isIP(host)) pick([host]);
      else this.resolver(host).then(pick, (err: Error) => done(err));
    };
    return new Promise((resolve, reject) => {
      const request = (secure ? https : http).request(
        target,
        {
          method: 'POST',
          headers: { ...headers, 'Content-Length': Buffer.byteLength(body), 'User-Agent': 'spendscope-webhooks' },
          agent: secure ? this.agents.https : this.agents.http,
          lookup,
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            if (size < RESPONSE_CAP_BYTES) chunks.push(chunk.subarray(0, RESPONSE_CAP_BYTES - size));
            size += chunk.length;
            if (size >= RESPONSE_CAP_BYTES) res.destroy();
          });
          const finish = () => resolve({ statusCode: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
          res.on('end', finish);
          res.on('close', finish);
        },
      );
      const timer = setTimeout(() => request.destroy(new Error(`timed out after ${this.timeoutMs} ms`)), this.timeoutMs);
      request.on('close', () => clearTimeout(timer));
      request.on('error', reject);
      request.end(body);
    });
  }

  /** Writes an attempt's outcome; disables an endpoint failing for disableAfterMs, with a system alert. */
  private record(row: DueRow, a: { statusCode: number | null; error: string | null; body: string; latencyMs: number; at: number }): AttemptOutcome {
    const delivered = a.error === null;
    const attempts = row.attempts + 1;
    const schedule = this.config.retrySchedule;
    const delay = schedule[attempts - 1];
    const nextAttemptAt = delivered || delay === undefined ? null : a.at + a.latencyMs + Math.round(delay * (0.9 + 0.2 * Math.random()));
    const status = delivered ? 'delivered' : nextAttemptAt === null ? 'failed' : 'pending';
    const now = this.clock();
    // Without a disk flush: a lost outcome (power loss) only means the delivery is sent again,
    // which receivers handle anyway; an fsync per attempt would stall the event loop in a storm.
    unsyncedTransaction(this.db, () => {
      this.sql.record.run(status, attempts, nextAttemptAt, a.at, a.statusCode, a.latencyMs, a.error, a.body || null, delivered ? now : null, row.id);
      if (delivered) {
        this.sql.succeeded.run(row.endpoint_id);
        return;
      }
      this.sql.failed.run(a.at, row.endpoint_id);
      const endpoint = this.sql.failing.get(row.endpoint_id) as
        | { failing_since: number; disabled_at: number | null; url: string }
        | undefined;
      if (endpoint && endpoint.disabled_at === null && now - endpoint.failing_since >= this.disableAfterMs) this.disable(row, endpoint.url, now);
    });
    if (!delivered) this.logger.warn({ deliveryId: row.id, endpointId: row.endpoint_id, attempts, error: a.error, nextAttemptAt }, 'webhooks: attempt failed');
    return { deliveryId: row.id, delivered, statusCode: a.statusCode, latencyMs: a.latencyMs, error: a.error, nextAttemptAt };
  }

  private disable(row: DueRow, url: string, now: number): void {
    const hours = Math.round(this.disableAfterMs / 3_600_000);
    const reason = `every attempt failed for ${hours} hours`;
    this.db.prepare('UPDATE webhook_endpoints SET disabled_at = ?, disabled_reason = ?, updated_at = ? WHERE id = ?').run(now, reason, now, row.endpoint_id);
    recordOccurrences(
      this.db,
      [
        {
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
        },
      ],
      now,
    );
    this.logger.warn({ endpointId: row.endpoint_id, teamId: row.team_id }, 'webhooks: endpoint disabled after failing for 24 hours');
  }
}

function prepareStatements(db: Registry) {
  return {
    due: db.prepare(
      `SELECT d.id, d.team_id, d.endpoint_id, d.event_id, d.payload, d.attempts
         FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
        WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND e.active = 1 AND e.disabled_at IS NULL
        ORDER BY d.next_attempt_at LIMIT ?`,
    ),
    delivery: db.prepare('SELECT id, team_id, endpoint_id, event_id, payload, attempts FROM webhook_deliveries WHERE id = ?'),
    endpoint: db.prepare('SELECT * FROM webhook_endpoints WHERE team_id = ? AND id = ?'),
    record: db.prepare(
      `UPDATE webhook_deliveries SET status = ?, attempts = ?, next_attempt_at = ?, last_attempt_at = ?, last_status_code = ?,
              last_latency_ms = ?, last_error = ?, response_body = ?, delivered_at = ?
        WHERE id = ?`,
    ),
    // Only when it changes: a healthy endpoint's row is not rewritten on every delivery.
    succeeded: db.prepare('UPDATE webhook_endpoints SET failing_since = NULL WHERE id = ? AND failing_since IS NOT NULL'),
    failed: db.prepare('UPDATE webhook_endpoints SET failing_since = coalesce(failing_since, ?) WHERE id = ?'),
    failing: db.prepare('SELECT failing_since, disabled_at, url FROM webhook_endpoints WHERE id = ?'),
  };
}

/** `v1,<base64 HMAC-SHA256 of id.timestamp.body>` per secret (its bytes: base64 after whsec_), space-separated. */
export function signatures(secrets: readonly string[], id: string, timestamp: string, body: string): string {
  return secrets
    .map((secret) => {
      const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
      return `v1,${crypto.createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
    })
    .join(' ');
}
