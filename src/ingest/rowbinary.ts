import type { EventRow } from '../domain/record-row.js';

/**
 * The layouts of RowBinary chunks: `rowbinary`, the columns of TSV_COLUMNS; `rowbinary2`, the
 * same and then each record's value, currency and valuation (what every chunk is now). A chunk
 * keeps the layout it was written in, and loads with its columns.
 */
export type RowBinaryLayout = 'rowbinary' | 'rowbinary2';

/** The columns a rowbinary2 row adds after TSV_COLUMNS. */
export const VALUE_COLUMNS = ['value', 'currency', 'valuation'] as const;

/**
 * Event rows in ClickHouse's RowBinary format, the columns of TSV_COLUMNS in their order: what
 * the ingest log's chunks hold: the engine parses it in about half the CPU of a TSV line
 * (docs/performance.md, the loader). Nothing is escaped: strings go as their UTF-8 bytes
 * after their length, numbers and times as little-endian integers, money as the Decimal's
 * integer (units of 10^-18).
 *
 * A chunk written before that is TSV lines (src/ingest/tsv.ts) and loads as it is. What the lines
 * give the loader (where each row starts, its team and id, to cut a block or set a row aside),
 * `rowBinaryBoundaries` gives for RowBinary.
 */

/** The events columns' types, in TSV_COLUMNS order (schema/clickhouse/001, 006, 008). */
const enum Kind {
  Text,
  OptionalText,
  Time,
  OptionalTime,
  Money,
  OptionalMoney,
  UInt16,
  UInt32,
  UInt64,
  Tags,
}

const KINDS: readonly Kind[] = [
  Kind.Text, // team_id
  Kind.Time, // event_time
  Kind.Text, // id
  Kind.Text, // agent_id
  Kind.Text, // endpoint
  Kind.Text, // domain
  Kind.Text, // method
  Kind.Text, // category
  Kind.Money, // amount
  Kind.Text, // amount_text
  Kind.Text, // amount_raw
  Kind.Text, // asset
  Kind.Text, // network
  Kind.Text, // scheme
  Kind.Text, // policy_evaluation
  Kind.OptionalText, // team_label
  Kind.OptionalText, // tx_hash
  Kind.Text, // payer_address
  Kind.Text, // payee_address
  Kind.OptionalText, // facilitator
  Kind.UInt16, // status_code
  Kind.UInt32, // response_time_ms
  Kind.OptionalText, // human_sponsor
  Kind.OptionalText, // policy_id
  Kind.OptionalText, // budget_remaining
  Kind.OptionalText, // task_id
  Kind.OptionalText, // session_id
  Kind.Tags, // tags
  Kind.Text, // metadata
  Kind.OptionalTime, // settled_at
  Kind.Time, // received_at
  Kind.Text, // source
  Kind.Text, // record_extra
  Kind.UInt64, // ingest_seq
  Kind.UInt64, // log_pos
];

/** log_pos: the last column of the first layout. */
const LOG_POS_COLUMN = KINDS.length - 1;

const KINDS_OF: Record<RowBinaryLayout, readonly Kind[]> = {
  rowbinary: KINDS,
  rowbinary2: [...KINDS, Kind.OptionalMoney, Kind.Text, Kind.Text], // value, currency, valuation
};

/** Bytes of the fixed-width kinds (little-endian integers). */
const FIXED_WIDTH = new Map<Kind, number>([
  [Kind.Time, 8],
  [Kind.UInt64, 8],
  [Kind.Money, 16],
  [Kind.UInt16, 2],
  [Kind.UInt32, 4],
]);

const TEN_TO_18 = 10n ** 18n;
const EIGHTEEN_ZEROS = '000000000000000000';
const LOW_64 = 0xffffffffffffffffn;
const TWO_TO_32 = 4_294_967_296;

/**
 * Appends RowBinary rows to one growing buffer (a chunk of the log, or a block): `rows` holds the
 * bytes written so far.
 */
export class RowBinaryWriter {
  private buffer: Buffer;
  private length = 0;

  constructor(
    capacity = 64 * 1024,
    private readonly layout: RowBinaryLayout = 'rowbinary2',
  ) {
    this.buffer = Buffer.allocUnsafe(capacity);
  }

  /** The rows written so far (a view: copy it before writing more). */
  get rows(): Buffer {
    return this.buffer.subarray(0, this.length);
  }

  /** Starts again from no rows, keeping the buffer. */
  reset(): void {
    this.length = 0;
  }

