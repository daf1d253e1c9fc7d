import type { Logger } from 'pino';
import type { EventStore } from '../stores/clickhouse.js';
import { unsyncedTransaction, walSyncer, type Registry } from '../stores/sqlite.js';
import type { Freshness } from './freshness.js';
import type { LogChunk, LogFormat } from './log.js';
import { backfillLaterDimensions, insertBlock, recordsOf, refusedForData, setAsideInside, type BlockBody, type SetAside, type StoredChunk } from './blocks.js';

export interface LoaderOptions {
  /** A block holds up to about this many records (whole chunks; one chunk may exceed it). */
  blockRows: number;
  /** ...and goes at the latest this long after its oldest record was acknowledged. */
  intervalMs: number;
}

/** What the loader reports, for metrics. */
export interface LoaderObserver {
  blockLoaded(rows: number, seconds: number): void;
  rowsSetAside(rows: number): void;
  insertFailed(): void;
}

interface Block {
  firstPos: number;
  lastPos: number;
  format: LogFormat;
}

/**
 * Once, at the first start with the rollups' later dimensions: fills them for every record loaded,
 * and returns up to which position blocks were recorded the old way (loaded, or recorded unconfirmed).
 */
export async function backfillRollups(db: Registry, store: EventStore, logId: string, logger: Logger): Promise<number> {
  const done = db.prepare("SELECT legacy_until FROM rollup_backfills WHERE name = 'asset'").get() as { legacy_until: number } | undefined;
  if (done) return done.legacy_until;
  const { loaded_pos: loadedPos } = db.prepare('SELECT loaded_pos FROM ingest_loader WHERE id = 1').get() as { loaded_pos: number };
  const { pending } = db.prepare('SELECT coalesce(max(last_pos), 0) AS pending FROM ingest_blocks').get() as { pending: number };
  const started = performance.now();
  await backfillLaterDimensions(store, logId, loadedPos);
  const legacyUntil = Math.max(loadedPos, pending);
  db.prepare("INSERT INTO rollup_backfills (name, done_at, legacy_until) VALUES ('asset', ?, ?)").run(Date.now(), legacyUntil);
  logger.info({ upToLogPos: loadedPos, legacyUntil, ms: Math.round(performance.now() - started) }, 'rollups: asset dimension backfilled for records loaded before it existed');
  return legacyUntil;
}

export const BACKOFF_MIN_MS = 200;
export const BACKOFF_MAX_MS = 5_000;

/** A loader's sleep between blocks, which a waiting reader (or stop) cuts short. */
export class Nap {
  private waking: (() => void) | undefined;

  /** Sleeps up to `ms`; true when woken early. */
  sleep(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waking = undefined;
        resolve(false);
      }, ms);
      this.waking = () => {
        clearTimeout(timer);
        this.waking = undefined;
        resolve(true);
      };
    });
  }

  wake(): void {
    this.waking?.();
  }
}

/**
 * Copies the ingest log into ClickHouse in large blocks, over its own engine session. A block's
 * boundaries are recorded (synced) before its insert, and its token is made from them, so the
 * block inserted again after a crash or a timeout is dropped by ClickHouse's deduplication in
 * events and in every rollup. The loaded position moves, and loaded chunks are pruned, only after
 * ClickHouse confirmed the insert. A block ClickHouse refuses for its data is split in halves
 * until the rows at fault stand alone; those are set aside in `ingest_rejects` and the rest loads.
 */
export class Loader {
  private stopped = false;
  private running: Promise<void> | undefined;
  private readonly nap = new Nap();
  /**
   * A new block's bytes are copied here, not into a new buffer per block: a fresh 10 MB buffer
   * (Buffer.concat) cost 5-13 ms of CPU in page faults, 2.4% of the event loop at 25,000 records a
   * second, against 0.3-0.8 ms to copy into memory already touched. Blocks load one at a time, and
   * a block's bytes are read only until its events insert returns (written to the engine's file,
   * or sent as the request's body to a server); a retry reads its block from the log, not from here.
   */
  private blockBytes = Buffer.alloc(0);
  private failing = false;
  /** A reader (or evaluation) waits: the next block goes without waiting for its interval. */
  private urgent = false;
  private readonly logId: string;
  private readonly statements;
  /** Blocks ending at or before this position were recorded before the asset dimension (backfillRollups). */
  private legacyUntil: number | undefined;

