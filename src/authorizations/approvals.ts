/**
 * Asking a person: an authorization that would break a limit (or the allowlist) of an
 * `approve` policy waits for a decision. It is written `pending`, its amount held like an approval's
 * (concurrent requests count it), until a person approves it (then held from the decision for the
 * hold it asked for), denies it, or its wait ends (then declined; the time alone says so, and the
 * sweep here writes it and tells the webhooks). People hear of it by an `approval` alert (webhooks,
 * Slack) and the webhook events `authorization.pending` and `authorization.decided`. An agent waits
 * with GET /authorizations/:id?wait=N: a waiter costs a timer and a map entry, woken by the decision
 * in this process, or, with PostgreSQL, by a NOTIFY from the instance that decided it.
 */
import type { Logger } from 'pino';
import type pg from 'pg';
import type { Occurrence } from '../domain/alerts.js';
import { resolveOpenAlert } from '../alerts/repository.js';
import { dialectOf, perform, postgresOnly, run, signal, type Database, type Steps } from '../stores/sql.js';
import { enqueueEvent } from '../webhooks/outbox.js';
import { authorizationBody, authorizationOf, timedOutReason, type AuthorizationRow } from './repository.js';

/** The PostgreSQL channel on which a decision wakes the waiters of every instance (payload: the authorization id). */
const CHANNEL = 'spendscope_decisions';

/** One approval alert per pending authorization. */
export const approvalKey = (authorizationId: string) => `approval\u0000${authorizationId}`;

/** What the person is asked about: a policy whose limit (or allowlist) the payment would break, in words. */
export interface ApprovalAsk {
  policyId: string;
  policyName: string;
  /** The limit's kind, or not_allowed. */
  kind: string;
  /** The limit's amount or count as text; null for an allowlist. */
  limit: string | null;
  reason: string;
  /** How long the policy lets a person take (ms): the shortest of an authorization's asks applies. */
  timeoutMs: number;
}

/** The `approval` alert of a pending authorization: who asks to pay what to whom, and what it would break. */
export function approvalOccurrence(row: AuthorizationRow, asks: readonly ApprovalAsk[], now: number): Occurrence {
  const first = asks[0]!;
  const asset = row.asset ? ` ${row.asset}` : '';
  const payee = row.payee_address ? ` to ${row.payee_address}` : '';
  return {
    teamId: row.team_id,
    dedupKey: approvalKey(row.id),
    type: 'approval',
    kind: first.kind,
    severity: 'warning',
    agentId: row.agent_id,
    policyId: first.policyId,
    window: null,
    observed: row.amount,
    limit: first.limit,
    subject: row.id,
    details: {
      authorizationId: row.id,
      amount: row.amount,
      asset: row.asset,
      payee: row.payee_address,
      endpoint: row.endpoint,
      pendingUntil: new Date(row.pending_until!).toISOString(),
      policies: asks.map((a) => ({ id: a.policyId, name: a.policyName, kind: a.kind, limit: a.limit })),
      reasons: asks.map((a) => a.reason),
    },
    message:
      `Agent ${row.agent_id} asks to pay ${row.amount}${asset}${payee} (${row.endpoint}) and needs a person's approval: ` +
      `${asks.map((a) => a.reason).join('; ')}. Approve or deny authorization ${row.id} by ${new Date(row.pending_until!).toISOString()}.`,
    eventIds: [],
    count: 1,
    firstSeen: now,
    lastSeen: now,
  };
}

/** Queues `authorization.pending` or `authorization.decided` for the team's endpoints that take it: the authorization as GET returns it. */
export function* enqueueAuthorizationEvent(row: AuthorizationRow, type: 'authorization.pending' | 'authorization.decided', now: number): Steps<void> {
  yield* enqueueEvent(row.team_id, type, function* () {
    return authorizationBody(row, now);
  }, now);
}

/** What a decision on a pending authorization came to: the row after it, and whether this call decided it. */
export interface DecisionOutcome {
  row: AuthorizationRow | undefined;
  decided: boolean;
}

/**
 * A person's decision on a pending authorization, inside the commit that serialises holds (the
 * first decision wins: the update applies only while it is pending and its wait has not ended).
 * Approved: held from now for the hold it asked for. Denied: declined, the reason saying who.
 */
export function* decidePending(teamId: string, id: string, verdict: 'approve' | 'deny', by: string, note: string | null, now: number): Steps<DecisionOutcome> {
  const row = yield* authorizationOf(teamId, id, true);
  if (!row || row.state !== 'pending' || row.expires_at <= now) return { row, decided: false };
  const reasons = JSON.parse(row.reasons) as string[];
  if (verdict === 'approve') {
    reasons.push(`Approved by ${by}${note ? `: ${note}` : ''}`);
    yield* run(
      `UPDATE authorizations SET state = 'held', decision = 'approved', expires_at = ?, decided_at = ?, decided_by = ?, decision_note = ?, reasons = ?
        WHERE team_id = ? AND id = ? AND state = 'pending'`,
      [now + (row.hold_s ?? 300) * 1000, now, by, note, JSON.stringify(reasons), teamId, id],
    );
  } else {
    reasons.push(`Denied by ${by}${note ? `: ${note}` : ''}`);
    yield* run(
      `UPDATE authorizations SET state = 'declined', decision = 'declined', decided_at = ?, decided_by = ?, decision_note = ?, reasons = ?
        WHERE team_id = ? AND id = ? AND state = 'pending'`,
      [now, by, note, JSON.stringify(reasons), teamId, id],
    );
  }
  const after = (yield* authorizationOf(teamId, id))!;
  yield* announceDecision(after, `${verdict === 'approve' ? 'Approved' : 'Denied'} by ${by}${note ? `: ${note}` : ''}`, now);
  return { row: after, decided: true };
}

