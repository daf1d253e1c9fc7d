import crypto from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import net from 'node:net';
import type { WebhookConfig } from '../config.js';
import type { SecretBox } from '../stores/secrets.js';
import type { Registry } from '../stores/sqlite.js';
import { isPrivateAddress, systemResolver, urlProblem, type Resolver } from './address.js';
import type { WebhookEvent } from './outbox.js';
import { endpointOf, signingSecrets, type WebhookEndpoint } from './repository.js';
import { perform, performNow, postgresOnly, type Database } from '../stores/sql.js';
import { slackMessage } from './slack.js';

export interface SenderOptions {
  /** Base URL of the API, for the alert links in Slack messages. */
  publicUrl: string;
  /** Per attempt, from connecting to the last byte of the answer. */
  timeoutMs?: number;
  /** Requests in flight at once to one endpoint, and in all. */
  perEndpoint?: number;
  total?: number;
  /** How often due deliveries are looked for when nothing wakes the sender. */
  pollMs?: number;
  clock?: () => number;
  resolver?: Resolver;
}

/** Bytes of an answer read (and stored): enough to see an error message, never a large body. */
export const RESPONSE_CAP_BYTES = 1024;

/** A delivery as the sender reads it from the outbox. */
export interface DueRow {
  id: string;
  team_id: string;
  endpoint_id: string;
  event_id: string;
  payload: string;
  attempts: number;
}

/** One attempt as it happened, before anything is decided or written about it. */
export interface Attempt {
  row: Omit<DueRow, 'payload'>;
  statusCode: number | null;
  error: string | null;
  /** The start of the answer, up to RESPONSE_CAP_BYTES. */
  body: string;
  latencyMs: number;
  /** When the attempt started. */
  at: number;
}

/**
 * Where the sender finds deliveries. SQLite (one instance): read on the sender's own read-only
 * connection; what is in flight is known to this process alone (Sender.inFlight). PostgreSQL
 * (several instances): each delivery taken is leased to this instance (`leased_until`) in the same
 * statement that finds it (`FOR UPDATE SKIP LOCKED`), so no other instance attempts it meanwhile;
 * writing the outcome ends the lease. An instance that dies mid-attempt leaves its lease to run
 * out, and another sends the delivery again, with the same event id (`webhook-id`).
 */
export interface Outbox {
  /** Due deliveries, oldest due first, at most `limit`. */
  due(now: number, limit: number): Promise<DueRow[]>;
  /** One delivery to send now (test, retry): 'busy' while another instance has it leased. */
  delivery(id: string, now: number): Promise<DueRow | 'busy' | undefined>;
  /** Gives back leases of deliveries taken and then not sent (this endpoint was at its limit). */
  release(ids: readonly string[], now: number): Promise<void>;
  endpoint(teamId: string, endpointId: string): Promise<WebhookEndpoint | undefined>;
}

export interface SenderLog {
  error(obj: Record<string, unknown>, msg: string): void;
}

/**
 * The half of webhook delivery that talks to the network: finds due deliveries in the outbox, signs
 * them and POSTs them (at most a few at once per endpoint, each with a timeout, no redirects,
 * answers read up to a cap), and reports each attempt. It only reads the registry: the dispatcher
 * writes the outcomes, on the connection that writes everything else, and calls recorded() once
 * they are committed. Until then the delivery stays in flight here, so a look at the outbox that
 * still sees it pending never sends it a second time.
 *
 * It runs in a worker thread of its own (sender-worker.ts), so signing, HTTP and the outbox queries
 * of an alert storm never take turns of the event loop that answers ingest.
 */