  constructor(
    private readonly db: Registry,
    private readonly store: EventStore,
    private readonly freshness: Freshness,
    private readonly options: LoaderOptions,
    private readonly logger: Logger,
    private readonly observer?: LoaderObserver,
  ) {
    this.logId = (db.prepare('SELECT log_id FROM ingest_loader WHERE id = 1').get() as { log_id: string }).log_id;
    this.statements = {
      pending: db.prepare('SELECT first_pos AS firstPos, last_pos AS lastPos, format FROM ingest_blocks ORDER BY first_pos'),
      record: db.prepare('INSERT INTO ingest_blocks (first_pos, last_pos, format) VALUES (?, ?, ?)'),
      forget: db.prepare('DELETE FROM ingest_blocks WHERE first_pos = ?'),
      loaded: db.prepare('UPDATE ingest_loader SET loaded_pos = max(loaded_pos, ?) WHERE id = 1'),
      prune: db.prepare('DELETE FROM ingest_log WHERE last_pos <= ?'),
      bodies: db.prepare(
        'SELECT first_pos AS firstPos, last_pos AS lastPos, team_id AS teamId, format, body FROM ingest_log WHERE last_pos >= ? AND first_pos <= ? ORDER BY first_pos',
      ),
      reject: db.prepare('INSERT OR IGNORE INTO ingest_rejects (pos, team_id, id, line, error, rejected_at, format, rows) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'),
    };
    freshness.wakeLoader = () => {
      this.urgent = true;
      this.nap.wake();
    };
  }

  /** The loaded position and the unloaded chunks recorded in the log (for Freshness at start). */
  static state(db: Registry): { loadedPos: number; unloaded: LogChunk[] } {
    const { loaded_pos } = db.prepare('SELECT loaded_pos FROM ingest_loader WHERE id = 1').get() as { loaded_pos: number };
    const unloaded = db
      .prepare(
        `SELECT first_pos AS firstPos, last_pos AS lastPos, team_id AS teamId, rows, bytes, committed_at AS committedAt, format
           FROM ingest_log WHERE last_pos > ? ORDER BY first_pos`,
      )
      .all(loaded_pos) as LogChunk[];
    return { loadedPos: loaded_pos, unloaded };
  }

  /** Whether the last insert failed and has not succeeded since. */
  get isFailing(): boolean {
    return this.failing;
  }

  start(): void {
    this.running ??= this.run();
  }

  /** Stops after the block in progress; what is not loaded stays in the log for the next start. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.nap.wake();
    await this.running;
  }

  private async run(): Promise<void> {
    let backoff = BACKOFF_MIN_MS;
    while (!this.stopped) {
      try {
        this.legacyUntil ??= await backfillRollups(this.db, this.store, this.logId, this.logger);
        // Blocks recorded but not confirmed (a crash, or the last attempt failed) go first, as they were.
        const pending = this.statements.pending.all() as Block[];
        if (pending.length > 0) {
          for (const block of pending) await this.load(block);
        } else if (await this.due()) {
          const chunks = this.freshness.nextChunks(this.options.blockRows);
          if (chunks.length === 0) continue;
          const block = { firstPos: chunks[0]!.firstPos, lastPos: chunks.at(-1)!.lastPos, format: chunks[0]!.format };
          await this.recordBlocks(() => this.statements.record.run(block.firstPos, block.lastPos, block.format));
          await this.load(block, chunks);
        }
        this.failing = false;
        backoff = BACKOFF_MIN_MS;
      } catch (err) {
        this.failing = true;
        this.observer?.insertFailed();
        this.logger.error({ err, retryInMs: backoff }, 'loading the ingest log into ClickHouse failed; will retry the same block');
        await this.nap.sleep(backoff);
        backoff = Math.min(BACKOFF_MAX_MS, backoff * 2);
      }
    }
  }

  /**
   * Waits until a block is due: a full block is waiting, the oldest unloaded record is
   * `intervalMs` old, a reader waits, or stop. False when stopping.
   */
  private async due(): Promise<boolean> {
    for (;;) {
      if (this.stopped) return false;
      const backlog = this.freshness.backlog();
      if (backlog.oldestCommittedAt !== null) {
        if (backlog.rows >= this.options.blockRows || this.urgent) {
          this.urgent = false;
          return true;
        }
        const wait = backlog.oldestCommittedAt + this.options.intervalMs - Date.now();
        if (wait <= 0) return true;
        if (await this.nap.sleep(wait)) return true; // woken by a reader
      } else {
        await this.nap.sleep(this.options.intervalMs);
      }
    }
  }


  private chunks(block: Block): StoredChunk[] {
    return this.statements.bodies.all(block.firstPos, block.lastPos) as StoredChunk[];
  }