  /** One row: the EVENT_COLUMNS of `row`, then its position in the log. */
  write(row: EventRow, logPos: number): void {
    this.text(row.team_id);
    this.uint64(row.event_time);
    this.text(row.id);
    this.text(row.agent_id);
    this.text(row.endpoint);
    this.text(row.domain);
    this.text(row.method);
    this.text(row.category);
    this.money(row.amount);
    this.text(row.amount_text);
    this.text(row.amount_raw);
    this.text(row.asset);
    this.text(row.network);
    this.text(row.scheme);
    this.text(row.policy_evaluation);
    this.optionalText(row.team_label);
    this.optionalText(row.tx_hash);
    this.text(row.payer_address);
    this.text(row.payee_address);
    this.optionalText(row.facilitator);
    this.reserve(6);
    this.buffer.writeUInt16LE(row.status_code, this.length);
    this.buffer.writeUInt32LE(row.response_time_ms, this.length + 2);
    this.length += 6;
    this.optionalText(row.human_sponsor);
    this.optionalText(row.policy_id);
    this.optionalText(row.budget_remaining);
    this.optionalText(row.task_id);
    this.optionalText(row.session_id);
    this.varint(row.tags.length);
    for (const tag of row.tags) this.text(tag);
    this.text(row.metadata);
    if (row.settled_at === null) this.byte(1);
    else {
      this.byte(0);
      this.uint64(row.settled_at);
    }
    this.uint64(row.received_at);
    this.text(row.source);
    this.text(row.record_extra);
    this.uint64(row.ingest_seq);
    this.uint64(logPos);
    if (this.layout === 'rowbinary') return;
    if (row.value === null) this.byte(1);
    else {
      this.byte(0);
      this.money(row.value);
    }
    this.text(row.currency);
    this.text(row.valuation);
  }

