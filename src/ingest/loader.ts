/** The loader, written once for every log: what differs between the stores holding a log is a BlockLedger's. */
import type { Logger } from 'pino';
import type { EventStore } from '../stores/clickhouse.js';
import {
  backfillLaterDimensions,
  blockName,
  insertBlock,
  rangesOf,
  recordsOf,
  refusedForData,
  setAsideInside,
  sizeOf,
  type BlockBody,
  type BlockPositions,
  type Range,
  type SetAside,
  type StoredChunk,
} from './blocks.js';
import type { Backlog } from './freshness.js';
import type { LogChunk, LogFormat } from './log.js';
import { backfillValues } from './value-backfill.js';
import type { Database } from '../stores/sql.js';

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

/** A block as its ledger recorded it, before its insert: its tokens are made from `positions`. */
export interface RecordedBlock {
  positions: BlockPositions;
  format: LogFormat;
}

/** A block just recorded, with its chunks' bodies when the ledger still holds them in memory. */
export interface NewBlock<B extends RecordedBlock> {
  block: B;
  kept?: readonly LogChunk[];
}

/** How a ledger reaches the loader while it holds the lease. */
export interface LeaseSignals {
  /** A reader waits: the next block goes without waiting for its interval. */
  urgent(): void;
  /** The lease is gone (its connection dropped): stop loading. */
  lost(): void;
}

/** The right to load a log: one loader at a time holds it. */
export interface Lease {
  /** False once lost. */
  readonly held: boolean;
  /** Throws when the lease was lost meanwhile: a loader without it must not load on. */
  confirm(): Promise<void>;
  /** Gives it up; `broken`: the session it was held on is not to be used again. */
  release(broken: boolean): void;
}

/** Where a loader's place in a log lives (its recorded blocks, the chunks, what it set aside) and how it leads. */
export interface BlockLedger<B extends RecordedBlock> {
  /** What log lines call this log. */
  readonly name: string;
  /** How soon a loader without the lease tries for it again. */
  readonly leadRetryMs: number;
  /** Takes the lease; undefined while another loader holds it. */
  lead(signals: LeaseSignals): Promise<Lease | undefined>;
  /** Names this log in the blocks' deduplication tokens. */
  logId(): Promise<string>;
  /** The registry the log lives in (what the value backfill reads teams and rates from). */
  readonly database: Database;
  /** Blocks ending at or before this were recorded before the rollups' later dimensions; calls `backfill` once for a log older than them. */
  legacyUntil(backfill: (loadedPos: number) => Promise<void>): Promise<number>;
  /** What is not loaded yet. */
  backlog(): Promise<Backlog>;
  /** Blocks recorded and not confirmed, in the order they go. */
  recorded(): Promise<B[]>;
  /** Records the oldest unloaded chunks, up to about `rows` records of one format, as a block; durable before it resolves. */
  recordNext(rows: number): Promise<NewBlock<B> | undefined>;
  /** The chunks a block's positions touch, in position order. */
  chunks(block: B): Promise<StoredChunk[]>;
  /** Replaces a refused block by blocks of these positions, durable before it resolves. */
  split(block: B, halves: readonly [Range[], Range[]]): Promise<B[]>;
  /** The block is in ClickHouse: forget it, and what of the log it alone held. */
  confirm(block: B): Promise<void>;
  /** Keeps a refused record (or a damaged chunk) in ingest_rejects and confirms its block, durable before it resolves. */
  setAside(block: B, aside: SetAside, error: string): Promise<void>;
}

export const BACKOFF_MIN_MS = 200;
/** How often a loader looks again for stored records to value, until none is left. */
const VALUE_CHECK_MS = 30_000;
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

/** Copies a log into ClickHouse; blocks are recorded before their insert so that a retry has the same tokens. */
export class BlockLoader<B extends RecordedBlock> {
  private stopped = false;
  private running: Promise<void> | undefined;
  private readonly nap = new Nap();
  /** New blocks' bytes are copied here: a fresh buffer per block costs page faults on the event loop. */
  private blockBytes = Buffer.alloc(0);
  private failing = false;
  private lease: Lease | undefined;
  private urgent = false;
  private logId: string | undefined;
  private legacyUntil: number | undefined;
  /** Every record stored before values existed is valued (src/ingest/value-backfill.ts). */
  private valued = false;
  private nextValueCheck = 0;
  private readonly signals: LeaseSignals = {
    urgent: () => {
      this.urgent = true;
      this.nap.wake();
    },
    lost: () => this.nap.wake(),
  };

  constructor(
    private readonly ledger: BlockLedger<B>,
    private readonly store: EventStore,
    private readonly options: LoaderOptions,
    private readonly logger: Logger,
    private readonly observer?: LoaderObserver,
  ) {}

  /** Whether the last insert failed and has not succeeded since. */
  get isFailing(): boolean {
    return this.failing;
  }

