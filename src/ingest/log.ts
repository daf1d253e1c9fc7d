import crypto from 'node:crypto';
import type { Registry } from '../stores/sqlite.js';
import type { Steps } from '../stores/sql.js';
import { fmix32 } from './dedup/filter.js';
import { ClaimIndex, type ClaimIndexOptions } from './dedup/index.js';
import { memoized } from '../domain/memo.js';
import type { EventRow } from '../domain/record-row.js';
import { rowBinaryOf, type RowBinaryLayout } from './rowbinary.js';

/**
 * How a chunk's records are written: RowBinary (src/ingest/rowbinary.ts) with their values
 * (`rowbinary2`), what every chunk is now; RowBinary without them, or TSV lines (src/ingest/tsv.ts),
 * in chunks of earlier versions, which load as they are. The column `format` of the chunk says
 * which; a block holds chunks of one format.
 */
export type LogFormat = 'tsv' | RowBinaryLayout;

/** The format chunks are written in now. */
export const LOG_FORMAT = 'rowbinary2' satisfies LogFormat;

/** What one append wrote: a chunk of the log, positions firstPos..lastPos of one team. */
export interface LogChunk {
  firstPos: number;
  lastPos: number;
  teamId: string;
  rows: number;
  bytes: number;
  committedAt: number;
  format: LogFormat;
  /**
   * The earliest and latest event time of its records (Unix ms), when known (chunks committed by
   * this process): a read of other times need not wait for the chunk to load.
   */
  eventTimes?: { first: number; last: number };
  /**
   * The chunk's bytes, kept in memory from its commit until it is loaded, while Freshness has room
   * for them (the SQLite log): the loader takes a block from here instead of reading it back.
   */
  body?: Buffer;
}

/** Ids are at most this long (audit-record.json); a derived id stays within it. */
const MAX_ID_LENGTH = 128;

/**
 * What a claimed id's record must repeat to be the same record, kept with the id in one INTEGER
 * column (`record_fp`): 64 bits, passed as decimal text through JSON (no JS number holds them).
 *
 *   bits 32..63  tx_hash tag: 32 bits of a hash of tx_hash, never 0; 0 when tx_hash is null
 *   bits 18..31  a hash of all CONTENT_FIELDS together (14 bits)
 *   bits 0..17   a 3-bit tag per field of CONTENT_FIELDS (lowest first), to name what differs
 *
 * One column of 8 bytes, not two hashes of 64 bits: each byte a row of the (team, id) index
 * carries costs claim time (npm run bench:dedup). What that gives up: two different tx_hash values
 * of one id look the same 1 time in 2^32 (the second payment would be a duplicate); a content
 * that differs in one field looks the same 1 time in 2^17 (a duplicate, as before prints); a
 * differing field goes unnamed 1 time in 8 (the warning then says `content`).
 */
export interface ContentPrint {
  /** The print (layout above), signed 64-bit, as decimal text. */
  fp: string;
  /** The tx_hash as compared (0x-hex in lower case), or null: a derived id is made from it. */
  txHash: string | null;
}

/** What a claim found for one record. */
export type ClaimOutcome =
  /** New: stored under its own id. */
  | true
  /** Sent before with the same content (or content unknown): a duplicate, not stored again. */
  | false
  /** Its id was stored for another payment (another tx_hash): new, stored under a derived id. */
  | { storedAs: string }
  /**
   * Its id (or the derived id, `claimedAs`) was stored before with other content: not stored, the
   * first stays. `fields` names what differs (as far as the prints tell: `content` when they do not).
   */
  | { conflict: string[]; claimedAs?: string };

/** The fields a print covers, in the order of their tags (lowest bits first). */
const CONTENT_FIELDS = ['agent_id', 'endpoint', 'amount', 'asset', 'network', 'payee_address'] as const;
const TAG_BITS = 3;
const TAGS_BITS = CONTENT_FIELDS.length * TAG_BITS;
const LOW_32 = 0xffffffffn;

