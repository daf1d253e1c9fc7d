import crypto from 'node:crypto';
import type { Registry } from '../stores/sqlite.js';
import type { Steps } from '../stores/sql.js';
import { IdFilter } from './id-filter.js';
import type { EventRow } from './records.js';

/** What one append wrote: a chunk of the log, positions firstPos..lastPos of one team. */
export interface LogChunk {
  firstPos: number;
  lastPos: number;
  teamId: string;
  rows: number;
  bytes: number;
  committedAt: number;
}

const DAY_MS = 86_400_000;
const PARTITION = /^ingest_ids_(\d{8})$/;
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

/** murmur3's final avalanche: every output bit depends on every input bit. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** FNV-1a over the UTF-16 code units, then fmix32. */
function hash32(text: string, seed = 0x811c9dc5): number {
  let h = seed;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return fmix32(h);
}

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
  const parts = [row.agent_id, row.endpoint, amount, canonicalHex(row.asset), row.network, canonicalHex(row.payee_address)];
  let tags = 0;
  let whole = 0x9747b28c;
  for (let f = 0; f < parts.length; f++) {
    const h = hash32(parts[f]!);
    tags |= (h >>> (32 - TAG_BITS)) << (f * TAG_BITS);
    whole = fmix32(Math.imul(whole ^ h, 0x5bd1e995) + f);
  }
  const low = ((whole >>> TAGS_BITS) * 2 ** TAGS_BITS + tags) >>> 0;
  if (row.tx_hash === null) return { fp: String(low), txHash: null };
  const txHash = canonicalHex(row.tx_hash);
  const txTag = hash32(txHash, 0x01000193) || 1;
  return { fp: BigInt.asIntN(64, (BigInt(txTag) << 32n) | BigInt(low)).toString(), txHash };
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
 * What claiming asks of an index of claimed ids, whichever store holds it (the SQLite day tables
 * here, PostgreSQL's partitions in src/ingest/shared-log.ts): the claim rules below are written
 * once, as a generator of these questions, and each store answers them its own way.
 */
export type ClaimAsk =
  /** Which of these ids the older days of the window hold: answered with those ids. */
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
  /** Appends one team's claimed rows; each row's line is encoded with its position. */
  appending<Row>(teamId: string, rows: readonly Row[], encode: (row: Row, pos: number) => string, now: number): Steps<LogChunk[]>;
  /** What rolledBack takes the log back to, read before the transaction. */
  readonly endPos: number;
  rolledBack(endPos: number): void;
}

/** `ingest_ids_YYYYMMDD` of the UTC day of `ms`. */
function partitionOf(ms: number): string {
  return `ingest_ids_${new Date(ms).toISOString().slice(0, 10).replaceAll('-', '')}`;
}

/**
 * The durable ingest log and its (team, id) index, in the registry's SQLite file. Everything here
 * runs inside the caller's transaction (the group commit), so a record is claimed exactly when its
 * line is appended: a record is a duplicate only if an earlier transaction committed it, and a
 * crash leaves either both or neither.
 *
 * The index is partitioned by the UTC day of the claim: one WITHOUT ROWID table per day
 * (`ingest_ids_YYYYMMDD`), the days of the window kept, older tables dropped whole. A claim inserts
 * the ids into today's table and looks them up in the older days' tables: one statement each per
 * team and group commit, the ids (with their prints) passed as one JSON array, so the per-id work
 * stays in SQLite.
 *
 * Looking in seven older days costs more than the claim itself (npm run bench:dedup), and a new
 * id, the usual case, is in none of them: each day has an in-memory Bloom filter (IdFilter, about
 * 1.25 bytes per id), and only ids some filter may hold are looked up. Filters are filled as ids
 * are claimed, and from the day's table in the background after a start; until every older day's
 * filter is complete, every id is looked up in SQLite as before.
 *
 * Each claimed id keeps the print of its record (ContentPrint, column `record_fp`). It is written
 * with the claim and read only for ids that turn out to be known (rare): a known id sent
 * with the same content is a duplicate; with another non-null tx_hash than the stored one it is
 * another payment, claimed again under a derived id; with other content otherwise, a conflict
 * (not stored). Ids claimed before prints were kept have none (NULL): never a conflict.
 */
export class IngestLog implements GroupLog {
  private partitions: string[] = [];
  private today = '';
  private claimToday: { run(teamId: string, rows: string): { id: string }[] } | undefined;
  private seenBefore: ((teamId: string, ids: string) => { id: string }[]) | undefined;
  /** The stored prints of some ids, per partition (today's first, then newest first). */
  private printsIn = new Map<string, (teamId: string, ids: string) => { id: string; record_fp: bigint | null }[]>();
  private readonly appendChunk;
  private nextPos: number;
  private readonly filters = new Map<string, IdFilter>();
  private readonly buildCursors = new Map<string, [string, string]>();
  private building: NodeJS.Immediate | undefined;
  private stopped = false;
  /** Ids looked up in the older days' tables so far (the filters' maybes, or all while they build). */
  olderLookups = 0;