  private reserve(bytes: number): void {
    if (this.length + bytes <= this.buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.length + bytes));
    this.buffer.copy(grown, 0, 0, this.length);
    this.buffer = grown;
  }

  private byte(value: number): void {
    this.reserve(1);
    this.buffer[this.length++] = value;
  }

  private varint(value: number): void {
    this.reserve(5);
    let v = value;
    while (v >= 0x80) {
      this.buffer[this.length++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    this.buffer[this.length++] = v;
  }

  /**
   * A String: its UTF-8 length as a varint, then the bytes. Most texts are short ASCII (ids,
   * names, URLs, addresses): copied a character at a time, which costs less than a call into
   * Buffer.write per field (--cpu-prof: the wrapper and utf8Write were 3.3% of the event loop).
   */
  private text(value: string): void {
    const n = value.length;
    if (n < 0x80) {
      this.reserve(n + 1);
      const buffer = this.buffer;
      const at = this.length + 1;
      let i = 0;
      while (i < n) {
        const c = value.charCodeAt(i);
        if (c >= 0x80) break;
        buffer[at + i++] = c;
      }
      if (i === n) {
        buffer[at - 1] = n;
        this.length = at + n;
        return;
      }
    }
    this.utf8Text(value);
  }

  /** Any String, written in place, then moved if the length takes more than a byte. */
  private utf8Text(value: string): void {
    this.reserve(value.length * 3 + 5);
    const start = this.length;
    const bytes = this.buffer.write(value, start + 1);
    if (bytes < 0x80) {
      this.buffer[start] = bytes;
      this.length = start + 1 + bytes;
      return;
    }
    let size = 0;
    for (let v = bytes; v > 0; v >>>= 7) size++;
    this.buffer.copyWithin(start + size, start + 1, start + 1 + bytes);
    let v = bytes;
    for (let k = 0; k < size; k++, v >>>= 7) this.buffer[start + k] = (v & 0x7f) | (k < size - 1 ? 0x80 : 0);
    this.length = start + size + bytes;
  }

  private optionalText(value: string | null): void {
    if (value === null) this.byte(1);
    else {
      this.byte(0);
      this.text(value);
    }
  }

  /** A non-negative integer below 2^53 (times in ms, storage order, positions) as a little-endian 64-bit integer. */
  private uint64(value: number): void {
    this.reserve(8);
    this.buffer.writeUInt32LE(value % TWO_TO_32, this.length);
    this.buffer.writeUInt32LE(Math.floor(value / TWO_TO_32), this.length + 4);
    this.length += 8;
  }

  /**
   * Decimal(38, 18): the amount's digits as an Int128 of 10^-18 units, little-endian (the amount is
   * validated: at most 20 integer and 18 fractional digits, no sign). Summed in eight 16-bit limbs,
   * seven digits at a time (a limb times 10^7 plus a carry stays below 2^53): no BigInt, which
   * allocated per record (1.5% of the event loop). Anything else takes the BigInt way.
   */
  private money(amount: string): void {
    const dot = amount.indexOf('.');
    const whole = dot < 0 ? amount.length : dot;
    const fraction = dot < 0 ? 0 : amount.length - dot - 1;
    if (whole < 1 || whole > 20 || (dot >= 0 && (fraction < 1 || fraction > 18))) return this.bigMoney(amount);
    const limbs = this.limbs;
    limbs.fill(0);
    let chunk = 0;
    let chunkDigits = 0;
    // The digits without the dot, then zeros up to 18 fractional digits.
    const digits = whole + 18;
    for (let d = 0; d < digits; d++) {
      let digit = 0;
      if (d < whole) digit = amount.charCodeAt(d) - 48;
      else if (d - whole < fraction) digit = amount.charCodeAt(d + 1) - 48;
      if (digit < 0 || digit > 9) return this.bigMoney(amount);
      chunk = chunk * 10 + digit;
      if (++chunkDigits === 7 || d === digits - 1) {
        let carry = chunk;
        const scale = 10 ** chunkDigits;
        for (let l = 0; l < 8; l++) {
          const v = limbs[l]! * scale + carry;
          limbs[l] = v % 65_536;
          carry = Math.floor(v / 65_536);
        }
        chunk = 0;
        chunkDigits = 0;
      }
    }
    this.reserve(16);
    for (let l = 0; l < 8; l++) {
      this.buffer[this.length++] = limbs[l]! & 0xff;
      this.buffer[this.length++] = limbs[l]! >>> 8;
    }
  }

  private readonly limbs = [0, 0, 0, 0, 0, 0, 0, 0];

  private bigMoney(amount: string): void {
    const dot = amount.indexOf('.');
    const units = dot < 0 ? BigInt(amount) * TEN_TO_18 : BigInt(amount.slice(0, dot) + (amount.slice(dot + 1) + EIGHTEEN_ZEROS).slice(0, 18));
    this.reserve(16);
    this.buffer.writeBigUInt64LE(units & LOW_64, this.length);
    this.buffer.writeBigInt64LE(units >> 64n, this.length + 8);
    this.length += 16;
  }
}

/** The group commit's writers: one chunk at a time, synchronously, so their buffers are reused. */
const chunkWriters: Record<RowBinaryLayout, RowBinaryWriter | undefined> = { rowbinary: undefined, rowbinary2: undefined };

/**
 * Rows as one RowBinary body in `layout` (the current one unless a test writes an older chunk),
 * positions from `firstPos`: a view of a buffer the next call writes over (bind it at once, or copy it).
 */
export function rowBinaryOf(rows: readonly EventRow[], firstPos: number, layout: RowBinaryLayout = 'rowbinary2'): Buffer {
  const chunkWriter = (chunkWriters[layout] ??= new RowBinaryWriter(64 * 1024, layout));
  chunkWriter.reset();
  for (let i = 0; i < rows.length; i++) chunkWriter.write(rows[i]!, firstPos + i);
  return chunkWriter.rows;
}

/** Where each row of a RowBinary body starts (and, last, where the body ends), with its team and id. */
export interface RowBinaryBoundaries {
  /** starts[i] is row i's first byte; starts[rows] is the body's length. */
  starts: number[];
  teamIds: string[];
  ids: string[];
  /** Each row's log_pos. */
  positions: number[];
}

/**
 * Reads a body of rows written by RowBinaryWriter far enough to find each row's start, team and id
 * (what the loader needs to cut a block between rows and to set one aside). Throws on a body that
 * ends inside a row.
 */
export function rowBinaryBoundaries(body: Buffer, layout: RowBinaryLayout): RowBinaryBoundaries {
  const kinds = KINDS_OF[layout];
  const starts: number[] = [];
  const teamIds: string[] = [];
  const ids: string[] = [];
  const positions: number[] = [];
  let at = 0;
  const need = (bytes: number) => {
    if (at + bytes > body.length) throw new Error(`RowBinary body ends inside a row (byte ${at} of ${body.length})`);
  };
  const varint = () => {
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      need(1);
      const b = body[at++]!;
      value += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return value;
      if (shift > 28) throw new Error(`RowBinary length too long at byte ${at}`);
    }
  };
  const skip = (bytes: number) => {
    need(bytes);
    at += bytes;
  };
  const text = () => {
    const bytes = varint();
    skip(bytes);
    return [at - bytes, at] as const;
  };
  while (at < body.length) {
    starts.push(at);
    for (let column = 0; column < kinds.length; column++) {
      const kind = kinds[column]!;
      const width = FIXED_WIDTH.get(kind);
      if (width !== undefined) {
        skip(width);
        if (column === LOG_POS_COLUMN) positions.push(body.readUInt32LE(at - 8) + body.readUInt32LE(at - 4) * TWO_TO_32);
        continue;
      }
      if (kind === Kind.Text) {
        const [from, to] = text();
        if (column === 0) teamIds.push(body.toString('utf8', from, to));
        else if (column === 2) ids.push(body.toString('utf8', from, to));
      } else if (kind === Kind.Tags) {
        const count = varint();
        for (let t = 0; t < count; t++) text();
      } else {
        // Nullable: a byte, 1 for NULL, else the value.
        skip(1);
        if (body[at - 1] === 0) {
          if (kind === Kind.OptionalText) text();
          else skip(kind === Kind.OptionalMoney ? 16 : 8);
        }
      }
    }
  }
  starts.push(at);
  return { starts, teamIds, ids, positions };
}