/** "001.500" -> "1.5", "2.000" -> "2": the numeric value, as text (no JS number). */
function canonicalDecimal(value: string): string {
  const dot = value.indexOf('.');
  const whole = (dot < 0 ? value : value.slice(0, dot)).replace(/^0+(?=\d)/, '') || '0';
  const fraction = dot < 0 ? '' : value.slice(dot + 1).replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : whole;
}

/** Hex strings (addresses, transaction hashes) in one case: 0xAB.. and 0xab.. are one value. */
function canonicalHex(value: string): string {
  return /^0x[0-9a-fA-F]+$/.test(value) ? value.toLowerCase() : value;
}

/** FNV-1a over the UTF-16 code units, then fmix32. */
function hash32(text: string, seed = 0x811c9dc5): number {
  let h = seed;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return fmix32(h);
}

/**
 * hash32 of the print's fields that repeat from record to record (agent, URL, network; asset and
 * payee as canonicalHex), remembered per text as sent: a look-up instead of a pass over 40 to 100
 * characters. The hashes are the same either way.
 */
const textHash = memoized((text: string) => hash32(text), 20_000, 256);
const hexHash = memoized((text: string) => hash32(canonicalHex(text)), 20_000, 256);

const SERVER_ID_PRINT: ContentPrint = { fp: '0', txHash: null };

/**
 * The print of a record (layout at ContentPrint): the amount by its numeric value ("1.5" and
 * "1.500000" are one amount), 0x-hex values (asset, payee, tx_hash) in lower case. No crypto: a
 * few JS passes over the fields, well under a microsecond.
 */
export function contentPrint(
  row: Pick<EventRow, 'agent_id' | 'endpoint' | 'amount' | 'amount_raw' | 'asset' | 'network' | 'payee_address' | 'tx_hash'> & { id?: string },
): ContentPrint {
  // A server id claims nothing: its print would never be read.
  if (row.id?.startsWith('srv_')) return SERVER_ID_PRINT;
  let amount = canonicalDecimal(row.amount);
  // An amount_raw in an asset of unknown decimals is stored as amount 0: the raw value is the payment's.
  if (amount === '0' && /[1-9]/.test(row.amount_raw)) amount = `raw:${canonicalDecimal(row.amount_raw)}`;
  const hashes = [
    textHash(row.agent_id),
    textHash(row.endpoint),
    hash32(amount),
    hexHash(row.asset),
    textHash(row.network),
    hexHash(row.payee_address),
  ];
  let tags = 0;
  let whole = 0x9747b28c;
  for (let f = 0; f < hashes.length; f++) {
    const h = hashes[f]!;
    tags |= (h >>> (32 - TAG_BITS)) << (f * TAG_BITS);
    whole = fmix32(Math.imul(whole ^ h, 0x5bd1e995) + f);
  }
  const low = ((whole >>> TAGS_BITS) * 2 ** TAGS_BITS + tags) >>> 0;
  if (row.tx_hash === null) return { fp: String(low), txHash: null };
  const txHash = canonicalHex(row.tx_hash);
  const txTag = hash32(txHash, 0x01000193) || 1;
  return { fp: int64Text(txTag, low), txHash };
}

/**
 * The signed 64-bit integer whose high and low 32 bits are `hi` and `lo` (unsigned), as decimal
 * text, in plain numbers: the BigInt way (asIntN of a shift and an or, then toString) made five
 * BigInts per record, 7% of what ingest allocated. Exact: every product below stays under 2^53.
 */
export function int64Text(hi: number, lo: number): string {
  let sign = '';
  if (hi >= 0x80000000) {
    // Negative: its magnitude is 2^64 - (hi * 2^32 + lo).
    sign = '-';
    lo = (0x100000000 - lo) % 0x100000000;
    hi = 0xffffffff - hi + (lo === 0 ? 1 : 0);
  }
  // hi * 2^32 + lo = hi * 429496 * 10^4 + (hi * 7296 + lo), since 2^32 = 429496 * 10^4 + 7296.
  const below = hi * 7296 + lo;
  const carry = Math.floor(below / 10_000);
  const high = hi * 429496 + carry;
  const last = below - carry * 10_000;
  return high === 0 ? `${sign}${last}` : `${sign}${high}${String(last).padStart(4, '0')}`;
}