/** Writes a pending authorization whose wait has ended as declined, and announces it; false when it was decided meanwhile. */
export function* lapsePending(row: AuthorizationRow, now: number): Steps<boolean> {
  const reasons = [...(JSON.parse(row.reasons) as string[]), timedOutReason(row)];
  const changed = yield* run(
    `UPDATE authorizations SET state = 'declined', decision = 'declined', decided_at = ?, reasons = ?
      WHERE team_id = ? AND id = ? AND state = 'pending' AND expires_at <= ?`,
    [row.pending_until ?? row.expires_at, JSON.stringify(reasons), row.team_id, row.id, now],
  );
  if (changed === 0) return false;
  const after = (yield* authorizationOf(row.team_id, row.id))!;
  yield* announceDecision(after, timedOutReason(row), now);
  return true;
}

/** A decision made (or the request withdrawn): the approval alert resolved, the webhook event queued, the waiters woken once it commits. */
export function* announceDecision(row: AuthorizationRow, resolution: string, now: number): Steps<void> {
  yield* resolveOpenAlert(row.team_id, approvalKey(row.id), resolution, now);
  yield* enqueueAuthorizationEvent(row, 'authorization.decided', now);
  // Other instances' waiters: NOTIFY is sent when this transaction commits, and only then.
  if ((yield* dialectOf()) === 'postgres') yield* run(postgresOnly(`SELECT pg_notify('${CHANNEL}', $1)`), [row.id]);
  yield* signal(AUTHORIZATION_DECIDED, row.id);
}

/** Announced on the database's CommitSignals, of the authorization's id, once a decision commits. */
export const AUTHORIZATION_DECIDED = 'authorizations.decided';

/**
 * Agents waiting for decisions in this process, by authorization id, woken by the decisions
 * committed on `db` (and, with PostgreSQL, by other instances' through the approval sweep). A
 * waiter is a promise and a timer: a thousand waiting agents cost no work until something is decided.
 */
export class DecisionWaiters {
  private readonly waiting = new Map<string, Set<() => void>>();

  constructor(db: Pick<Database, 'signals'>) {
    db.signals.on(AUTHORIZATION_DECIDED, (id) => this.wake(id));
  }

  /** Resolves when `id` is decided here (or a NOTIFY says so), or after `ms`, whichever comes first. */
  wait(id: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      let set = this.waiting.get(id);
      if (!set) this.waiting.set(id, (set = new Set()));
      const done = () => {
        clearTimeout(timer);
        const current = this.waiting.get(id);
        current?.delete(done);
        if (current?.size === 0) this.waiting.delete(id);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      set.add(done);
    });
  }

  wake(id: string): void {
    for (const done of [...(this.waiting.get(id) ?? [])]) done();
  }

  /** How many agents wait now (for tests and metrics). */
  get size(): number {
    let n = 0;
    for (const set of this.waiting.values()) n += set.size;
    return n;
  }
}

/**
 * Writes waits that ran out as declined (announcing each), every `intervalMs`; with PostgreSQL,
 * also listens for other instances' decisions to wake this instance's waiters. Every instance
 * sweeps: the update applies once (only while pending), so two instances announce a lapse once.
 */
export function startApprovalSweep(db: Database, logger: Logger, waiters: DecisionWaiters, pool?: pg.Pool, intervalMs = 2_000): { close(): Promise<void> } {
  let running: Promise<void> = Promise.resolve();
  let stopped = false;
  const sweep = () => {
    running = (async () => {
      try {
        const now = Date.now();
        const lapsed = await db.all<AuthorizationRow>(`SELECT * FROM authorizations WHERE state = 'pending' AND expires_at <= ? ORDER BY expires_at LIMIT 500`, [now]);
        for (const row of lapsed) await db.transaction((sql) => perform(sql, lapsePending(row, now)));
      } catch (err) {
        logger.error({ err }, 'writing lapsed approval waits failed; trying again shortly');
      }
    })();
  };
  const timer = setInterval(sweep, intervalMs);
  timer.unref();
  let client: pg.PoolClient | undefined;
  const listen = async (): Promise<void> => {
    while (pool && !stopped) {
      try {
        client = await pool.connect();
        const ended = new Promise<void>((resolve) => client!.once('error', () => resolve()));
        client.on('notification', (message) => {
          if (message.channel === CHANNEL && message.payload) waiters.wake(message.payload);
        });
        await client.query(`LISTEN ${CHANNEL}`);
        await ended;
      } catch (err) {
        if (!stopped) logger.warn({ err }, 'listening for approval decisions failed; trying again');
      } finally {
        client?.removeAllListeners('notification');
        client?.release(true);
        client = undefined;
      }
      if (!stopped) await new Promise((resolve) => setTimeout(resolve, 1_000).unref());
    }
  };
  const listening = listen();
  return {
    async close() {
      stopped = true;
      clearInterval(timer);
      client?.emit('error', new Error('closing'));
      await running;
      await listening;
    },
  };
}
