import type { Logger } from 'pino';
import { blockRollupInserts, LATER_DIMENSION_BACKFILLS } from '../analytics/rollups.js';
import { clickHouseErrorCode, type EventStore } from '../stores/clickhouse.js';
import { unsyncedTransaction, walSyncer, type Registry } from '../stores/sqlite.js';
import type { Freshness } from './freshness.js';
import type { LogChunk, LogFormat } from './log.js';
import { rowBinaryBoundaries } from './rowbinary.js';
import { TSV_COLUMNS, teamAndIdOf } from './tsv.js';

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

/** A block's records as the loader sends them: the bytes of its chunks (or of their rows), in one format. */
export interface BlockBody {
  format: LogFormat;
  bytes: Buffer;
}

/**
 * ClickHouse error codes that mean "these rows cannot be parsed or stored as they are": raised
 * while the block is parsed, before anything is written, so the block can be split to find the
 * rows at fault. Anything else (no connection, a missing table, memory) is an outage: the same
 * block is tried again later.
 */
const DATA_ERRORS = new Set([
  6, 26, 27, 32, 33, 38, 41, 53, 69, 70, 72, 117, 130, 131, 190, 321, 349, 407, 691,
]);

/** Whether ClickHouse refused a block's rows (split it to find them), rather than being unavailable. */
export function refusedForData(err: unknown): boolean {
  if (err instanceof RollupInsertError) return false;
  const code = clickHouseErrorCode(err);
  return code !== undefined && DATA_ERRORS.has(code);
}

/**
 * Inserts one block of the log into events and then into every rollup, each table with its own
 * deduplication token made from the log's id and the block's positions: inserted again (after a
 * crash or a failure at any step), every table keeps the block once. Throws what ClickHouse
 * throws; a data error can only come from the first insert (the rows), before anything is written.
 * A block ending at or before `legacyUntil` was recorded before the later dimensions existed.
 */
export async function insertBlock(
  store: EventStore,
  logId: string,
  block: BlockPositions,
  body: BlockBody,
  legacyUntil = 0,
): Promise<void> {
  const token = (name: string) => `${logId}:${block.key ?? `${block.firstPos}-${block.lastPos}`}:${name}`;
  // One thread parses a TSV block: the engine's parallel parsing cut it into segments for threads
  // of its own, which cost about 0.3 µs a row more CPU on this 2-core machine (and compete with the
  // event loop); the loader is not waited on, so the shorter wall time buys nothing.
  const settings = { insert_deduplication_token: token('events'), input_format_parallel_parsing: 0 };
  // The token names positions, not bytes: a block recorded as TSV and inserted again after an
  // upgrade is still one block (and is inserted as TSV: a block keeps its format).
  if (body.format === 'rowbinary') await store.insertRowBinary('events', TSV_COLUMNS, body.bytes, settings);
  else await store.insertTsv('events', TSV_COLUMNS, body.bytes, settings);
  // Positions are integers of our own: inlined, so the statement does not queue behind
  // parameterised reads (the embedded engine serialises those).
  const rows = block.ranges
    ? `(${block.ranges.map(([first, last]) => `log_pos BETWEEN ${Math.trunc(first)} AND ${Math.trunc(last)}`).join(' OR ')})`
    : `log_pos BETWEEN ${block.firstPos} AND ${block.lastPos}`;
  for (const insert of blockRollupInserts(block.lastPos <= legacyUntil)) {
    try {
      await store.command(insert.sql(rows, token(insert.name)));
    } catch (err) {
      throw new RollupInsertError(`inserting the block into ${insert.rollup} failed`, { cause: err });
    }
  }
}

/**
 * A block's positions: one range (the SQLite log's blocks are cut from its gap-free positions), or
 * several (the shared log's blocks are sets of chunks, whose positions interleave with other
 * blocks'), then named by `key` in the deduplication tokens.
 */
export interface BlockPositions {
  firstPos: number;
  lastPos: number;
  ranges?: readonly (readonly [number, number])[];
  key?: string;
}

/** A rollup insert failed: the block is in events already, so it is never split, only retried whole. */
export class RollupInsertError extends Error {
  override name = 'RollupInsertError';
}