  /**
   * The records of positions firstPos..lastPos: the bodies of its chunks kept in memory since their
   * commit (a new block, as usual), or read from the log: whole chunks as they are, cut between
   * records where a split block starts or ends inside a chunk. Reading a block of 20,000 records
   * back took the event loop 40 ms (median; its pages are mostly in the WAL, read a syscall each).
   */
  private body(block: Block, kept?: readonly LogChunk[]): BlockBody {
    if (kept?.every((chunk) => chunk.body !== undefined && chunk.format === block.format)) {
      let length = 0;
      for (const chunk of kept) length += chunk.body!.length;
      // Grown with room to spare, so blocks a little larger than the last do not each allocate.
      if (this.blockBytes.length < length) this.blockBytes = Buffer.allocUnsafeSlow(Math.ceil(length * 1.25));
      let at = 0;
      for (const chunk of kept) at += chunk.body!.copy(this.blockBytes, at);
      return { format: block.format, bytes: this.blockBytes.subarray(0, length) };
    }
    const parts: Buffer[] = [];
    let rows = 0;
    for (const chunk of this.chunks(block)) {
      if (chunk.format !== block.format) throw new Error(`ingest log chunk ${chunk.firstPos} is ${chunk.format}, its block ${block.format}: the log is damaged`);
      if (chunk.firstPos >= block.firstPos && chunk.lastPos <= block.lastPos) {
        parts.push(chunk.body);
        rows += chunk.lastPos - chunk.firstPos + 1;
        continue;
      }
      const records = recordsOf(chunk, (pos) => pos >= block.firstPos && pos <= block.lastPos);
      parts.push(...records);
      rows += records.length;
    }
    if (rows !== block.lastPos - block.firstPos + 1) {
      throw new Error(`ingest log positions ${block.firstPos}..${block.lastPos} hold ${rows} records: the log is damaged`);
    }
    return { format: block.format, bytes: Buffer.concat(parts) };
  }

  /** Inserts one recorded block (its chunks, when it is a new one) and confirms it; splits it when ClickHouse refuses its data. */
  private async load(block: Block, chunks?: readonly LogChunk[]): Promise<void> {
    const body = this.body(block, chunks);
    const started = performance.now();
    try {
      await insertBlock(this.store, this.logId, block, body, this.legacyUntil);
    } catch (err) {
      if (!refusedForData(err)) throw err;
      await this.split(block, err);
      return;
    }
    this.observer?.blockLoaded(block.lastPos - block.firstPos + 1, (performance.now() - started) / 1000);
    this.confirm(block);
  }

  /**
   * Block boundaries must be on disk before their insert (a restart must cut the same blocks, or
   * their tokens would differ): written without fsync, then the WAL flush is awaited off the
   * event loop, as the group commit does.
   */
  private async recordBlocks(write: () => void): Promise<void> {
    unsyncedTransaction(this.db, write);
    await walSyncer(this.db)();
  }

  /**
   * The block is in ClickHouse: forget it, move the loaded position, prune what is loaded. No
   * flush is awaited: should this be lost, the block is inserted again and deduplicated.
   */
  private confirm(block: Block): void {
    unsyncedTransaction(this.db, () => {
      this.statements.forget.run(block.firstPos);
      this.statements.loaded.run(block.lastPos);
      this.statements.prune.run(block.lastPos);
    });
    this.freshness.loaded(block.lastPos);
  }

  /**
   * Halves a refused block (both halves recorded before either is tried): between chunks while it
   * spans several (a chunk's records are told apart only by reading it, which a damaged one does
   * not allow), then between records. A lone refused record is set aside, and so is a chunk whose
   * records cannot be told apart, whole.
   */
  private async split(block: Block, err: unknown): Promise<void> {
    const chunks = this.chunks(block);
    let cut: number | undefined;
    if (chunks.length > 1) {
      // The chunk start nearest the middle.
      const middle = (block.firstPos + block.lastPos + 1) / 2;
      cut = chunks.slice(1).reduce((best, c) => (Math.abs(c.firstPos - middle) < Math.abs(best - middle) ? c.firstPos : best), chunks[1]!.firstPos);
    } else {
      const aside = setAsideInside(chunks[0]!, block.firstPos, block.lastPos);
      if (aside) return this.setAside(block, aside, err);
      cut = block.firstPos + Math.floor((block.lastPos - block.firstPos) / 2) + 1;
    }
    const halves = [
      { firstPos: block.firstPos, lastPos: cut - 1, format: block.format },
      { firstPos: cut, lastPos: block.lastPos, format: block.format },
    ];
    this.logger.warn({ ...block, rows: block.lastPos - block.firstPos + 1 }, 'ClickHouse refused a block for its data; splitting it to find the records at fault');
    await this.recordBlocks(() => {
      this.statements.forget.run(block.firstPos);
      for (const half of halves) this.statements.record.run(half.firstPos, half.lastPos, half.format);
    });
    for (const half of halves) await this.load(half);
  }

  private async setAside(block: Block, aside: SetAside, err: unknown): Promise<void> {
    const message = err instanceof Error ? err.message : String(err);
    // Synced before the log forgets the records: the set-aside copy is their only one then.
    await this.recordBlocks(() => {
      this.statements.reject.run(block.firstPos, aside.teamId, aside.id, aside.bytes, message.slice(0, 2000), Date.now(), aside.format, aside.rows);
      this.statements.forget.run(block.firstPos);
      this.statements.loaded.run(block.lastPos);
      this.statements.prune.run(block.lastPos);
    });
    this.freshness.loaded(block.lastPos);
    this.observer?.rowsSetAside(aside.rows);
    const what = aside.rows === 1 ? 'a record' : `a damaged log chunk of ${aside.rows} records`;
    this.logger.error({ teamId: aside.teamId, id: aside.id, pos: block.firstPos, rows: aside.rows, err: message.slice(0, 500) }, `ClickHouse refused ${what}; set aside in ingest_rejects`);
  }
}
