import { InvalidInput } from '../domain/errors.js';
import type { SchemaRegistry } from '../http/validation.js';
import { recordToRow, type EventRow, type IngestSource, type RecordRules } from './records.js';
import type { Metrics } from '../metrics/metrics.js';
import type { GroupCommit } from './group-commit.js';
import type { Logger } from 'pino';
import { BUILT_IN_BOOK, bookDecimals } from '../domain/rates.js';
import { assetDecimals, rawToAmount } from '../domain/assets.js';
import type { RateBooks } from '../rates/books.js';
import { valueRow } from './valuation.js';

/** A batch logs at most this many of its rejected records' errors (the count is always whole). */
const LOGGED_ERRORS = 20;
/** A batch logs at most this many ids of its conflicting records. */
const LOGGED_CONFLICT_IDS = 5;

/** One invalid field of one record of a batch. */
export interface RecordError {
  index: number;
  field: string;
  message: string;
}

export interface IngestResult {
  /** Valid records: stored now, or not stored as duplicates or conflicts. */
  ingested: number;
  duplicates: number;
  /** Records whose id the team had stored with other content: not stored (a warning each). */
  conflicts: number;
  errors: RecordError[];
  /** Stored records that differ from what was sent, or are not counted as spend, and why; and each conflict (field id). */
  warnings: RecordError[];
  alerts_created: number;
}

/**
 * The one pipeline behind both ingest routes: validate each record on its own, append the valid
 * ones to the ingest log exactly once (the group commit also evaluates them and registers new
 * agents), and report per-record errors.
 */
export class Ingestor {
  constructor(
    private readonly schemas: SchemaRegistry,
    private readonly commit: GroupCommit,
    private readonly metrics?: Metrics,
    private readonly rules: RecordRules = {},
    /** The teams' currencies and rates (without: every team values by the built-in pegs, in USD). */
    private readonly rates?: Pick<RateBooks, 'book' | 'bookFrom'>,
  ) {}

  /**
   * `log` (the request's logger) gets a warning naming each rejected record's index, field and
   * reason. `plain`: the records come from a body that scanned plain (see recordToRow).
   */
  async ingest(teamId: string, records: readonly unknown[], source: IngestSource, log?: Logger, plain = false): Promise<IngestResult> {
    const receivedAt = Date.now();
    const book = this.rates ? await this.rates.book(teamId) : BUILT_IN_BOOK;
    const rows: EventRow[] = [];
    /** The batch index of each row. */
    const indexOf: number[] = [];
    const errors: RecordError[] = [];
    const warnings: RecordError[] = [];
    /** Rows older than the book's horizon, valued below from the versions of their time. */
    let older: number[] | undefined;
    records.forEach((record, index) => {
      const outcome = recordToRow(record, this.schemas, teamId, source, receivedAt, this.rules, plain, book);
      if (outcome.ok) {
        if (outcome.older) (older ??= []).push(rows.length);
        rows.push(outcome.row);
        indexOf.push(index);
        for (const w of outcome.warnings) warnings.push({ index, ...w });
      } else for (const e of outcome.errors) errors.push({ index, ...e });
    });
    if (older) {
      await this.valueOlder(teamId, book.currency, older.map((i) => rows[i]!), older.map((i) => indexOf[i]!), warnings);
      warnings.sort((a, b) => a.index - b.index);
    }
    this.metrics?.ingestRecords.inc({ outcome: 'invalid' }, records.length - rows.length);
    if (errors.length > 0) {
      // Where and why, never the record itself: its fields may be what the sender must not leak.
      log?.warn(
        { teamId, source, rejectedRecords: records.length - rows.length, errors: errors.slice(0, LOGGED_ERRORS), moreErrors: Math.max(0, errors.length - LOGGED_ERRORS) },
        'ingest: records rejected',
      );
    }
    if (records.length === 0) return { ingested: 0, duplicates: 0, conflicts: 0, errors: [], warnings: [], alerts_created: 0 };
    if (rows.length === 0) {
      // Named as the route's body names its list: events[i] on POST /events, records[i] from the SDK.
      const list = source === 'events' ? 'events' : 'records';
      const first = errors[0];
      const where = first ? `${list}[${first.index}]${first.field ? `.${first.field}` : ''} ${first.message}` : '';
      const message = errors.length === 1 ? `No record of the batch is valid: ${where}` : `No record of the batch is valid (${errors.length} problems, first: ${where})`;
      throw new InvalidInput(message, errors);
    }
    const started = performance.now();
    const outcome = await this.commit.write(teamId, rows, { book });
    this.metrics?.ackSeconds.observe((performance.now() - started) / 1000);
    this.metrics?.ingestRecords.inc({ outcome: 'accepted' }, outcome.stored);
    this.metrics?.ingestRecords.inc({ outcome: 'duplicate' }, outcome.duplicates);
    for (const w of outcome.warnings) {
      const index = indexOf[w.row]!;
      // A record without an asset that took its authorization's: the commit's word replaces "not given, unvalued".
      if (w.field === 'asset') removeWarning(warnings, index, 'asset');
      warnings.push({ index, field: w.field, message: w.message });
    }
    const conflicts = outcome.conflicts;
    if (conflicts.length > 0) {
      this.metrics?.ingestRecords.inc({ outcome: 'conflict' }, conflicts.length);
      for (const c of conflicts) {
        const sent = c.claimedAs ? `id "${c.id}" with this tx_hash (stored as "${c.claimedAs}")` : `id "${c.id}"`;
        warnings.push({ index: indexOf[c.index]!, field: 'id', message: `${sent} was stored before with different content (${c.fields.join(', ')}): this record was not stored` });
      }
      // Which ids, never the records' content.
      log?.warn(
        { teamId, source, conflicts: conflicts.length, ids: conflicts.slice(0, LOGGED_CONFLICT_IDS).map((c) => c.id) },
        'ingest: records conflict with stored ones (same id, different content); not stored',
      );
    }
    // The commit's warnings and conflicts come after the validation's: one order, by record.
    if (outcome.warnings.length > 0 || conflicts.length > 0) warnings.sort((a, b) => a.index - b.index);
    return { ingested: rows.length, duplicates: outcome.duplicates, conflicts: conflicts.length, errors, warnings, alerts_created: outcome.alertsCreated };
  }