/** The fields two prints' content halves differ in, by their tags; `content` when no tag tells. */
function differingFields(stored: bigint, sent: bigint): string[] {
  const fields: string[] = [];
  if ((stored & LOW_32) === (sent & LOW_32)) return fields;
  const mask = (1n << BigInt(TAG_BITS)) - 1n;
  CONTENT_FIELDS.forEach((field, f) => {
    const shift = BigInt(f * TAG_BITS);
    if (((stored >> shift) & mask) !== ((sent >> shift) & mask)) fields.push(field);
  });
  return fields.length > 0 ? fields : ['content'];
}

/** The tx_hash tag of a print: 0 when the record had no tx_hash. */
function txTagOf(fp: bigint): bigint {
  return (fp >> 32n) & LOW_32;
}

/**
 * The id a second payment under a known id is stored as: `<id>~tx~<first 16 hex of
 * sha256(tx_hash)>`, so the same payment sent again claims the same derived id. An id too long
 * for that keeps its first 88 characters and a hash of the whole (at most 128 characters).
 */
export function derivedId(id: string, txHash: string): string {
  const suffix = `~tx~${crypto.hash('sha256', txHash, 'hex').slice(0, 16)}`;
  if (id.length + suffix.length <= MAX_ID_LENGTH) return `${id}${suffix}`;
  return `${id.slice(0, 88)}~${crypto.hash('sha256', id, 'hex').slice(0, 16)}${suffix}`;
}

/**
 * What claiming asks of an index of claimed ids, whichever store holds it (the claim index of
 * src/ingest/dedup here, PostgreSQL's partitions in src/ingest/shared-log.ts): the claim rules below are written
 * once, as a generator of these questions, and each store answers them its own way.
 */
export type ClaimAsk =
  /**
   * Which of these ids the older days of the window hold: answered with those ids. A store that
   * looks in every day at once (SQLite's claim index) answers with all it holds, today's too.
   */
  | { op: 'older'; teamId: string; ids: readonly string[] }
  /** Insert these ids (and prints) into today's index: answered with the ids inserted, each once (a repeat: its first row). */
  | { op: 'insert'; teamId: string; ids: readonly string[]; fps: readonly (string | null)[] }
  /** The stored prints of known ids (`older`: those an older day holds): answered with a Map id -> print (null: unknown). */
  | { op: 'prints'; teamId: string; ids: readonly string[]; older: ReadonlySet<string> };

/**
 * The claim of one team's ids (see IngestLog.claim for what each outcome means): new ids are
 * inserted into today's index; ids the index held are judged by their prints, and another payment
 * under a known id is claimed again under its derived id (once: a derived id is not derived again).
 */
