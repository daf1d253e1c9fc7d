import type { Logger } from 'pino';
import type { AgentActivity } from '../agents/activity.js';
import type { AuthorizationOutcome, AuthorizationRequest } from '../authorizations/decision.js';
import type { AuthorizationRow } from '../authorizations/repository.js';
import { admitsCapture, captureByRecord } from '../authorizations/capture.js';
import type { RateBook } from '../domain/rates.js';
import { valueRow } from './valuation.js';
import { Backpressure, LogUnavailable, ShuttingDown, TotalsUnavailable, Unavailable } from '../domain/errors.js';
import type { Metrics } from '../metrics/metrics.js';
import { savepoint, type Steps } from '../stores/sql.js';
import type { Freshness } from './freshness.js';
import { contentPrint, type GroupLog, type LogChunk } from './log.js';
import type { AckEvaluator, BacklogLimits, CommitOutcome, GroupLimits, RowWarning } from './commit-contracts.js';
import type { CommitStore } from './commit-store.js';
import type { EventRow } from '../domain/record-row.js';
import { claimByTeam, recordAgents } from './claims.js';
import { DecisionFailed } from './commit-contracts.js';

export { DecisionFailed, type AckEvaluator, type BacklogLimits, type CommitOutcome, type GroupLimits, type RowWarning } from './commit-contracts.js';
export { sharedCommits, sqliteCommits, type CommitStore } from './commit-store.js';

/** What a group's transaction produced, for its answers. */
interface GroupResult {
  chunks: LogChunk[];
  outcomes: CommitOutcome[];
  decided: AuthorizationOutcome[];
  operated: OperationOutcome[];
}

interface PendingWrite {
  teamId: string;
  rows: EventRow[];
  /** The capture route's record: stored only if it captures its authorization (see admitsCapture). */
  captureOnly?: boolean;
  /** The team's rates the rows were valued by: a record that takes its authorization's asset is valued by them. */
  book?: RateBook;
  resolve: (outcome: CommitOutcome) => void;
  reject: (err: unknown) => void;
}

/** An authorization waiting for the next group: decided against the totals the group leaves. */
interface PendingDecision {
  request: AuthorizationRequest;
  resolve: (row: AuthorizationRow) => void;
  reject: (err: unknown) => void;
}

/** Work that must be serialised with the records and decisions (a void): run in the transaction, answered once durable. */
interface PendingOperation {
  run: (now: number) => Steps<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

type OperationOutcome = { value: unknown } | { failed: unknown };

/** GroupLimits' defaults; and operations (voids: one statement each, so a few hundred cost little) per group. */
const GROUP_MAX_ROWS = 2_000;
const GROUP_MAX_DECISIONS = 64;
const GROUP_MAX_OPERATIONS = 256;


/** Tries of one group that fail with a retryable error before its requests are answered 503. */
const GROUP_ATTEMPTS = 3;

/**
 * Group commit into the ingest log. Requests queue their validated rows; one commit at a time
 * takes what is queued (up to a bound of records, whole requests) and, in one SQLite transaction synced to disk, claims each (team, id),
 * appends the new rows, evaluates them (alerts) and records agent activity; then it answers every
 * request of the group. Requests that arrive during a commit form the next group, so a commit
 * grows with concurrency while an idle service commits a lone request at once.
 */
export class GroupCommit {
  private queue: PendingWrite[] = [];
  private decisions: PendingDecision[] = [];
  private operations: PendingOperation[] = [];
  private draining: Promise<void> | undefined;
  /** Groups committed and waiting for their disk flush, then answered. */
  private readonly acknowledging = new Set<Promise<void>>();
  private closed = false;
  /** The last failed group (readiness): set in fail(), cleared once a later group is acknowledged. */
  private writeFailure: { at: number; message: string } | undefined;
  private lastSeq = 0;

  constructor(
    private readonly store: CommitStore,
    private readonly log: GroupLog,
    /** The unloaded backlog (the bound), told of each durable group: Freshness, or SharedFreshness. */
    private readonly freshness: Pick<Freshness, 'backlog' | 'committed'>,
    readonly limits: BacklogLimits,
    private readonly logger: Logger,
    private readonly evaluator?: AckEvaluator<unknown>,
    private readonly agents?: AgentActivity,
    private readonly metrics?: Metrics,
    private readonly groupLimits: GroupLimits = {},
  ) {}

  /** When the last group commit failed, and why, if none has been acknowledged since (GET /healthz). */
  get lastWriteFailure(): { at: number; message: string } | undefined {
    return this.writeFailure;
  }