export class Sender {
  /** Being sent, or sent and not yet recorded. */
  private readonly inFlight = new Set<string>();
  private readonly perEndpointInFlight = new Map<string, number>();
  private sending = 0;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private readonly pending = new Set<Promise<void>>();
  private readonly timeoutMs: number;
  private readonly perEndpoint: number;
  private readonly total: number;
  private readonly pollMs: number;
  private readonly clock: () => number;
  private readonly resolver: Resolver;
  private readonly agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };
  private ticking = false;

  constructor(
    private readonly outbox: Outbox,
    /** Opens the endpoints' URLs and secrets, sealed at rest. */
    private readonly box: SecretBox,
    private readonly config: WebhookConfig,
    private readonly log: SenderLog,
    private readonly options: SenderOptions,
    /** Called with each attempt as it ends. */
    private readonly report: (attempt: Attempt) => void,
  ) {
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.perEndpoint = options.perEndpoint ?? 4;
    this.total = options.total ?? 32;
    this.pollMs = options.pollMs ?? 1_000;
    this.clock = options.clock ?? Date.now;
    this.resolver = options.resolver ?? systemResolver;
  }

  start(): void {
    this.running = true;
    this.schedule(0);
  }

  /** Stops looking for deliveries and waits (up to `waitMs`) for the attempts being sent; they are reported. */
  async close(waitMs = 5_000): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    await Promise.race([Promise.allSettled([...this.pending]), new Promise((r) => setTimeout(r, waitMs).unref())]);
    this.agents.http.destroy();
    this.agents.https.destroy();
  }

  /** Looks for due deliveries now (new ones were queued, or a slot came free). */
  wake(): void {
    if (this.running) this.schedule(0);
  }

  /** The attempts' outcomes are committed: those deliveries may be looked at again. */
  recorded(ids: readonly string[]): void {
    for (const id of ids) this.inFlight.delete(id);
    this.wake();
  }

  /**
   * Sends one delivery now, whatever its schedule (POST /webhooks/:id/test, and .../retry):
   * 'unknown' when there is no such delivery, 'busy' when another instance is sending it. A
   * delivery already in flight here is not sent twice: its attempt's report is the answer.
   */
  async attemptNow(deliveryId: string): Promise<true | 'busy' | 'unknown'> {
    if (this.inFlight.has(deliveryId)) return true;
    const row = await this.outbox.delivery(deliveryId, this.clock());
    if (!row) return 'unknown';
    // Another instance is sending it: its outcome is written to the row, where the caller reads it.
    if (row === 'busy') return 'busy';
    if (this.inFlight.has(deliveryId)) return true;
    this.begin(row);
    return true;
  }

  private schedule(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.tick(), ms);
    this.timer.unref();
  }

  private tick(): void {
    if (!this.running || this.ticking) return;
    this.ticking = true;
    void this.takeDue()
      .catch((err: unknown) => this.log.error({ err: String(err) }, 'webhooks: looking for due deliveries failed'))
      .finally(() => {
        this.ticking = false;
        if (this.running) this.schedule(this.pollMs);
      });
  }

  private async takeDue(): Promise<void> {
    const room = this.total - this.sending;
    if (room <= 0) return;
    const now = this.clock();
    // Rows in flight may still read as pending (SQLite): ask for enough to see `room` others.
    const due = await this.outbox.due(now, room + this.inFlight.size);
    const unsent: string[] = [];
    for (const row of due) {
      if (this.inFlight.has(row.id)) continue;
      if (this.sending >= this.total || (this.perEndpointInFlight.get(row.endpoint_id) ?? 0) >= this.perEndpoint) unsent.push(row.id);
      else this.begin(row);
    }
    if (unsent.length > 0) await this.outbox.release(unsent, now);
  }

  private begin(row: DueRow): void {
    this.inFlight.add(row.id);
    this.sending++;
    this.perEndpointInFlight.set(row.endpoint_id, (this.perEndpointInFlight.get(row.endpoint_id) ?? 0) + 1);
    const attempt = this.attempt(row);
    this.pending.add(attempt);
    void attempt.finally(() => this.pending.delete(attempt));
  }

  private async attempt(row: DueRow): Promise<void> {
    const started = this.clock();
    let statusCode: number | null = null;
    let error: string | null = null;
    let body = '';
    try {
      // A secret that does not open (changed in the file) throws: the attempt fails, nothing is sent unsigned.
      const endpoint = await this.outbox.endpoint(row.team_id, row.endpoint_id);
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
    this.sending--;
    const left = (this.perEndpointInFlight.get(row.endpoint_id) ?? 1) - 1;
    if (left > 0) this.perEndpointInFlight.set(row.endpoint_id, left);
    else this.perEndpointInFlight.delete(row.endpoint_id);
    const { payload: _payload, ...identity } = row;
    this.report({ row: identity, statusCode, error, body, latencyMs, at: started });
    // A slot is free: the next due delivery of this endpoint need not wait for the poll.
    this.wake();
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
}

const DUE_COLUMNS = 'id, team_id, endpoint_id, event_id, payload, attempts';

/** The outbox in the SQLite file, read on the sender's own connection (Outbox). */
export function sqliteOutbox(db: Registry, box: SecretBox): Outbox {
  const due = db.prepare(
    `SELECT d.id, d.team_id, d.endpoint_id, d.event_id, d.payload, d.attempts
       FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
      WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND e.active = 1 AND e.disabled_at IS NULL
      ORDER BY d.next_attempt_at LIMIT ?`,
  );
  const delivery = db.prepare(`SELECT ${DUE_COLUMNS} FROM webhook_deliveries WHERE id = ?`);
  return {
    due: async (now, limit) => due.all(now, limit) as DueRow[],
    delivery: async (id) => delivery.get(id) as DueRow | undefined,
    release: async () => {},
    endpoint: async (teamId, endpointId) => performNow(db, endpointOf(box, teamId, endpointId)),
  };
}

/**
 * The outbox in PostgreSQL, shared by every instance (Outbox): deliveries are leased for as long
 * as an attempt may take (its timeout) and then some, for the outcome to be written.
 */
export function sharedOutbox(db: Database, box: SecretBox, timeoutMs: number): Outbox {
  const leaseMs = timeoutMs + 30_000;
  return {
    due: (now, limit) =>
      db.all<DueRow>(
        postgresOnly(`UPDATE webhook_deliveries d SET leased_until = $2
                        FROM (SELECT d2.seq FROM webhook_deliveries d2 JOIN webhook_endpoints e ON e.id = d2.endpoint_id
                               WHERE d2.status = 'pending' AND d2.next_attempt_at <= $1 AND (d2.leased_until IS NULL OR d2.leased_until <= $1)
                                 AND e.active = 1 AND e.disabled_at IS NULL
                               ORDER BY d2.next_attempt_at LIMIT $3 FOR UPDATE OF d2 SKIP LOCKED) due
                       WHERE d.seq = due.seq
                   RETURNING d.id, d.team_id, d.endpoint_id, d.event_id, d.payload, d.attempts`),
        [now, now + leaseMs, limit],
      ),
    delivery: async (id, now) => {
      const leased = await db.get<DueRow>(
        postgresOnly(`UPDATE webhook_deliveries SET leased_until = $3 WHERE id = $1 AND (leased_until IS NULL OR leased_until <= $2) RETURNING ${DUE_COLUMNS}`),
        [id, now, now + leaseMs],
      );
      if (leased) return leased;
      return (await db.get(postgresOnly('SELECT 1 FROM webhook_deliveries WHERE id = $1'), [id])) ? 'busy' : undefined;
    },
    release: async (ids) => {
      await db.run(postgresOnly('UPDATE webhook_deliveries SET leased_until = NULL WHERE id = ANY($1::text[])'), [ids]);
    },
    endpoint: (teamId, endpointId) => perform(db, endpointOf(box, teamId, endpointId)),
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
