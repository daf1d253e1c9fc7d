/** A block of the ingest log in ClickHouse: its records' bytes, its idempotent insert, and its bad records. */
import { blockRollupInserts, LATER_DIMENSION_BACKFILLS } from '../analytics/rollups.js';
import { clickHouseErrorCode, type EventStore } from '../stores/clickhouse.js';
import type { LogFormat } from './log.js';
import { rowBinaryBoundaries, VALUE_COLUMNS, type RowBinaryLayout } from './rowbinary.js';
import { TSV_COLUMNS, teamAndIdOf } from './tsv.js';

/** Positions first..last of the log, both included. */
export type Range = readonly [number, number];

/** A block's positions: one range named `first-last`, or ranges named by `key` where chunks of blocks interleave. */
export interface BlockPositions {
  firstPos: number;
  lastPos: number;
  ranges?: readonly Range[];
  key?: string;
}

/** What names a block in its deduplication tokens and in log lines. */
export const blockName = (block: BlockPositions): string => block.key ?? `${block.firstPos}-${block.lastPos}`;

/** A block's positions as ranges, in order. */
export const rangesOf = (block: BlockPositions): readonly Range[] => block.ranges ?? [[block.firstPos, block.lastPos]];

/** How many positions ranges hold. */
export const sizeOf = (ranges: readonly Range[]): number => ranges.reduce((n, [first, last]) => n + last - first + 1, 0);

/** A block's records as the loader sends them: the bytes of its chunks (or of their rows), in one format. */
export interface BlockBody {
  format: LogFormat;
  bytes: Buffer;
}

/** ClickHouse codes for rows it cannot parse or store, raised before anything is written: split the block to find them. */
const DATA_ERRORS = new Set([
  6, 26, 27, 32, 33, 38, 41, 53, 69, 70, 72, 117, 130, 131, 190, 321, 349, 407, 691,
]);

/** Whether ClickHouse refused a block's rows (split it to find them), rather than being unavailable. */
export function refusedForData(err: unknown): boolean {
  if (err instanceof RollupInsertError) return false;
  const code = clickHouseErrorCode(err);
  return code !== undefined && DATA_ERRORS.has(code);
}

/** A rollup insert failed: the block is in events already, so it is never split, only retried whole. */
export class RollupInsertError extends Error {
  override name = 'RollupInsertError';
}

/** The events columns a chunk's rows hold, by its format. */
export const LOG_COLUMNS: Readonly<Record<LogFormat, readonly string[]>> = {
  tsv: TSV_COLUMNS,
  rowbinary: TSV_COLUMNS,
  rowbinary2: [...TSV_COLUMNS, ...VALUE_COLUMNS],
};

/** Inserts a block into events and every rollup, each under a token of its own, so that inserted again every table keeps it once. */
export async function insertBlock(store: EventStore, logId: string, block: BlockPositions, body: BlockBody, legacyUntil = 0): Promise<void> {
  const token = (name: string) => `${logId}:${blockName(block)}:${name}`;
  // One parsing thread: parallel parsing costs more CPU on 2 cores, and nothing waits on the loader's wall time.
  const settings = { insert_deduplication_token: token('events'), input_format_parallel_parsing: 0 };
  // A block keeps the format it was recorded in: its token names positions, not bytes.
  if (body.format === 'tsv') await store.insertTsv('events', LOG_COLUMNS.tsv, body.bytes, settings);
  else await store.insertRowBinary('events', LOG_COLUMNS[body.format], body.bytes, settings);
  // Positions are integers of our own, inlined: a parameterised statement would queue behind the engine's reads.
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

/** Fills the rollups' later dimensions for every record up to `loadedPos` (0: rows from before the log); repeated, ClickHouse drops it. */
export async function backfillLaterDimensions(store: EventStore, logId: string, loadedPos: number): Promise<void> {
  for (const insert of LATER_DIMENSION_BACKFILLS) await store.command(insert.sql(`log_pos <= ${Math.trunc(loadedPos)}`, `${logId}:${insert.name}`));
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

/** The bytes of each record of a chunk whose position `wanted` accepts; throws DamagedChunkError when its body does not hold its rows. */
export function recordsOf(chunk: StoredChunk, wanted: (pos: number) => boolean): Buffer[] {
  const rows = chunk.lastPos - chunk.firstPos + 1;
  let starts: number[];
  if (chunk.format !== 'tsv') {
    try {
      starts = rowBinaryBoundaries(chunk.body, chunk.format).starts;
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

/** What to set aside of a refused block inside one chunk: its one record, a chunk past reading whole (no other way past it), or undefined. */
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
  const { teamId, id } = chunk.format !== 'tsv' ? firstRowOf(bytes, chunk.format) : teamAndIdOf(bytes.toString('utf8'));
  return { teamId, id, format: chunk.format, bytes, rows: 1 };
}

function firstRowOf(bytes: Buffer, layout: RowBinaryLayout): { teamId: string; id: string } {
  const { teamIds, ids } = rowBinaryBoundaries(bytes, layout);
  return { teamId: teamIds[0]!, id: ids[0]! };
}