  /** Whether close() was called: new writes are refused (GET /healthz). */
  get isClosed(): boolean {
    return this.closed;
  }

  /** Resolves once the rows are durable in the log (or found to be there already); rejects with a 503 otherwise. */
  write(teamId: string, rows: EventRow[], options: { captureOnly?: boolean; book?: RateBook } = {}): Promise<CommitOutcome> {
    if (this.closed) return Promise.reject(new ShuttingDown());
    if (rows.length === 0) return Promise.resolve({ stored: 0, duplicates: 0, conflicts: [], alertsCreated: 0, warnings: [], refused: 0 });
    const backlog = this.freshness.backlog();
    if (backlog.rows >= this.limits.maxRows || backlog.bytes >= this.limits.maxBytes) {
      return Promise.reject(
        new Backpressure(`The event store is behind by ${backlog.rows} records (${backlog.bytes} bytes), past the backlog bound; nothing was stored, retry later`, 10),
      );
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ teamId, rows, resolve, reject, ...(options.captureOnly ? { captureOnly: true } : {}), ...(options.book ? { book: options.book } : {}) });
      // setImmediate lets requests already parsed in this turn join the group.
      this.draining ??= new Promise<void>((done) => setImmediate(() => void this.drain().finally(done)));
    });
  }

  /**
   * Decides an authorization in the next group commit, after the group's records are evaluated:
   * one agent's decisions and records are serialised against one set of running totals. Resolves
   * once the authorization is durable.
   */
  authorize(request: AuthorizationRequest): Promise<AuthorizationRow> {
    if (this.closed) return Promise.reject(new ShuttingDown());
    if (!this.evaluator) return Promise.reject(new Unavailable('Authorizations need policy evaluation, which is off here'));
    return new Promise((resolve, reject) => {
      this.decisions.push({ request, resolve, reject });
      this.draining ??= new Promise<void>((done) => setImmediate(() => void this.drain().finally(done)));
    });
  }

  /**
   * Runs `run` inside the next group's transaction, after its records and decisions (in a
   * savepoint: a failure fails this call alone), and resolves with its value once it is durable.
   * What it changes in memory must be undone by the evaluator's reset when the transaction rolls back.
   */
  serialized<T>(run: (now: number) => Steps<T>): Promise<T> {
    if (this.closed) return Promise.reject(new ShuttingDown());
    return new Promise<T>((resolve, reject) => {
      this.operations.push({ run, resolve: resolve as (value: unknown) => void, reject });
      this.draining ??= new Promise<void>((done) => setImmediate(() => void this.drain().finally(done)));
    });
  }

  /** Refuses new writes and waits until everything queued is committed. */
  async close(): Promise<void> {
    this.closed = true;
    await this.draining;
    await Promise.all(this.acknowledging);
  }

  /**
   * The requests of the next group, in arrival order: as many as fit in `groupMaxRows` records
   * (at least one). A group holds the event loop while it is claimed, appended and evaluated, so
   * a burst queued at once is committed in several groups with a turn of the loop between them.
   */
  private takeGroup(): PendingWrite[] {
    const max = this.groupLimits.groupMaxRows ?? GROUP_MAX_ROWS;
    let rows = 0;
    let n = 0;
    while (n < this.queue.length) {
      const next = this.queue[n]!.rows.length;
      if (n > 0 && rows + next > max) break;
      rows += next;
      n++;
    }
    return this.queue.splice(0, n);
  }

  /** Whether the queue holds a whole group's worth of records, decisions or operations. */
  private fullGroupQueued(): boolean {
    if (this.decisions.length >= (this.groupLimits.groupMaxDecisions ?? GROUP_MAX_DECISIONS) || this.operations.length >= GROUP_MAX_OPERATIONS) return true;
    const max = this.groupLimits.groupMaxRows ?? GROUP_MAX_ROWS;
    let rows = 0;
    for (const pending of this.queue) if ((rows += pending.rows.length) >= max) return true;
    return false;
  }

  /** The authorizations of the next group, in arrival order, within both bounds (at least one). */
  private takeDecisions(): PendingDecision[] {
    const maxCount = this.groupLimits.groupMaxDecisions ?? GROUP_MAX_DECISIONS;
    const maxChecks = this.groupLimits.groupMaxChecks ?? 20_000;
    let checks = 0;
    let n = 0;
    while (n < this.decisions.length && n < maxCount) {
      const weight = this.evaluator?.weigh?.(this.decisions[n]!.request) ?? 1;
      if (n > 0 && checks + weight > maxChecks) break;
      checks += weight;
      n++;
    }
    return this.decisions.splice(0, n);
  }

  /**
   * Commits group after group, until the queue is empty. A group's transaction is written without
   * fsync, and its answers wait for the WAL flush that follows (walSyncer) outside this loop: the
   * next group is committed while that flush runs, so the disk's flush time neither blocks the
   * event loop nor the next group. Nothing awaited here lies between the last look at the queue
   * and the end of the drain, so a request queued at any moment is always taken by one.
   */
  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0 || this.decisions.length > 0 || this.operations.length > 0) {
        // What is committed while the WAL is being flushed waits for the flush after it anyway:
        // until then, more requests join this group, for one transaction (and its WAL pages) instead
        // of several. A full group is committed at once: with slow flushes the rate stays unbounded.
        const flush = this.store.flushing?.();
        if (flush && !this.fullGroupQueued()) {
          await flush.catch(() => undefined);
          continue;
        }
        const group = this.takeGroup();
        const decisions = this.takeDecisions();
        const operations = this.operations.splice(0, GROUP_MAX_OPERATIONS);
        try {
          const { acknowledged } = await this.commit(group, decisions, operations);
          const settled = acknowledged.catch((err: unknown) => this.fail(group, err, decisions, operations));
          this.acknowledging.add(settled);
          void settled.finally(() => this.acknowledging.delete(settled));
        } catch (err) {
          this.fail(group, err, decisions, operations);
        }
        // Let requests parsed meanwhile join the next group.
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    } finally {
      this.draining = undefined;
    }
  }

  /**
   * Storage order of a row: microseconds since the epoch, always more than the last (the SDK's
   * insertion order; below 2^53 until the year 2255, so a JS number holds it exactly).
   */
  private nextSeq(): number {
    this.lastSeq = Math.max(Date.now() * 1000, this.lastSeq + 1);
    return this.lastSeq;
  }

  /** Evaluates and commits one group; `acknowledged` settles once its answers are sent. */
  private async commit(group: PendingWrite[], decisions: PendingDecision[], operations: PendingOperation[]): Promise<{ acknowledged: Promise<void> }> {
    const started = performance.now();
    const now = Date.now();
    const all = group.flatMap((p) => p.rows);
    // Claiming rewrites some rows (a derived id, a capture's amount): a group tried again starts
    // from these. On SQLite only a group with decisions is ever tried again (see DecisionFailed).
    const originals = this.evaluator?.sharedLedger || decisions.length > 0 ? all.map((row) => ({ ...row })) : undefined;
    // Decisions run without a savepoint each (a savepoint copies every page a decision changes,
    // for a rollback that a decision almost never needs) until one fails: then the group is tried
    // again with each isolated.
    let isolated = false;
    for (let attempt = 1; ; attempt++) {
      let plan: unknown;
      if (this.evaluator) {
        try {
          plan = await this.evaluator.prepare(all, now, decisions.map((d) => d.request));
        } catch (err) {
          if (this.evaluator.sharedLedger) {
            this.fail(group, err, decisions, operations);
            return { acknowledged: Promise.resolve() };
          }
          // The records are still acknowledged; their windowed limits go unchecked (logged).
          this.logger.error({ err, rows: all.length }, 'preparing policy evaluation failed; the records are stored unevaluated');
        }
      }
      const prepared = performance.now();
      const endPos = this.log.endPos;
      try {
        const { result, durable } = await this.store.transact(() => this.body(group, all, plan, now, decisions, operations, isolated));
        return { acknowledged: this.acknowledge(group, result, durable, started, prepared, decisions, operations) };
      } catch (err) {
        this.log.rolledBack(endPos);
        this.evaluator?.reset();
        this.agents?.reset();
        const restore = () =>
          originals?.forEach((row, i) => {
            const tried = all[i]! as unknown as Record<string, unknown>;
            for (const key of Object.keys(tried)) if (!(key in row)) delete tried[key];
            Object.assign(tried, row);
          });
        if (err instanceof DecisionFailed && !isolated) {
          this.logger.warn(
            { err: err.failure, teamIds: [...new Set(decisions.map((d) => d.request.teamId))], decisions: decisions.length, records: all.length },
            'an authorization failed to be decided; committing its group again, each decision in a savepoint',
          );
          isolated = true;
          attempt--;
          restore();
          continue;
        }
        const retryable = this.store.retryable(err);
        if (attempt < GROUP_ATTEMPTS && retryable) {
          this.logger.info({ err, attempt }, 'group commit rolled back; trying it again');
          restore();
          // A moment apart, at random: two groups that met do not meet again in step.
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 20 * attempt));
          continue;
        }
        if (retryable) this.contended(group, err, decisions, operations);
        else this.fail(group, err, decisions, operations);
        return { acknowledged: Promise.resolve() };
      }
    }
  }

  /** The group's transaction: claims and appends the records, evaluates them, decides, runs the operations. */
  private *body(
    group: PendingWrite[],
    all: EventRow[],
    plan: unknown,
    now: number,
    decisions: PendingDecision[],
    operations: PendingOperation[],
    isolated: boolean,
  ): Steps<GroupResult> {
    const { chunks, outcomes } = yield* this.claimAndAppend(group, all, plan, now);
    // Decisions see the totals this group's records leave; a failure here fails the whole
    // group (its holds must never be half written).
    let decided: AuthorizationOutcome[] = [];
    if (decisions.length > 0) {
      if (plan === undefined) throw new Error('no evaluation plan for the authorizations of this group');
      decided = yield* this.evaluator!.decide(plan, now, isolated);
    }
    if (plan !== undefined && this.evaluator?.saveLedger) yield* this.evaluator.saveLedger(plan);
    const operated: OperationOutcome[] = [];
    for (const op of operations) {
      try {
        operated.push({ value: yield* savepoint(op.run(now)) });
      } catch (failed) {
        operated.push({ failed });
      }
    }
    return { chunks, outcomes, decided, operated };
  }

  /** Waits for the WAL flush that makes the group durable, then hands it to the loader and answers. */
  private async acknowledge(
    group: PendingWrite[],
    { chunks, outcomes, decided, operated }: GroupResult,
    durable: Promise<void>,
    started: number,
    prepared: number,
    decisions: PendingDecision[],
    operations: PendingOperation[],
  ): Promise<void> {
    const all = group.reduce((n, p) => n + p.rows.length, 0);
    const committed = performance.now();
    try {
      await durable;
    } catch (err) {
      // Committed but maybe not on disk: not acknowledged. A retry finds the ids claimed and
      // answers them as duplicates, which is right if the disk kept them; the loader copies them.
      this.fail(group, err, decisions, operations);
      this.freshness.committed(chunks);
      return;
    }
    // Only now may the loader copy these records: ClickHouse must never hold what the log could lose.
    this.freshness.committed(chunks);
    this.writeFailure = undefined;
    group.forEach((pending, i) => pending.resolve(outcomes[i]!));
    decisions.forEach((pending, i) => {
      const outcome = decided[i]!;
      if ('row' in outcome) pending.resolve(outcome.row);
      else if ('failed' in outcome) pending.reject(outcome.failed);
      else {
        pending.reject(
          new TotalsUnavailable('The running totals of this agent could not be read (the event store is behind or down); nothing was decided, retry', 2),
        );
      }
    });
    operations.forEach((pending, i) => {
      const outcome = operated[i]!;
      if ('value' in outcome) pending.resolve(outcome.value);
      else pending.reject(outcome.failed);
    });
    this.logger.debug(
      {
        requests: group.length,
        rows: all,
        prepareMs: Math.round(prepared - started),
        commitMs: Math.round(committed - prepared),
        syncMs: Math.round(performance.now() - committed),
      },
      'ingest log committed',
    );
  }

  /**
   * A group that kept meeting other instances' transactions (a deadlock, policies changed under it)
   * past its tries: answered 503, to be sent again. The log is writable, so readiness is unchanged:
   * an instance that is merely busy stays in the load balancer.
   */
  private contended(group: PendingWrite[], err: unknown, decisions: PendingDecision[], operations: PendingOperation[]): void {
    this.logger.warn({ err, rows: group.reduce((n, p) => n + p.rows.length, 0), authorizations: decisions.length }, 'group commit kept meeting other writers; answered 503 to be sent again');
    const busy = new LogUnavailable('The records met concurrent writes of other instances; nothing was stored, retry', 1);
    for (const pending of [...group, ...decisions, ...operations]) pending.reject(busy);
  }

  private fail(group: PendingWrite[], err: unknown, decisions: PendingDecision[] = [], operations: PendingOperation[] = []): void {
    this.writeFailure = { at: Date.now(), message: err instanceof Error ? err.message : String(err) };
    this.metrics?.storeErrors.inc({ store: 'ingest_log' });
    this.logger.error(
      { err, rows: group.reduce((n, p) => n + p.rows.length, 0), authorizations: decisions.length },
      'ingest log write failed; nothing of the group is acknowledged',
    );
    const unavailable = new LogUnavailable('The ingest log could not be written; nothing was stored, retry', 5);
    for (const pending of group) pending.reject(unavailable);
    for (const pending of decisions) pending.reject(unavailable);
    for (const pending of operations) pending.reject(unavailable);
  }

  /** The body of the transaction: claim, append per team, evaluate, record agents. */
  private *claimAndAppend(group: PendingWrite[], all: EventRow[], plan: unknown, now: number): Steps<{ chunks: LogChunk[]; outcomes: CommitOutcome[] }> {
    const fresh: boolean[] = [];
    const rowsByTeam = new Map<string, EventRow[]>();
    const conflicting = new Set<EventRow>();
    const outcomes: CommitOutcome[] = [];
    const claims = yield* claimByTeam(this.log, group.filter((pending) => !pending.captureOnly), now);
    for (const pending of group) {
      // The capture route's record is stored only while its authorization is held (or it is a retry):
      // asked, then claimed, in request order, after an earlier capture of the group.
      let admitted = true;
      if (pending.captureOnly) for (const row of pending.rows) admitted &&= yield* admitsCapture(row, now);
      if (!admitted) {
        for (let i = 0; i < pending.rows.length; i++) fresh.push(false);
        outcomes.push({ stored: 0, duplicates: 0, conflicts: [], alertsCreated: 0, warnings: [], refused: pending.rows.length });
        continue;
      }
      const claimed = claims.get(pending) ?? (yield* this.log.claiming(pending.teamId, pending.rows.map((r) => r.id), now, pending.rows.map(contentPrint)));
      let duplicates = 0;
      const conflicts: CommitOutcome['conflicts'] = [];
      const warnings: RowWarning[] = [];
      for (const [i, row] of pending.rows.entries()) {
        const outcome = claimed[i]!;
        fresh.push(outcome === true || (typeof outcome === 'object' && 'storedAs' in outcome));
        if (!outcome) {
          duplicates++;
          continue;
        }
        if (typeof outcome === 'object' && 'conflict' in outcome) {
          conflicts.push({ index: i, id: row.id, fields: outcome.conflict, ...(outcome.claimedAs ? { claimedAs: outcome.claimedAs } : {}) });
          conflicting.add(row);
          continue;
        }
        if (typeof outcome === 'object') {
          // Another payment under a known id: stored as the derived id; reads give the id as sent.
          row.record_extra = JSON.stringify({ ...(row.record_extra ? (JSON.parse(row.record_extra) as object) : {}), id: row.id });
          row.id = outcome.storedAs;
        }
        if (row.authorization_id !== undefined) {
          // Before the row is encoded: a zero-amount capture stores the held amount as its spend.
          const book = pending.book;
          const { released, warning } = yield* captureByRecord(row, now, book && ((r: EventRow) => valueRow(r, book)));
          if (released !== undefined) this.evaluator?.release(released);
          if (warning) warnings.push({ row: i, ...warning });
        }
        row.ingest_seq = this.nextSeq();
        let rows = rowsByTeam.get(row.team_id);
        if (!rows) rowsByTeam.set(row.team_id, (rows = []));
        rows.push(row);
      }
      outcomes.push({ stored: pending.rows.length - duplicates - conflicts.length, duplicates, conflicts, alertsCreated: 0, warnings, refused: 0 });
    }
    // One chunk per team; each row carries its log position (the loader finds a block's rows by it).
    const chunks: LogChunk[] = [];
    for (const [teamId, rows] of rowsByTeam) chunks.push(...(yield* this.log.appending(teamId, rows, now)));

    // Shared totals are locked here, after the claims (every instance takes its locks in this order).
    if (this.evaluator?.lockLedger && plan !== undefined) yield* this.evaluator.lockLedger(plan, now);
    // A group of authorizations alone has no records to evaluate or agents to record: no savepoints for nothing.
    if (this.evaluator && plan !== undefined && all.length > 0) {
      try {
        // A savepoint: a failing evaluation rolls back its own writes, never the records.
        const created = yield* savepoint(this.evaluator.apply(plan, fresh, now));
        let offset = 0;
        group.forEach((pending, p) => {
          for (let i = 0; i < pending.rows.length; i++) outcomes[p]!.alertsCreated += created[offset + i] ?? 0;
          offset += pending.rows.length;
        });
      } catch (err) {
        // Shared totals would miss these records for good: the group fails, and is sent again.
        if (this.evaluator.sharedLedger) throw err;
        this.evaluator.reset();
        this.logger.error({ err, rows: all.length }, 'policy evaluation failed; the records are stored');
      }
    }
    if (this.agents && all.length > 0) yield* recordAgents(this.agents, all, conflicting, this.logger);
    return { chunks, outcomes };
  }
}