  /** Whether this loader holds the lease. */
  get isLoading(): boolean {
    return this.lease !== undefined;
  }

  start(): void {
    this.running ??= this.run();
  }

  /** Stops after the block in progress and gives the lease up; what is not loaded stays in the log. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.nap.wake();
    await this.running;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      let lease: Lease | undefined;
      let broken = false;
      try {
        lease = await this.ledger.lead(this.signals);
        if (!lease) {
          await this.nap.sleep(this.ledger.leadRetryMs);
          continue;
        }
        this.lease = lease;
        this.logId ??= await this.ledger.logId();
        await this.loadWhile(lease);
      } catch (err) {
        this.logger.error({ err }, `the loader of the ${this.ledger.name} lost its connection; trying again`);
        broken = true;
        await this.nap.sleep(this.ledger.leadRetryMs);
      } finally {
        this.lease = undefined;
        lease?.release(broken || this.stopped);
      }
    }
  }

  /**
   * Values the records stored before values existed, once the chunks of older formats are loaded
   * (theirs are the last to value); checked every VALUE_CHECK_MS until done. Never in the way of
   * loading: a failure is logged and tried again at the next check.
   */
  private async valueStored(): Promise<void> {
    try {
      this.valued = await backfillValues(this.store, this.ledger.database, this.logId!, this.logger);
    } catch (err) {
      this.logger.error({ err }, 'values: valuing the records stored before values failed; trying again shortly');
    }
    this.nextValueCheck = Date.now() + VALUE_CHECK_MS;
  }

  private leading(lease: Lease): boolean {
    return !this.stopped && lease.held;
  }

  private async loadWhile(lease: Lease): Promise<void> {
    let backoff = BACKOFF_MIN_MS;
    while (this.leading(lease)) {
      try {
        this.legacyUntil ??= await this.ledger.legacyUntil((loadedPos) => backfillLaterDimensions(this.store, this.logId!, loadedPos));
        if (!this.valued && Date.now() >= this.nextValueCheck) await this.valueStored();
        // Blocks recorded but not confirmed (a crash, a takeover, a failed insert) go first, as they were.
        const pending = await this.ledger.recorded();
        if (pending.length > 0) {
          for (const block of pending) await this.load(block);
        } else if (await this.due(lease)) {
          const next = await this.ledger.recordNext(this.options.blockRows);
          if (next) await this.load(next.block, next.kept);
        }
        await lease.confirm();
        this.failing = false;
        backoff = BACKOFF_MIN_MS;
      } catch (err) {
        this.failing = true;
        this.observer?.insertFailed();
        this.logger.error({ err, retryInMs: backoff }, `loading the ${this.ledger.name} into ClickHouse failed; will retry the same block`);
        await this.nap.sleep(backoff);
        backoff = Math.min(BACKOFF_MAX_MS, backoff * 2);
        await lease.confirm();
      }
    }
  }

  /** Waits until a block is due: a full block waits, the oldest record is intervalMs old, or a reader waits; false when stopping. */
  private async due(lease: Lease): Promise<boolean> {
    while (this.leading(lease)) {
      const backlog = await this.ledger.backlog();
      if (backlog.oldestCommittedAt === null) {
        // A reader's wake-up is kept: what it waits for may still be on its way into the log.
        await this.nap.sleep(this.options.intervalMs);
        continue;
      }
      if (backlog.rows >= this.options.blockRows || this.urgent) {
        this.urgent = false;
        return true;
      }
      const wait = backlog.oldestCommittedAt + this.options.intervalMs - Date.now();
      if (wait <= 0) return true;
      if (await this.nap.sleep(wait)) return true; // woken by a reader
    }
    return false;
  }

  /** Inserts one recorded block and confirms it; splits it when ClickHouse refuses its data. */
  private async load(block: B, kept?: readonly LogChunk[]): Promise<void> {
    const body = await this.body(block, kept);
    const started = performance.now();
    try {
      await insertBlock(this.store, this.logId!, block.positions, body, this.legacyUntil);
    } catch (err) {
      if (!refusedForData(err)) throw err;
      await this.split(block, err);
      return;
    }
    this.observer?.blockLoaded(sizeOf(rangesOf(block.positions)), (performance.now() - started) / 1000);
    await this.ledger.confirm(block);
  }