  /**
   * The record of POST /authorizations/:id/capture: validated as any record, and stored only if it
   * captures its authorization in the commit (false: the authorization was not held, nothing stored).
   */
  async captureRecord(teamId: string, record: Record<string, unknown>): Promise<boolean> {
    const book = this.rates ? await this.rates.book(teamId) : BUILT_IN_BOOK;
    const outcome = recordToRow(record, this.schemas, teamId, 'events', Date.now(), this.rules, false, book);
    if (!outcome.ok) throw new InvalidInput('The capture record is invalid', outcome.errors);
    if (outcome.older) await this.valueOlder(teamId, book.currency, [outcome.row], [0], []);
    const result = await this.commit.write(teamId, [outcome.row], { captureOnly: true, book });
    this.metrics?.ingestRecords.inc({ outcome: 'accepted' }, result.stored);
    this.metrics?.ingestRecords.inc({ outcome: 'duplicate' }, result.duplicates);
    return result.refused === 0;
  }

  /**
   * An atomic amount of `asset` as an amount, by the asset table records use (the built-in tokens,
   * ASSET_DECIMALS, the decimals of the team's rate); undefined when its decimals are unknown.
   */
  async amountFromRaw(teamId: string, asset: string, raw: string): Promise<string | undefined> {
    const decimals = (this.rules.decimalsOf ?? assetDecimals)(asset) ?? bookDecimals(this.rates ? await this.rates.book(teamId) : BUILT_IN_BOOK, asset);
    return decimals === undefined ? undefined : rawToAmount(raw, decimals);
  }

  /** Values rows older than their book's horizon from the rates of their time: one read of the versions since the earliest. */
  private async valueOlder(teamId: string, currency: string, rows: readonly EventRow[], indexes: readonly number[], warnings: RecordError[]): Promise<void> {
    const earliest = rows.reduce((min, r) => Math.min(min, r.event_time), Infinity);
    const past = this.rates ? await this.rates.bookFrom(teamId, earliest, currency) : BUILT_IN_BOOK;
    rows.forEach((row, k) => {
      const unvalued = valueRow(row, past);
      if (unvalued) warnings.push({ index: indexes[k]!, ...unvalued });
    });
  }
}

function removeWarning(warnings: RecordError[], index: number, field: string): void {
  const at = warnings.findIndex((w) => w.index === index && w.field === field);
  if (at >= 0) warnings.splice(at, 1);
}