  constructor(
    private readonly db: Registry,
    private readonly windowDays: number,
  ) {
    this.appendChunk = db.prepare(
      'INSERT INTO ingest_log (first_pos, last_pos, team_id, rows, bytes, committed_at, body) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    // Positions never repeat, even once the log is pruned empty: they name ClickHouse blocks.
    const row = db
      .prepare(
        `SELECT max((SELECT coalesce(max(last_pos), 0) FROM ingest_log), (SELECT loaded_pos FROM ingest_loader),
                    (SELECT coalesce(max(last_pos), 0) FROM ingest_blocks)) AS last`,
      )
      .get() as { last: number };
    this.nextPos = row.last + 1;
    // Day tables created before prints were kept get the column (NULL: unknown, never a conflict).
    for (const { name } of db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'ingest_ids_%'").all() as { name: string }[]) {
      if (!PARTITION.test(name)) continue;
      const columns = new Set((db.prepare(`PRAGMA table_info(${name})`).all() as { name: string }[]).map((c) => c.name));
      if (!columns.has('record_fp')) db.exec(`ALTER TABLE ${name} ADD COLUMN record_fp INTEGER`);
    }
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
    this.rollPartitions(now);
    const steps = claimSteps(teamId, ids, prints);
    let next = steps.next();
    while (!next.done) {
      const ask = next.value;
      next = steps.next(
        ask.op === 'older' ? this.lookUpOlder(ask.teamId, ask.ids) : ask.op === 'insert' ? this.insertToday(ask.teamId, ask.ids, ask.fps) : this.storedPrints(ask.teamId, ask.ids, ask.older),
      );
    }
    return next.value;
  }

  /** Inserts ids into today's table (a repeated id: its first row); returns those inserted, each once. */
  private insertToday(teamId: string, ids: readonly string[], fps: readonly (string | null)[]): string[] {
    // One JSON object, id: print (a repeated id is a repeated member; the first is inserted).
    const members = ids.map((id, i) => `${JSON.stringify(id)}:${fps[i] ?? 'null'}`);
    const today = this.filters.get(this.today)!;
    return this.claimToday!.run(teamId, `{${members.join(',')}}`).map((r) => {
      today.add(teamId, r.id);
      return r.id;
    });
  }

  /** The stored prints of known ids (NULL: claimed before prints were kept): today's table for ids not in an older day, else the older days, newest first. */
  private storedPrints(teamId: string, ids: readonly string[], older: ReadonlySet<string>): Map<string, bigint | null> {
    const found = new Map<string, bigint | null>();
    const read = (partition: string, wanted: string[]) => {
      for (const r of this.printsIn.get(partition)!(teamId, JSON.stringify(wanted))) found.set(r.id, r.record_fp);
    };
    const todays = ids.filter((id) => !older.has(id));
    if (todays.length > 0) read(this.today, todays);
    let rest = ids.filter((id) => older.has(id));
    for (const partition of this.partitions) {
      if (rest.length === 0) break;
      read(partition, rest);
      rest = rest.filter((id) => !found.has(id));
    }
    return found;
  }

  /** The ids the older days of the window hold: the filters first, SQLite for their maybes. */
  private lookUpOlder(teamId: string, ids: readonly string[]): string[] {
    if (!this.seenBefore) return [];
    let candidates = ids;
    if (this.partitions.every((p) => this.filters.get(p)?.complete)) {
      const filters = this.partitions.map((p) => this.filters.get(p)!);
      candidates = ids.filter((id) => filters.some((f) => f.mayHave(teamId, id)));
      if (candidates.length === 0) return [];
    }
    this.olderLookups += candidates.length;
    return this.seenBefore(teamId, JSON.stringify(candidates)).map((r) => r.id);
  }

  /** Resolves once every day's filter is complete (tests, benchmarks). */
  async filtersReady(): Promise<void> {
    while (this.building) await new Promise((resolve) => setImmediate(resolve));
  }

  /** Stops filling filters in the background (at shutdown). */
  stop(): void {
    this.stopped = true;
    if (this.building) clearImmediate(this.building);
    this.building = undefined;
  }

  /**
   * Fills incomplete filters from their day's table, 5,000 ids per turn of the event loop (keyset
   * pages, so no read transaction stays open between turns). A day dropped meanwhile is let go;
   * any other failure leaves the filter incomplete, and its day is looked up in SQLite.
   */
  private buildFilters(): void {
    if (this.building || this.stopped) return;
    const step = () => {
      this.building = undefined;
      const pending = [...this.filters].find(([, f]) => !f.complete);
      if (!pending || this.stopped) return;
      const [name, filter] = pending;
      const [team, id] = this.buildCursors.get(name) ?? ['', ''];
      let rows: { team_id: string; id: string }[];
      try {
        rows = this.db
          .prepare(`SELECT team_id, id FROM ${name} WHERE (team_id, id) > (?, ?) ORDER BY team_id, id LIMIT 5000`)
          .all(team, id) as { team_id: string; id: string }[];
      } catch {
        this.filters.delete(name);
        this.buildCursors.delete(name);
        if (this.filters.size > 0) this.building = setImmediate(step);
        return;
      }
      for (const r of rows) filter.add(r.team_id, r.id);
      if (rows.length < 5000) {
        filter.complete = true;
        this.buildCursors.delete(name);
      } else {
        const last = rows.at(-1)!;
        this.buildCursors.set(name, [last.team_id, last.id]);
      }
      this.building = setImmediate(step);
    };
    this.building = setImmediate(step);
  }

  // The steps of GroupLog: this log answers synchronously, with no statement to yield.
  // eslint-disable-next-line require-yield
  *claiming(teamId: string, ids: readonly string[], now: number, prints?: readonly ContentPrint[]): Steps<ClaimOutcome[]> {
    return this.claim(teamId, ids, now, prints);
  }

  // eslint-disable-next-line require-yield
  *appending<Row>(teamId: string, rows: readonly Row[], encode: (row: Row, pos: number) => string, now: number): Steps<LogChunk[]> {
    const first = this.nextPos;
    return [this.append(teamId, rows.map((row, i) => encode(row, first + i)), now)];
  }

  /** Appends one team's claimed rows as a chunk of TSV lines; returns its positions. */
  append(teamId: string, lines: readonly string[], now: number): LogChunk {
    const body = Buffer.from(lines.join(''));
    const chunk = { firstPos: this.nextPos, lastPos: this.nextPos + lines.length - 1, teamId, rows: lines.length, bytes: body.length, committedAt: now };
    this.appendChunk.run(chunk.firstPos, chunk.lastPos, teamId, chunk.rows, chunk.bytes, now, body);
    this.nextPos += lines.length;
    return chunk;
  }

  /**
   * After a rolled-back transaction: positions go back (they stay gap-free; blocks are cut from
   * them), and today's partition is looked up again (its CREATE may have been rolled back too).
   */
  rolledBack(endPos: number): void {
    this.nextPos = endPos;
    this.today = '';
  }

  /**
   * Keeps today's partition and the `windowDays` before it: an id is remembered for at least
   * windowDays whole days. Older partitions are dropped whole (once a day, at the first claim of
   * a new UTC day).
   */
  private rollPartitions(now: number): void {
    const today = partitionOf(now);
    if (today === this.today) return;
    const oldest = partitionOf(now - this.windowDays * DAY_MS);
    const existing = () =>
      (this.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'ingest_ids_%'").all() as { name: string }[])
        .map((r) => r.name)
        .filter((name) => PARTITION.test(name))
        .sort();
    if (!existing().includes(today)) {
      this.db.exec(
        `CREATE TABLE ${today} (team_id TEXT NOT NULL, id TEXT NOT NULL, record_fp INTEGER, PRIMARY KEY (team_id, id)) WITHOUT ROWID`,
      );
      // A new day's table is empty: its filter is complete from the start.
      const filter = new IdFilter();
      filter.complete = true;
      this.filters.set(today, filter);
    }
    const names = existing();
    for (const name of names) {
      if (name >= oldest) continue;
      this.db.exec(`DROP TABLE ${name}`);
      this.filters.delete(name);
    }
    this.partitions = names.filter((name) => name >= oldest && name !== today).reverse(); // newest first
    this.today = today;
    // Days this process has not filled a filter for (it started after they began) get one from their table.
    for (const name of [today, ...this.partitions]) if (!this.filters.has(name)) this.filters.set(name, new IdFilter());
    this.buildFilters();
    // Rows as the members of one JSON object, id: print (an integer, or null). No SQL function
    // here: a statement calling one may fail midway, so SQLite gives it a statement journal, a
    // temporary file holding a copy of every page it changes (about 30% more claim time).
    const claim = this.db.prepare(
      `INSERT OR IGNORE INTO ${today} (team_id, id, record_fp) SELECT @team, key, value FROM json_each(@rows) WHERE true RETURNING id`,
    );
    this.claimToday = { run: (team, rows) => claim.all({ team, rows }) as { id: string }[] };
    this.printsIn.clear();
    for (const name of [today, ...this.partitions]) {
      // Read as bigint: the prints use all 64 bits.
      const prints = this.db
        .prepare(`SELECT t.id, t.record_fp FROM json_each(@ids) AS j CROSS JOIN ${name} AS t ON t.team_id = @team AND t.id = j.value`)
        .safeIntegers(true);
      this.printsIn.set(name, (team, ids) => prints.all({ team, ids }) as { id: string; record_fp: bigint | null }[]);
    }
    if (this.partitions.length === 0) {
      this.seenBefore = undefined;
      return;
    }
    const exists = this.partitions.map((p) => `EXISTS (SELECT 1 FROM ${p} WHERE team_id = @team AND id = j.value)`).join(' OR ');
    const seen = this.db.prepare(`SELECT j.value AS id FROM json_each(@ids) AS j WHERE ${exists}`);
    this.seenBefore = (team, ids) => seen.all({ team, ids }) as { id: string }[];
  }

  /** The partition tables kept now, newest first (today's included). */
  partitionNames(): string[] {
    return [this.today, ...this.partitions].filter(Boolean);
  }
}
