/** The loader of the SQLite ingest log: the one loader algorithm over a ledger in the registry. */
import type { Logger } from 'pino';
import type { EventStore } from '../stores/clickhouse.js';
import { unsyncedTransaction, type Registry, type WalSyncer } from '../stores/sqlite.js';
import { sqliteDatabase, type Database } from '../stores/sql.js';
import { backfillLaterDimensions, type Range, type SetAside, type StoredChunk } from './blocks.js';
import type { Backlog, Freshness } from './freshness.js';
import { BlockLoader, type BlockLedger, type Lease, type LeaseSignals, type LoaderObserver, type LoaderOptions, type NewBlock, type RecordedBlock } from './loader.js';
import type { LogChunk, LogFormat } from './log.js';

/** One process owns the registry file, so its loader never loses the lease. */
const ALWAYS_HELD: Lease = { held: true, confirm: async () => undefined, release: () => undefined };

/** A block of the SQLite log: one range of its gap-free positions, named `first-last` in its tokens. */
const blockOf = (firstPos: number, lastPos: number, format: LogFormat): RecordedBlock => ({ positions: { firstPos, lastPos }, format });

/** The SQLite log's ledger: ingest_blocks, ingest_loader and ingest_log in the registry, the unloaded chunks in Freshness. */
export class LocalLedger implements BlockLedger<RecordedBlock> {
  readonly name = 'ingest log';
  readonly leadRetryMs = 1_000;
  private readonly statements;

  constructor(
    private readonly db: Registry,
    private readonly freshness: Freshness,
    /** Resolves once what was written before is on disk: the registry's one WAL syncer. */
    private readonly sync: () => Promise<void>,
    private readonly logger: Logger,
  ) {
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
  }

  async lead(signals: LeaseSignals): Promise<Lease> {
    this.freshness.wakeLoader = signals.urgent;
    return ALWAYS_HELD;
  }

  get database(): Database {
    return sqliteDatabase(this.db);
  }

  async logId(): Promise<string> {
    return (this.db.prepare('SELECT log_id FROM ingest_loader WHERE id = 1').get() as { log_id: string }).log_id;
  }

  legacyUntil(backfill: (loadedPos: number) => Promise<void>): Promise<number> {
    return legacyUntilOf(this.db, this.logger, backfill);
  }

  async backlog(): Promise<Backlog> {
    return this.freshness.backlog();
  }

  async recorded(): Promise<RecordedBlock[]> {
    const rows = this.statements.pending.all() as { firstPos: number; lastPos: number; format: LogFormat }[];
    return rows.map((r) => blockOf(r.firstPos, r.lastPos, r.format));
  }

  async recordNext(rows: number): Promise<NewBlock<RecordedBlock> | undefined> {
    const chunks = this.freshness.nextChunks(rows);
    if (chunks.length === 0) return undefined;
    const block = blockOf(chunks[0]!.firstPos, chunks.at(-1)!.lastPos, chunks[0]!.format);
    await this.durably(() => this.record(block));
    return { block, kept: chunks };
  }

  async chunks(block: RecordedBlock): Promise<StoredChunk[]> {
    return this.statements.bodies.all(block.positions.firstPos, block.positions.lastPos) as StoredChunk[];
  }

  async split(block: RecordedBlock, halves: readonly [Range[], Range[]]): Promise<RecordedBlock[]> {
    // Positions are gap-free, so a half's ranges are one range from its first to its last.
    const made = halves.map((ranges) => blockOf(ranges[0]![0], ranges.at(-1)![1], block.format));
    await this.durably(() => {
      this.statements.forget.run(block.positions.firstPos);
      for (const half of made) this.record(half);
    });
    return made;
  }

  /** No flush awaited: a confirmation lost in a crash inserts the block again, and ClickHouse drops it. */
  async confirm(block: RecordedBlock): Promise<void> {
    unsyncedTransaction(this.db, () => this.forget(block));
    this.freshness.loaded(block.positions.lastPos);
  }

  /** Synced before the log forgets the records: the set-aside copy is their only one then. */
  async setAside(block: RecordedBlock, aside: SetAside, error: string): Promise<void> {
    const { firstPos } = block.positions;
    await this.durably(() => {
      this.statements.reject.run(firstPos, aside.teamId, aside.id, aside.bytes, error, Date.now(), aside.format, aside.rows);
      this.forget(block);
    });
    this.freshness.loaded(block.positions.lastPos);
  }

  private record(block: RecordedBlock): void {
    this.statements.record.run(block.positions.firstPos, block.positions.lastPos, block.format);
  }

  private forget(block: RecordedBlock): void {
    this.statements.forget.run(block.positions.firstPos);
    this.statements.loaded.run(block.positions.lastPos);
    this.statements.prune.run(block.positions.lastPos);
  }

  /** Written without fsync, then the WAL flush awaited off the event loop, as the group commit does. */
  private async durably(write: () => void): Promise<void> {
    unsyncedTransaction(this.db, write);
    await this.sync();
  }
}

/** Loads the SQLite ingest log into ClickHouse. */
export class Loader extends BlockLoader<RecordedBlock> {
  /** `syncWal`: the registry's, shared with the group commit. */
  constructor(db: Registry, syncWal: WalSyncer, store: EventStore, freshness: Freshness, options: LoaderOptions, logger: Logger, observer?: LoaderObserver) {
    super(new LocalLedger(db, freshness, syncWal, logger), store, options, logger, observer);
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
}

/** The SQLite log's legacyUntil (LocalLedger.legacyUntil), with the backfill into `store`. */
export function backfillRollups(db: Registry, store: EventStore, logId: string, logger: Logger): Promise<number> {
  return legacyUntilOf(db, logger, (loadedPos) => backfillLaterDimensions(store, logId, loadedPos));
}

/** Backfills the later dimensions once, keeping where the blocks recorded before them end, as those load the old way. */
async function legacyUntilOf(db: Registry, logger: Logger, backfill: (loadedPos: number) => Promise<void>): Promise<number> {
  const done = db.prepare("SELECT legacy_until FROM rollup_backfills WHERE name = 'asset'").get() as { legacy_until: number } | undefined;
  if (done) return done.legacy_until;
  const { loaded_pos: loadedPos } = db.prepare('SELECT loaded_pos FROM ingest_loader WHERE id = 1').get() as { loaded_pos: number };
  const { pending } = db.prepare('SELECT coalesce(max(last_pos), 0) AS pending FROM ingest_blocks').get() as { pending: number };
  const started = performance.now();
  await backfill(loadedPos);
  const legacyUntil = Math.max(loadedPos, pending);
  db.prepare("INSERT INTO rollup_backfills (name, done_at, legacy_until) VALUES ('asset', ?, ?)").run(Date.now(), legacyUntil);
  logger.info({ upToLogPos: loadedPos, legacyUntil, ms: Math.round(performance.now() - started) }, 'rollups: asset dimension backfilled for records loaded before it existed');
  return legacyUntil;
}