/**
 * Once, at the first start with the later dimensions: fills them for every record loaded before
 * (log_pos up to the loaded position; rows from before the log have log_pos 0), and records up to
 * which position blocks were recorded the old way (the loaded position, or the last block recorded
 * but not confirmed): those blocks are completed by the legacy inserts when the loader takes them
 * again. A crash in the middle repeats the backfill with the same tokens, which ClickHouse drops.
 * Returns that position.
 */
export async function backfillRollups(db: Registry, store: EventStore, logId: string, logger: Logger): Promise<number> {
  const done = db.prepare("SELECT legacy_until FROM rollup_backfills WHERE name = 'asset'").get() as { legacy_until: number } | undefined;
  if (done) return done.legacy_until;
  const { loaded_pos: loadedPos } = db.prepare('SELECT loaded_pos FROM ingest_loader WHERE id = 1').get() as { loaded_pos: number };
  const { pending } = db.prepare('SELECT coalesce(max(last_pos), 0) AS pending FROM ingest_blocks').get() as { pending: number };
  const started = performance.now();
  for (const insert of LATER_DIMENSION_BACKFILLS) await store.command(insert.sql(`log_pos <= ${loadedPos}`, `${logId}:${insert.name}`));
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

/** What the loader reads of a chunk of the log to cut it or set part of it aside. */
export interface StoredChunk {
  firstPos: number;
  lastPos: number;
  teamId: string;
  format: LogFormat;
  body: Buffer;
}

/** A chunk whose records cannot be told apart: its bytes do not hold its rows, one after another. */
export class DamagedChunkError extends Error {
  override name = 'DamagedChunkError';
}

/**
 * The records of a chunk whose position `wanted` accepts, each as its bytes: a block split inside
 * a chunk takes part of it. TSV records are lines; RowBinary rows are found by reading their
 * lengths. Throws DamagedChunkError when the body does not hold the chunk's rows.
 */
export function recordsOf(chunk: StoredChunk, wanted: (pos: number) => boolean): Buffer[] {
  const rows = chunk.lastPos - chunk.firstPos + 1;
  let starts: number[];
  if (chunk.format === 'rowbinary') {
    try {
      starts = rowBinaryBoundaries(chunk.body).starts;
    } catch (err) {
      throw new DamagedChunkError(`log chunk ${chunk.firstPos}..${chunk.lastPos}: ${(err as Error).message}`);
    }
  } else {
    starts = [0];
    for (let at = chunk.body.indexOf(10); at >= 0; at = chunk.body.indexOf(10, at + 1)) starts.push(at + 1);
    if (starts.at(-1) !== chunk.body.length) starts.push(chunk.body.length); // a last line without its '\n'
  }
  if (starts.length - 1 !== rows) throw new DamagedChunkError(`log chunk ${chunk.firstPos}..${chunk.lastPos} holds ${starts.length - 1} records, not ${rows}`);
  const parts: Buffer[] = [];
  for (let i = 0; i < rows; i++) if (wanted(chunk.firstPos + i)) parts.push(chunk.body.subarray(starts[i], starts[i + 1]));
  return parts;
}

/** What a refused block inside one chunk sets aside in ingest_rejects: one record, or a damaged chunk whole. */
export interface SetAside {
  teamId: string;
  /** '' when the records of a damaged chunk cannot be told apart. */
  id: string;
  format: LogFormat;
  bytes: Buffer;
  rows: number;
}

/**
 * A refused block whose positions first..last lie in one chunk: what to set aside when it cannot
 * be halved (one record, or a chunk whose records cannot be told apart: set aside whole, the only
 * way past it), or undefined when it is halved by positions.
 */
export function setAsideInside(chunk: StoredChunk, first: number, last: number): SetAside | undefined {
  let records: Buffer[];
  try {
    records = recordsOf(chunk, (pos) => pos >= first && pos <= last);
  } catch (err) {
    if (!(err instanceof DamagedChunkError)) throw err;
    return { teamId: chunk.teamId, id: '', format: chunk.format, bytes: chunk.body, rows: last - first + 1 };
  }
  if (records.length > 1) return undefined;
  const bytes = records[0]!;
  const { teamId, id } = chunk.format === 'rowbinary' ? firstRowOf(bytes) : teamAndIdOf(bytes.toString('utf8'));
  return { teamId, id, format: chunk.format, bytes, rows: 1 };
}

function firstRowOf(bytes: Buffer): { teamId: string; id: string } {
  const { teamIds, ids } = rowBinaryBoundaries(bytes);
  return { teamId: teamIds[0]!, id: ids[0]! };
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
