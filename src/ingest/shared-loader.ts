/**
 * The loader of the shared ingest log (PostgreSQL, several instances; issue 30), and what reads
 * and back-pressure ask of it. Every instance runs one; one at a time loads: it holds the session
 * advisory lock 'spendscope:loader' on a connection of its own, and the others try for it every
 * second. When the loading instance dies its connection closes, the lock goes with it, and another
 * instance takes over within about a second, starting with the blocks the first had recorded.
 *
 * A block is recorded (committed) before its insert, with its chunks and position ranges, and its
 * deduplication token is made from the block's id: inserted again by whichever instance, events and
 * every rollup keep it once. After ClickHouse confirms it, the block and its chunks are deleted.
 * The inserts themselves are the SQLite loader's (insertBlock in ./loader.ts).
 */
import type pg from 'pg';
import type { Logger } from 'pino';
import type { EventStore } from '../stores/clickhouse.js';
import type { SharedStore } from '../stores/postgres.js';
import { postgresOnly, type Database, type Sql } from '../stores/sql.js';
import type { LogFormat } from './log.js';
import { LOADER_CHANNEL as CHANNEL, sharedBacklog } from './shared-freshness.js';
import { insertBlock, recordsOf, refusedForData, setAsideInside, type BlockBody, type SetAside, type StoredChunk } from './blocks.js';
import { BACKOFF_MAX_MS, BACKOFF_MIN_MS, Nap, type LoaderObserver, type LoaderOptions } from './loader.js';

type Range = [number, number];

interface RecordedBlock {
  id: number;
  origin: number;
  ranges: Range[];
  format: LogFormat;
}

const LOCK = "hashtext('spendscope:loader')";

const sizeOf = (ranges: readonly Range[]) => ranges.reduce((n, [first, last]) => n + last - first + 1, 0);

/**
 * A refused block's ranges in two: between ranges (each lies in one chunk) while there are
 * several, at the boundary nearest the middle, as the SQLite loader cuts between chunks first.
 */
function halveBetween(ranges: readonly Range[]): [Range[], Range[]] {
  const middle = sizeOf(ranges) / 2;
  let best = 1;
  let before = 0;
  let bestDistance = Infinity;
  for (let i = 1; i < ranges.length; i++) {
    before += ranges[i - 1]![1] - ranges[i - 1]![0] + 1;
    if (Math.abs(before - middle) < bestDistance) [best, bestDistance] = [i, Math.abs(before - middle)];
  }
  return [ranges.slice(0, best), ranges.slice(best)];
}