  /** A block's records: the kept bodies of a new block, or its chunks read back, cut between records where it covers part of one. */
  private async body(block: B, kept?: readonly LogChunk[]): Promise<BlockBody> {
    if (kept?.every((chunk) => chunk.body !== undefined && chunk.format === block.format)) return { format: block.format, bytes: this.copied(kept) };
    const ranges = rangesOf(block.positions);
    const parts: Buffer[] = [];
    let rows = 0;
    for (const chunk of await this.ledger.chunks(block)) {
      if (chunk.format !== block.format) {
        throw new Error(`${this.ledger.name} chunk ${chunk.firstPos} is ${chunk.format}, its block ${blockName(block.positions)} ${block.format}: the log is damaged`);
      }
      const inside = ranges.filter(([a, b]) => b >= chunk.firstPos && a <= chunk.lastPos);
      if (inside.length === 1 && inside[0]![0] <= chunk.firstPos && inside[0]![1] >= chunk.lastPos) {
        parts.push(chunk.body);
        rows += chunk.lastPos - chunk.firstPos + 1;
        continue;
      }
      const records = recordsOf(chunk, (pos) => inside.some(([a, b]) => pos >= a && pos <= b));
      parts.push(...records);
      rows += records.length;
    }
    if (rows !== sizeOf(ranges)) {
      throw new Error(`${this.ledger.name} block ${blockName(block.positions)} should hold ${sizeOf(ranges)} records, holds ${rows}: the log is damaged`);
    }
    return { format: block.format, bytes: Buffer.concat(parts) };
  }

  /** The kept bodies in the reused buffer, which is read only until the block's events insert returns. */
  private copied(kept: readonly LogChunk[]): Buffer {
    let length = 0;
    for (const chunk of kept) length += chunk.body!.length;
    // Grown with room to spare, so blocks a little larger than the last do not each allocate.
    if (this.blockBytes.length < length) this.blockBytes = Buffer.allocUnsafeSlow(Math.ceil(length * 1.25));
    let at = 0;
    for (const chunk of kept) at += chunk.body!.copy(this.blockBytes, at);
    return this.blockBytes.subarray(0, length);
  }

  /** Halves a refused block between chunks first, since only a readable chunk can be cut inside; a lone bad record is set aside. */
  private async split(block: B, err: unknown): Promise<void> {
    const ranges = rangesOf(block.positions);
    const chunks = await this.ledger.chunks(block);
    let halves: [Range[], Range[]];
    if (chunks.length > 1) {
      halves = halveBetween(chunks.map((chunk) => clippedTo(ranges, chunk)).filter((inChunk) => inChunk.length > 0));
    } else {
      const [chunk] = chunks;
      if (!chunk) throw new Error(`${this.ledger.name} block ${blockName(block.positions)} has no chunk: the log is damaged`);
      const aside = setAsideInside(chunk, block.positions.firstPos, block.positions.lastPos);
      if (aside) return this.setAside(block, aside, err);
      halves = halve(ranges);
    }
    this.logger.warn({ block: blockName(block.positions), rows: sizeOf(ranges) }, 'ClickHouse refused a block for its data; splitting it to find the records at fault');
    for (const half of await this.ledger.split(block, halves)) await this.load(half);
  }

  private async setAside(block: B, aside: SetAside, err: unknown): Promise<void> {
    const message = err instanceof Error ? err.message : String(err);
    await this.ledger.setAside(block, aside, message.slice(0, 2000));
    this.observer?.rowsSetAside(aside.rows);
    const what = aside.rows === 1 ? 'a record' : `a damaged log chunk of ${aside.rows} records`;
    const pos = block.positions.firstPos;
    this.logger.error({ teamId: aside.teamId, id: aside.id, pos, rows: aside.rows, err: message.slice(0, 500) }, `ClickHouse refused ${what}; set aside in ingest_rejects`);
  }
}

/** The parts of ranges inside a chunk. */
function clippedTo(ranges: readonly Range[], chunk: StoredChunk): Range[] {
  return ranges.filter(([a, b]) => b >= chunk.firstPos && a <= chunk.lastPos).map(([a, b]) => [Math.max(a, chunk.firstPos), Math.min(b, chunk.lastPos)] as const);
}

/** Ranges grouped by chunk, cut in two at the chunk boundary nearest the middle (the first of equals). */
function halveBetween(byChunk: readonly Range[][]): [Range[], Range[]] {
  const middle = sizeOf(byChunk.flat()) / 2;
  let best = 1;
  let before = 0;
  let bestDistance = Infinity;
  for (let i = 1; i < byChunk.length; i++) {
    before += sizeOf(byChunk[i - 1]!);
    if (Math.abs(before - middle) < bestDistance) [best, bestDistance] = [i, Math.abs(before - middle)];
  }
  return [byChunk.slice(0, best).flat(), byChunk.slice(best).flat()];
}

/** Ranges cut in two by positions, the first half taking the odd one. */
function halve(ranges: readonly Range[]): [Range[], Range[]] {
  let left = Math.ceil(sizeOf(ranges) / 2);
  const first: Range[] = [];
  const second: Range[] = [];
  for (const [a, b] of ranges) {
    const n = b - a + 1;
    if (left >= n) (first.push([a, b]), (left -= n));
    else if (left > 0) (first.push([a, a + left - 1]), second.push([a + left, b]), (left = 0));
    else second.push([a, b]);
  }
  return [first, second];
}
