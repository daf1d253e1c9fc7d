/** The loader of the shared log: one instance loads at a time (an advisory lock), another takes over when its session ends. */
import type { Logger } from 'pino';
import type { EventStore } from '../stores/clickhouse.js';
import type { SharedStore } from '../stores/postgres.js';
import { postgresOnly, type Database, type Sql } from '../stores/sql.js';
import { rangesOf, type Range, type SetAside, type StoredChunk } from './blocks.js';
import type { Backlog } from './freshness.js';
import { BlockLoader, type BlockLedger, type Lease, type LeaseSignals, type LoaderObserver, type LoaderOptions, type NewBlock, type RecordedBlock } from './loader.js';
import type { LogFormat } from './log.js';
import { LOADER_CHANNEL, sharedBacklog } from './shared-freshness.js';

const LOCK = "hashtext('spendscope:loader')";

/** A block of the shared log: chunks' positions interleave between instances, so it is a list of ranges, named by its id. */
interface SharedBlock extends RecordedBlock {
  id: number;
  /** The block its chunks were taken into; a split keeps it, and the chunks go when no block of it is left. */
  origin: number;
}

function blockOf(id: number, origin: number, ranges: Range[], format: LogFormat): SharedBlock {
  return { id, origin, format, positions: { firstPos: ranges[0]![0], lastPos: ranges.at(-1)![1], ranges, key: `b${id}` } };
}

/** The shared log's ledger: chunks in ingest_chunks, blocks in ingest_blocks, the lease an advisory lock. */
export class SharedLedger implements BlockLedger<SharedBlock> {
  readonly name = 'shared ingest log';

  constructor(
    private readonly pool: SharedStore,
    private readonly db: Database,
    private readonly logger: Logger,
    /** How often an instance that does not load tries for the lock. */
    readonly leadRetryMs = 1_000,
  ) {}

  /** The lock is held by a session of its own, which also listens for reads that wait. */
  async lead(signals: LeaseSignals): Promise<Lease | undefined> {
    const client = await this.pool.connect();
    let lost = false;
    // A connection that drops ends this instance's turn: the lock went with it.
    const onError = () => {
      lost = true;
      signals.lost();
    };
    const onNotification = () => signals.urgent();
    const release = (broken: boolean) => {
      // Without this turn's listeners, which would pile up on a pooled client.
      client.off('error', onError).off('notification', onNotification);
      // Destroyed, not returned to the pool: the session (and its lock) ends now.
      client.release(lost || broken ? true : undefined);
    };
    client.on('error', onError);
    try {
      const { rows } = await client.query<{ got: boolean }>(`SELECT pg_try_advisory_lock(${LOCK}) AS got`);
      if (!rows[0]!.got) {
        release(false);
        return undefined;
      }
      this.logger.info('this instance loads the shared ingest log into ClickHouse');
      client.on('notification', onNotification);
      await client.query(`LISTEN ${LOADER_CHANNEL}`);
    } catch (err) {
      release(true);
      throw err;
    }
    return {
      get held() {
        return !lost;
      },
      confirm: async () => void (await client.query('SELECT 1')),
      release,
    };
  }

  get database(): Database {
    return this.db;
  }

  async logId(): Promise<string> {
    return (await this.db.get<{ log_id: string }>(postgresOnly('SELECT log_id FROM ingest_loader WHERE id = 1')))!.log_id;
  }

  /** The shared log came after the rollups' later dimensions: none of its blocks lacks them. */
  async legacyUntil(): Promise<number> {
    return 0;
  }

  backlog(): Promise<Backlog> {
    return sharedBacklog(this.db);
  }

  async recorded(): Promise<SharedBlock[]> {
    const rows = await this.db.all<{ id: number; origin: number; ranges: string; format: LogFormat }>(postgresOnly('SELECT id, origin, ranges, format FROM ingest_blocks ORDER BY id'));
    return rows.map((r) => blockOf(r.id, r.origin, JSON.parse(r.ranges) as Range[], r.format));
  }

