import type { Logger } from 'pino';
import { ApiError } from '../http/errors.js';
import type { EventStore } from '../stores/clickhouse.js';
import { EVENT_COLUMNS, type EventRow } from './records.js';

/** What happened to the rows of one write. */
export interface WriteOutcome {
  /** Rows inserted by this write. */
  stored: number;
  /** Rows whose (team, id) was already stored, or repeated earlier in the same flush: not inserted. */
  duplicates: number;
  /** Alerts opened by evaluating the stored rows. */
  alertsCreated: number;
}

/** Evaluation of stored rows (policies, anomalies): new alerts per row. */
export interface StoredRowsHook {
  evaluate(rows: readonly EventRow[]): Promise<number[]>;
}

interface PendingWrite {
  rows: EventRow[];
  resolve: (outcome: WriteOutcome) => void;
  reject: (err: unknown) => void;
}

export interface WriterOptions {
  /** Upper bound of rows in one flush (one id look-up and one INSERT). */
  maxRowsPerFlush: number;
  /** A flush waits for more rows while fewer than this are queued... */
  targetRowsPerFlush: number;
  /** ...but never longer than this after the first queued row. */
  lingerMs: number;
}

/**
 * Each INSERT writes a part, and parts cost a fixed amount of ClickHouse CPU to write and later
 * merge: 100-row parts cost about 4x per row what 1,600-row parts do (bench:ingest, 2 cores). A few
 * ms of waiting under load buys much larger parts; an idle writer still flushes at once.
 */
/** Ids per duplicate look-up query (see storedIds). */
const LOOKUP_CHUNK = 5_000;

/** No flush for this long means the load has paused: the next request goes without waiting. */
const IDLE_AFTER_MS = 100;

const DEFAULTS: WriterOptions = { maxRowsPerFlush: 20_000, targetRowsPerFlush: 1600, lingerMs: 20 };

/**
 * Group commit into `events`. Requests queue their rows; one flush at a time takes everything
 * queued (up to the bound), drops duplicate ids, inserts the rest in one INSERT, and only then
 * answers each request. Under load the queue fills while a flush runs, so inserts grow with
 * concurrency instead of staying at one request's 100 rows.
 *
 * Flushes never overlap, so the id look-up and the insert of one flush cannot race another's:
 * the same record sent twice at once is stored once. (Several service processes on one ClickHouse
 * server would each be serialised only with themselves.)
 */
export class EventWriter {
  private queue: PendingWrite[] = [];
  private queuedRows = 0;
  private draining: Promise<void> | undefined;
  /** Wakes a lingering flush early once the target is queued. */
  private wake: (() => void) | undefined;
  /** Rows wanted before the next flush goes: what recent flushes carried (see drain). */
  private expectedRows = 0;
  private readonly recentFlushRows: number[] = [];
  private lastFlushEnded = 0;
  private closed = false;
  private lastSeq = 0;
  private readonly options: WriterOptions;

  constructor(
    private readonly store: EventStore,
    private readonly logger: Logger,
    options: Partial<WriterOptions> = {},
    /** Runs on each flush's inserted rows before the requests are answered, inside the serialised flush. */
    private readonly evaluator?: StoredRowsHook,
  ) {
    this.options = { ...DEFAULTS, ...options };
  }

  /** Resolves once the rows are stored (or found to be stored already); rejects with a 503 otherwise. */
  write(rows: EventRow[]): Promise<WriteOutcome> {
    if (this.closed) return Promise.reject(new ApiError('store_unavailable', 'The service is shutting down; retry'));
    if (rows.length === 0) return Promise.resolve({ stored: 0, duplicates: 0, alertsCreated: 0 });
    return new Promise((resolve, reject) => {
      this.queue.push({ rows, resolve, reject });
      this.queuedRows += rows.length;
      if (this.queuedRows >= this.expectedRows) this.wake?.();
      // setImmediate lets requests already parsed in this turn join the first flush.
      this.draining ??= new Promise<void>((done) => setImmediate(() => void this.drain().finally(done)));
    });
  }

  /** Refuses new writes and waits until everything queued is flushed. */
  async close(): Promise<void> {
    this.closed = true;
    await this.draining;
  }