export function* claimSteps(
  teamId: string,
  ids: readonly string[],
  prints: readonly ContentPrint[] | undefined,
  derived = false,
): Generator<ClaimAsk, ClaimOutcome[], unknown> {
  const client = ids.filter((id) => !id.startsWith('srv_'));
  const fresh = new Set<string>();
  let known = new Set<string>();
  if (client.length > 0) {
    known = new Set((yield { op: 'older', teamId, ids: client }) as string[]);
    const toInsert: string[] = [];
    const fps: (string | null)[] = [];
    ids.forEach((id, i) => {
      if (id.startsWith('srv_') || known.has(id)) return;
      toInsert.push(id);
      fps.push(prints ? prints[i]!.fp : null);
    });
    if (toInsert.length > 0) for (const id of (yield { op: 'insert', teamId, ids: toInsert, fps }) as string[]) fresh.add(id);
  }
  let repeated: number[] | undefined;
  const outcomes = ids.map((id, i): ClaimOutcome => {
    if (id.startsWith('srv_')) return true;
    // An insert lists an id once however often the batch repeats it: only its first row is new.
    if (fresh.delete(id)) return true;
    if (prints) (repeated ??= []).push(i);
    return false;
  });
  if (!repeated) return outcomes;
  // The rows whose id was known (rare): their stored prints decide. The same content is a
  // duplicate (false, already set); another non-null tx_hash than the stored one is another
  // payment, claimed under its derived id; other content, or a tx_hash on one side only, a conflict.
  const stored = (yield { op: 'prints', teamId, ids: [...new Set(repeated.map((i) => ids[i]!))], older: known }) as Map<string, bigint | null>;
  const again: number[] = [];
  for (const i of repeated) {
    const before = stored.get(ids[i]!);
    if (before === undefined || before === null) continue; // unknown content: a duplicate
    const sent = BigInt(prints![i]!.fp);
    const [beforeTx, sentTx] = [txTagOf(before), txTagOf(sent)];
    if (sentTx !== 0n && beforeTx !== 0n && sentTx !== beforeTx) {
      if (derived) outcomes[i] = { conflict: ['tx_hash'] };
      else again.push(i);
      continue;
    }
    const fields = differingFields(before, sent);
    if ((sentTx === 0n) !== (beforeTx === 0n)) fields.push('tx_hash');
    if (fields.length > 0) outcomes[i] = { conflict: fields };
  }
  if (again.length === 0) return outcomes;
  const derivedIds = again.map((i) => derivedId(ids[i]!, prints![i]!.txHash!));
  const claimed = yield* claimSteps(teamId, derivedIds, again.map((i) => prints![i]!), true);
  again.forEach((i, k) => {
    const outcome = claimed[k]!;
    if (outcome === true) outcomes[i] = { storedAs: derivedIds[k]! };
    else if (typeof outcome === 'object' && 'conflict' in outcome) outcomes[i] = { conflict: outcome.conflict, claimedAs: derivedIds[k]! };
    // false: the same payment sent before, a duplicate.
  });
  return outcomes;
}

/**
 * The log a group commit writes into, whichever store holds it: the claim and the append are steps
 * of the group's transaction (src/stores/sql.ts), run synchronously on SQLite and awaited on
 * PostgreSQL (src/ingest/shared-log.ts).
 */
export interface GroupLog {
  claiming(teamId: string, ids: readonly string[], now: number, prints?: readonly ContentPrint[]): Steps<ClaimOutcome[]>;
  /** Appends one team's claimed rows as RowBinary, each row with its position. */
  appending(teamId: string, rows: readonly EventRow[], now: number): Steps<LogChunk[]>;
  /** What rolledBack takes the log back to, read before the transaction. */
  readonly endPos: number;
  rolledBack(endPos: number): void;
}

/**
 * The durable ingest log and its (team, id) index, in the registry's SQLite file. Everything here
 * runs inside the caller's transaction (the group commit), so a record is claimed exactly when its
 * line is appended: a record is a duplicate only if an earlier transaction committed it, and a
 * crash leaves either both or neither.
 *
 * The index (ClaimIndex, src/ingest/dedup/index.ts) appends new ids to a level-0 table in this
 * transaction and finds known ones in its in-memory maps and its sorted runs; a worker thread
 * writes the runs, so what a claim costs does not grow with the day or depend on the ids' order.
 *
 * Each claimed id keeps the print of its record (ContentPrint, column `record_fp`). It is written
 * with the claim and read only for ids that turn out to be known (rare): a known id sent
 * with the same content is a duplicate; with another non-null tx_hash than the stored one it is
 * another payment, claimed again under a derived id; with other content otherwise, a conflict
 * (not stored). Ids claimed before prints were kept have none (NULL): never a conflict.
 */
export class IngestLog implements GroupLog {
  readonly index: ClaimIndex;
  private readonly appendChunk;
  private nextPos: number;