  /** The oldest chunks no block holds, in one transaction with the block that takes them. */
  async recordNext(blockRows: number): Promise<NewBlock<SharedBlock> | undefined> {
    return this.db.transaction(async (sql) => {
      const chunks = await sql.all<{ first_pos: number; last_pos: number; rows: number; format: LogFormat }>(
        postgresOnly('SELECT first_pos, last_pos, rows, format FROM ingest_chunks WHERE block_id IS NULL ORDER BY first_pos LIMIT 10000'),
      );
      const taken: Range[] = [];
      let rows = 0;
      for (const c of chunks) {
        if (taken.length > 0 && (rows + c.rows > blockRows || c.format !== chunks[0]!.format)) break;
        taken.push([c.first_pos, c.last_pos]);
        rows += c.rows;
      }
      if (taken.length === 0) return undefined;
      const format = chunks[0]!.format;
      const { id } = (await sql.get<{ id: number }>(
        postgresOnly(`WITH n AS (SELECT nextval('ingest_blocks_id_seq') AS id)
                      INSERT INTO ingest_blocks (id, origin, ranges, made_at, format, layout) SELECT id, id, $1, $2, $3, 2 FROM n RETURNING id`),
        [JSON.stringify(taken), Date.now(), format],
      ))!;
      await sql.run(postgresOnly('UPDATE ingest_chunks SET block_id = $1 WHERE first_pos = ANY($2::bigint[])'), [id, taken.map(([first]) => first)]);
      return { block: blockOf(id, id, taken, format) };
    });
  }

  /** The chunks of the block's origin that its ranges touch. */
  async chunks(block: SharedBlock): Promise<StoredChunk[]> {
    const chunks = await this.db.all<StoredChunk>(
      postgresOnly(`SELECT first_pos AS "firstPos", last_pos AS "lastPos", team_id AS "teamId", format, body
                      FROM ingest_chunks WHERE block_id = $1 ORDER BY first_pos`),
      [block.origin],
    );
    const ranges = rangesOf(block.positions);
    return chunks
      .map((c) => ({ ...c, firstPos: Number(c.firstPos), lastPos: Number(c.lastPos) }))
      .filter((c) => ranges.some(([a, b]) => b >= c.firstPos && a <= c.lastPos));
  }

  async split(block: SharedBlock, halves: readonly [Range[], Range[]]): Promise<SharedBlock[]> {
    return this.db.transaction(async (sql) => {
      await sql.run(postgresOnly('DELETE FROM ingest_blocks WHERE id = $1'), [block.id]);
      const made: SharedBlock[] = [];
      for (const ranges of halves) {
        const { id } = (await sql.get<{ id: number }>(postgresOnly('INSERT INTO ingest_blocks (origin, ranges, made_at, format, layout) VALUES ($1, $2, $3, $4, 2) RETURNING id'), [
          block.origin,
          JSON.stringify(ranges),
          Date.now(),
          block.format,
        ]))!;
        made.push(blockOf(id, block.origin, ranges, block.format));
      }
      return made;
    });
  }

  async confirm(block: SharedBlock): Promise<void> {
    await this.db.transaction((sql) => this.forget(sql, block));
  }

  async setAside(block: SharedBlock, aside: SetAside, error: string): Promise<void> {
    await this.db.transaction(async (sql) => {
      await sql.run(
        postgresOnly(`INSERT INTO ingest_rejects (pos, team_id, id, line, error, rejected_at, format, rows) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                      ON CONFLICT DO NOTHING`),
        [block.positions.firstPos, aside.teamId, aside.id, aside.bytes, error, Date.now(), aside.format, aside.rows],
      );
      await this.forget(sql, block);
    });
  }

  /** Forgets the block, and its chunks once no block of their origin is left. */
  private async forget(sql: Sql, block: SharedBlock): Promise<void> {
    await sql.run(postgresOnly('DELETE FROM ingest_blocks WHERE id = $1'), [block.id]);
    await sql.run(postgresOnly('DELETE FROM ingest_chunks WHERE block_id = $1 AND NOT EXISTS (SELECT 1 FROM ingest_blocks WHERE origin = $1)'), [block.origin]);
  }
}

/** Loads the shared ingest log into ClickHouse while this instance holds the lock. */
export class SharedLoader extends BlockLoader<SharedBlock> {
  constructor(pool: SharedStore, db: Database, store: EventStore, options: LoaderOptions, logger: Logger, observer?: LoaderObserver, lockRetryMs = 1_000) {
    super(new SharedLedger(pool, db, logger, lockRetryMs), store, options, logger, observer);
  }
}