  /**
   * Under steady load, requests arrive in waves (clients answered by one flush send their next
   * batch together). Flushing the first request of a wave at once, and the rest behind it, halves
   * the rows per part; so a flush waits until as many rows are queued as recent flushes carried,
   * or the linger bound passes. An idle writer (no flush for IDLE_AFTER_MS) flushes at once. The
   * queue running dry is not idleness: after a full flush every client is waiting for its answer.
   */
  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      if (performance.now() - this.lastFlushEnded > IDLE_AFTER_MS) {
        this.recentFlushRows.length = 0;
        this.expectedRows = 0;
      }
      if (this.queuedRows < this.expectedRows && !this.closed) {
        await new Promise<void>((resume) => {
          const timer = setTimeout(resume, this.options.lingerMs);
          this.wake = () => {
            clearTimeout(timer);
            resume();
          };
        });
        this.wake = undefined;
      }
      const flush = this.takeFlush();
      this.recentFlushRows.push(flush.reduce((n, p) => n + p.rows.length, 0));
      if (this.recentFlushRows.length > 8) this.recentFlushRows.shift();
      this.expectedRows = Math.min(this.options.targetRowsPerFlush, Math.max(...this.recentFlushRows));
      try {
        const outcomes = await this.flush(flush);
        flush.forEach((pending, i) => pending.resolve(outcomes[i]!));
      } catch (err) {
        this.logger.error({ err, rows: flush.reduce((n, p) => n + p.rows.length, 0) }, 'event insert failed');
        const unavailable = new ApiError('store_unavailable', 'The event store did not accept the records; nothing was stored, retry');
        for (const pending of flush) pending.reject(unavailable);
      }
      this.lastFlushEnded = performance.now();
    }
    this.draining = undefined;
  }

  /** Whole requests from the head of the queue, up to the row bound (always at least one). */
  private takeFlush(): PendingWrite[] {
    let rows = 0;
    let count = 0;
    while (count < this.queue.length) {
      const next = this.queue[count]!.rows.length;
      if (count > 0 && rows + next > this.options.maxRowsPerFlush) break;
      rows += next;
      count++;
    }
    this.queuedRows -= rows;
    return this.queue.splice(0, count);
  }

  /**
   * Storage order of the next row: microseconds since the epoch, and always more than the last
   * (below 2^53 until the year 2255, so a JS number holds it exactly).
   */
  private nextSeq(): number {
    this.lastSeq = Math.max(Date.now() * 1000, this.lastSeq + 1);
    return this.lastSeq;
  }

  /**
   * Evaluates what this flush stored. The rows are stored and will be acknowledged whatever
   * happens here: a failure is logged and raises no alert, it does not undo the insert.
   */
  private async evaluateStored(rows: EventRow[], owner: number[], outcomes: WriteOutcome[]): Promise<void> {
    if (!this.evaluator) return;
    try {
      const created = await this.evaluator.evaluate(rows);
      created.forEach((n, i) => (outcomes[owner[i]!]!.alertsCreated += n));
    } catch (err) {
      this.logger.error({ err, rows: rows.length }, 'policy evaluation failed; the events are stored');
    }
  }

  private async flush(flush: PendingWrite[]): Promise<WriteOutcome[]> {
    const started = performance.now();
    const stored = await this.storedIds(flush);
    const looked = performance.now();
    const seen = new Set<string>();
    const insert: unknown[][] = [];
    const inserted: EventRow[] = [];
    const owner: number[] = [];
    const outcomes = flush.map((pending, p) => {
      let duplicates = 0;
      for (const row of pending.rows) {
        const key = `${row.team_id}\u0000${row.id}`;
        if (seen.has(key) || stored.has(key)) {
          duplicates++;
          continue;
        }
        seen.add(key);
        row.ingest_seq = this.nextSeq();
        insert.push(EVENT_COLUMNS.map((column) => row[column]));
        inserted.push(row);
        owner.push(p);
      }
      return { stored: pending.rows.length - duplicates, duplicates, alertsCreated: 0 };
    });
    let insertedAt = performance.now();
    if (insert.length > 0) {
      await this.store.insertRows('events', EVENT_COLUMNS, insert);
      insertedAt = performance.now();
      await this.evaluateStored(inserted, owner, outcomes);
    }
    this.logger.debug(
      {
        requests: flush.length,
        rows: insert.length,
        duplicates: stored.size,
        queuedRows: this.queuedRows,
        lookupMs: Math.round(looked - started),
        insertMs: Math.round(insertedAt - looked),
        evaluateMs: Math.round(performance.now() - insertedAt),
      },
      'events flushed',
    );
    return outcomes;
  }

  /** `team\0id` of the flush's client ids that the store already holds (server ids are new by construction). */
  private async storedIds(flush: PendingWrite[]): Promise<Set<string>> {
    const teams = new Set<string>();
    const ids = new Set<string>();
    for (const pending of flush) {
      for (const row of pending.rows) {
        if (row.id.startsWith('srv_')) continue;
        teams.add(row.team_id);
        ids.add(row.id);
      }
    }
    const stored = new Set<string>();
    const all = [...ids];
    // Served by the by_id projection, ordered by (team_id, id). ClickHouse's key analysis grows
    // faster than linearly with the IN set: 45,000 ids took 70 s in one query, 0.13 s in chunks.
    for (let i = 0; i < all.length; i += LOOKUP_CHUNK) {
      const found = await this.store.query<{ team_id: string; id: string }>(
        'SELECT team_id, id FROM events WHERE team_id IN {teams:Array(String)} AND id IN {ids:Array(String)}',
        { teams: [...teams], ids: all.slice(i, i + LOOKUP_CHUNK) },
        // A point look-up: one thread answers it sooner than a pool started for it.
        { max_threads: 1 },
      );
      for (const r of found) stored.add(`${r.team_id}\u0000${r.id}`);
    }
    return stored;
  }
}