  constructor(db: Registry, windowDays: number, options?: ClaimIndexOptions) {
    this.appendChunk = db.prepare(
      'INSERT INTO ingest_log (first_pos, last_pos, team_id, rows, bytes, committed_at, format, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    );
    // Positions never repeat, even once the log is pruned empty: they name ClickHouse blocks.
    const row = db
      .prepare(
        `SELECT max((SELECT coalesce(max(last_pos), 0) FROM ingest_log), (SELECT loaded_pos FROM ingest_loader),
                    (SELECT coalesce(max(last_pos), 0) FROM ingest_blocks)) AS last`,
      )
      .get() as { last: number };
    this.nextPos = row.last + 1;
    this.index = new ClaimIndex(db, windowDays, options);
  }

  /** The position the next appended record gets. */
  get endPos(): number {
    return this.nextPos;
  }

  /**
   * Claims the client ids of one team's rows, per row (ClaimOutcome): true when this is the first
   * time the team sent that id within the window (first occurrence in the batch included), false
   * for a duplicate; with `prints` (each row's, see contentPrint), a known id sent with other
   * content is a conflict, and with another tx_hash another payment, stored under a derived id.
   * Without prints every known id is a duplicate. Server ids (`srv_...`) are new by construction
   * and claim nothing. Call inside a transaction, with the append of the claimed rows.
   */
  claim(teamId: string, ids: readonly string[], now: number, prints?: readonly ContentPrint[]): ClaimOutcome[] {
    this.index.roll(now);
    const steps = claimSteps(teamId, ids, prints);
    let next = steps.next();
    // The prints found by the first look-up, so the (rare) known ids are not looked up twice.
    let known = new Map<string, bigint | null>();
    while (!next.done) {
      const ask = next.value;
      if (ask.op === 'older') {
        known = this.index.find(ask.teamId, ask.ids);
        next = steps.next([...known.keys()]);
      } else if (ask.op === 'insert') {
        next = steps.next(this.index.insert(ask.teamId, ask.ids, ask.fps));
      } else {
        const wanted = ask.ids.filter((id) => !known.has(id));
        const found = wanted.length > 0 ? this.index.find(ask.teamId, wanted) : new Map<string, bigint | null>();
        for (const id of ask.ids) if (known.has(id)) found.set(id, known.get(id)!);
        next = steps.next(found);
      }
    }
    return next.value;
  }

  /** Resolves once the index has no run left to write (tests, benchmarks). */
  settled(): Promise<void> {
    return this.index.settled();
  }

  /** Stops the index's background work (at shutdown). */
  stop(): void {
    this.index.stop();
  }

  // The steps of GroupLog: this log answers synchronously, with no statement to yield.
  // eslint-disable-next-line require-yield
  *claiming(teamId: string, ids: readonly string[], now: number, prints?: readonly ContentPrint[]): Steps<ClaimOutcome[]> {
    return this.claim(teamId, ids, now, prints);
  }

  // eslint-disable-next-line require-yield
  *appending(teamId: string, rows: readonly EventRow[], now: number): Steps<LogChunk[]> {
    // A view of the writer's buffer (SQLite copies a blob when it is bound), copied for the loader.
    const body = rowBinaryOf(rows, this.nextPos);
    const chunk = this.append(teamId, LOG_FORMAT, body, rows.length, now);
    chunk.body = Buffer.from(body);
    chunk.eventTimes = eventTimesOf(rows);
    return [chunk];
  }

  /**
   * Appends one team's claimed records as a chunk: `body` holds `rows` records in `format`, each
   * with its position from endPos on (what appending writes; tests write other chunks).
   */
  append(teamId: string, format: LogFormat, body: Buffer, rows: number, now: number): LogChunk {
    const chunk: LogChunk = { firstPos: this.nextPos, lastPos: this.nextPos + rows - 1, teamId, rows, bytes: body.length, committedAt: now, format };
    this.appendChunk.run(chunk.firstPos, chunk.lastPos, teamId, rows, chunk.bytes, now, format, body);
    this.nextPos += rows;
    return chunk;
  }

  /**
   * After a rolled-back transaction: positions go back (they stay gap-free; blocks are cut from
   * them), and the index reads its level-0 tables again (what the transaction appended is gone).
   */
  rolledBack(endPos: number): void {
    this.nextPos = endPos;
    this.index.rolledBack();
  }
}

/** The earliest and latest event time of rows (at least one). */
export function eventTimesOf(rows: readonly EventRow[]): { first: number; last: number } {
  let first = Infinity;
  let last = -Infinity;
  for (const row of rows) {
    if (row.event_time < first) first = row.event_time;
    if (row.event_time > last) last = row.event_time;
  }
  return { first, last };
}