/** Ranges cut in two of about equal positions (a block ClickHouse refused, halved to find the rows at fault). */
function halve(ranges: readonly Range[]): [Range[], Range[]] {
  let left = Math.floor(sizeOf(ranges) / 2);
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

export class SharedLoader {
  private stopped = false;
  private running: Promise<void> | undefined;
  private readonly nap = new Nap();
  private failing = false;
  private holding = false;
  private urgent = false;
  private logId: string | undefined;

  constructor(
    private readonly pool: SharedStore,
    private readonly db: Database,
    private readonly store: EventStore,
    private readonly options: LoaderOptions,
    private readonly logger: Logger,
    private readonly observer?: LoaderObserver,
    /** How often an instance that does not load tries for the lock. */
    private readonly lockRetryMs = 1_000,
  ) {}

  /** Whether the last insert failed and has not succeeded since (this instance, while it loads). */
  get isFailing(): boolean {
    return this.failing;
  }

  /** Whether this instance is the one loading. */
  get isLoading(): boolean {
    return this.holding;
  }

  start(): void {
    this.running ??= this.run();
  }

  /** Stops after the block in progress, and gives the lock up. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.nap.wake();
    await this.running;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      let client: pg.PoolClient | undefined;
      let lost = false;
      const onError = () => {
        lost = true;
        this.nap.wake();
      };
      const onNotification = () => {
        this.urgent = true;
        this.nap.wake();
      };
      try {
        client = await this.pool.connect();
        // A connection that drops while this instance loads ends its turn: the lock went with it.
        client.on('error', onError);
        const { rows } = await client.query<{ got: boolean }>(`SELECT pg_try_advisory_lock(${LOCK}) AS got`);
        if (!rows[0]!.got) {
          // Back to the pool, without this turn's listeners (they would pile up on a pooled client).
          client.off('error', onError);
          client.release();
          client = undefined;
          await this.nap.sleep(this.lockRetryMs);
          continue;
        }
        this.holding = true;
        this.logger.info('this instance loads the shared ingest log into ClickHouse');
        client.on('notification', onNotification);
        await client.query(`LISTEN ${CHANNEL}`);
        this.logId ??= (await this.db.get<{ log_id: string }>(postgresOnly('SELECT log_id FROM ingest_loader WHERE id = 1')))!.log_id;
        await this.loadWhile(() => !this.stopped && !lost, client);
      } catch (err) {
        this.logger.error({ err }, 'the shared loader lost its connection; trying again');
        lost = true;
        await this.nap.sleep(this.lockRetryMs);
      } finally {
        this.holding = false;
        client?.off('error', onError).off('notification', onNotification);
        // Destroyed, not returned to the pool: the session (and its lock) ends now.
        client?.release(lost || this.stopped ? true : undefined);
      }
    }
  }

  private async loadWhile(holding: () => boolean, client: pg.PoolClient): Promise<void> {
    let backoff = BACKOFF_MIN_MS;
    while (holding()) {
      try {
        // Blocks recorded but not confirmed (a crash, a takeover, a failed insert) go first, as they were.
        const pending = await this.recorded();
        if (pending.length > 0) {
          for (const block of pending) await this.load(block);
        } else if (await this.due(holding)) {
          const block = await this.nextBlock();
          if (block) await this.load(block);
        }
        // Still the holder? A lock lost with its connection must not load on.
        await client.query('SELECT 1');
        this.failing = false;
        backoff = BACKOFF_MIN_MS;
      } catch (err) {
        this.failing = true;
        this.observer?.insertFailed();
        this.logger.error({ err, retryInMs: backoff }, 'loading the shared ingest log into ClickHouse failed; will retry the same block');
        await this.nap.sleep(backoff);
        backoff = Math.min(BACKOFF_MAX_MS, backoff * 2);
        await client.query('SELECT 1');
      }
    }
  }

  private async recorded(): Promise<RecordedBlock[]> {
    const rows = await this.db.all<{ id: number; origin: number; ranges: string; format: LogFormat }>(postgresOnly('SELECT id, origin, ranges, format FROM ingest_blocks ORDER BY id'));
    return rows.map((r) => ({ id: r.id, origin: r.origin, ranges: JSON.parse(r.ranges) as Range[], format: r.format }));
  }

  /** Waits until a block is due: a full block waits, the oldest chunk is intervalMs old, a reader waits; false when stopping. */
  private async due(holding: () => boolean): Promise<boolean> {
    while (holding()) {
      const backlog = await sharedBacklog(this.db);
      if (backlog.oldestCommittedAt !== null) {
        if (backlog.rows >= this.options.blockRows || this.urgent) {
          this.urgent = false;
          return true;
        }
        const wait = backlog.oldestCommittedAt + this.options.intervalMs - Date.now();
        if (wait <= 0) return true;
        if (await this.nap.sleep(wait)) return true;
      } else {
        this.urgent = false;
        await this.nap.sleep(this.options.intervalMs);
      }
    }
    return false;
  }

  /**
   * Takes the oldest unblocked chunks, up to about blockRows records (whole chunks, all of the
   * first one's format), into a block recorded now.
   */
  private async nextBlock(): Promise<RecordedBlock | undefined> {
    return this.db.transaction(async (sql) => {
      const chunks = await sql.all<{ first_pos: number; last_pos: number; rows: number; format: LogFormat }>(
        postgresOnly('SELECT first_pos, last_pos, rows, format FROM ingest_chunks WHERE block_id IS NULL ORDER BY first_pos LIMIT 10000'),
      );
      const taken: Range[] = [];
      let rows = 0;
      for (const c of chunks) {
        if (taken.length > 0 && (rows + c.rows > this.options.blockRows || c.format !== chunks[0]!.format)) break;
        taken.push([c.first_pos, c.last_pos]);
        rows += c.rows;
      }
      if (taken.length === 0) return undefined;
      const format = chunks[0]!.format;
      const { id } = (await sql.get<{ id: number }>(
        postgresOnly(`WITH n AS (SELECT nextval('ingest_blocks_id_seq') AS id)
                      INSERT INTO ingest_blocks (id, origin, ranges, made_at, format) SELECT id, id, $1, $2, $3 FROM n RETURNING id`),
        [JSON.stringify(taken), Date.now(), format],
      ))!;
      await sql.run(postgresOnly('UPDATE ingest_chunks SET block_id = $1 WHERE first_pos = ANY($2::bigint[])'), [id, taken.map(([first]) => first)]);
      return { id, origin: id, ranges: taken, format };
    });
  }

  /** The chunks of a block's origin that its ranges touch. */
  private async chunks(block: RecordedBlock): Promise<StoredChunk[]> {
    const chunks = await this.db.all<StoredChunk>(
      postgresOnly(`SELECT first_pos AS "firstPos", last_pos AS "lastPos", team_id AS "teamId", format, body
                      FROM ingest_chunks WHERE block_id = $1 ORDER BY first_pos`),
      [block.origin],
    );
    return chunks
      .map((c) => ({ ...c, firstPos: Number(c.firstPos), lastPos: Number(c.lastPos) }))
      .filter((c) => block.ranges.some(([a, b]) => b >= c.firstPos && a <= c.lastPos));
  }

  /** The records of a block's positions: its chunks whole, or cut between records where a split block covers part of one. */
  private async body(block: RecordedBlock): Promise<BlockBody> {
    const parts: Buffer[] = [];
    let rows = 0;
    for (const chunk of await this.chunks(block)) {
      if (chunk.format !== block.format) throw new Error(`shared ingest log chunk ${chunk.firstPos} is ${chunk.format}, its block ${block.id} ${block.format}: the log is damaged`);
      const inside = block.ranges.filter(([a, b]) => b >= chunk.firstPos && a <= chunk.lastPos);
      if (inside.length === 1 && inside[0]![0] <= chunk.firstPos && inside[0]![1] >= chunk.lastPos) {
        parts.push(chunk.body);
        rows += chunk.lastPos - chunk.firstPos + 1;
        continue;
      }
      const records = recordsOf(chunk, (pos) => inside.some(([a, b]) => pos >= a && pos <= b));
      parts.push(...records);
      rows += records.length;
    }
    if (rows !== sizeOf(block.ranges)) throw new Error(`shared ingest log block ${block.id} should hold ${sizeOf(block.ranges)} records, holds ${rows}: the log is damaged`);
    return { format: block.format, bytes: Buffer.concat(parts) };
  }

  /** Inserts one recorded block and confirms it; splits it when ClickHouse refuses its data. */
  private async load(block: RecordedBlock): Promise<void> {
    const body = await this.body(block);
    const started = performance.now();
    const positions = { firstPos: block.ranges[0]![0], lastPos: block.ranges.at(-1)![1], ranges: block.ranges, key: `b${block.id}` };
    try {
      await insertBlock(this.store, this.logId!, positions, body);
    } catch (err) {
      if (!refusedForData(err)) throw err;
      await this.split(block, err);
      return;
    }
    this.observer?.blockLoaded(sizeOf(block.ranges), (performance.now() - started) / 1000);
    await this.db.transaction((sql) => this.forget(sql, block));
  }

  /** The block is in ClickHouse: forget it, and its chunks once no block of their origin is left. */
  private async forget(sql: Sql, block: RecordedBlock): Promise<void> {
    await sql.run(postgresOnly('DELETE FROM ingest_blocks WHERE id = $1'), [block.id]);
    await sql.run(postgresOnly('DELETE FROM ingest_chunks WHERE block_id = $1 AND NOT EXISTS (SELECT 1 FROM ingest_blocks WHERE origin = $1)'), [block.origin]);
  }

  /**
   * Halves a refused block (both halves recorded before either is tried): between chunks while it
   * spans several, then between records (as the SQLite loader). A lone refused record is set
   * aside, and so is a chunk whose records cannot be told apart, whole.
   */
  private async split(block: RecordedBlock, err: unknown): Promise<void> {
    let halves: [Range[], Range[]];
    if (block.ranges.length > 1) halves = halveBetween(block.ranges);
    else {
      const [[first, last]] = block.ranges as [Range];
      const chunk = (await this.chunks(block))[0];
      if (!chunk) throw new Error(`shared ingest log block ${block.id} has no chunk: the log is damaged`);
      const aside = setAsideInside(chunk, first, last);
      if (aside) return this.setAside(block, aside, err);
      halves = halve(block.ranges);
    }
    this.logger.warn({ block: block.id, rows: sizeOf(block.ranges) }, 'ClickHouse refused a block for its data; splitting it to find the records at fault');
    const made = await this.db.transaction(async (sql) => {
      await sql.run(postgresOnly('DELETE FROM ingest_blocks WHERE id = $1'), [block.id]);
      const recorded: RecordedBlock[] = [];
      for (const ranges of halves) {
        const { id } = (await sql.get<{ id: number }>(postgresOnly('INSERT INTO ingest_blocks (origin, ranges, made_at, format) VALUES ($1, $2, $3, $4) RETURNING id'), [
          block.origin,
          JSON.stringify(ranges),
          Date.now(),
          block.format,
        ]))!;
        recorded.push({ id, origin: block.origin, ranges, format: block.format });
      }
      return recorded;
    });
    for (const half of made) await this.load(half);
  }

  private async setAside(block: RecordedBlock, aside: SetAside, err: unknown): Promise<void> {
    const message = err instanceof Error ? err.message : String(err);
    const pos = block.ranges[0]![0];
    await this.db.transaction(async (sql) => {
      await sql.run(
        postgresOnly(`INSERT INTO ingest_rejects (pos, team_id, id, line, error, rejected_at, format, rows) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                      ON CONFLICT DO NOTHING`),
        [pos, aside.teamId, aside.id, aside.bytes, message.slice(0, 2000), Date.now(), aside.format, aside.rows],
      );
      await this.forget(sql, block);
    });
    this.observer?.rowsSetAside(aside.rows);
    const what = aside.rows === 1 ? 'a record' : `a damaged log chunk of ${aside.rows} records`;
    this.logger.error({ teamId: aside.teamId, id: aside.id, pos, rows: aside.rows, err: message.slice(0, 500) }, `ClickHouse refused ${what}; set aside in ingest_rejects`);
  }

}
