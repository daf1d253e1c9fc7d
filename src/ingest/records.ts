import crypto from 'node:crypto';
import { hasNul, ILL_FORMED, NUL_REFUSED, RESERVED_KEYS, wellFormed } from '../http/body-shape.js';
import type { FieldError } from '../http/errors.js';
import type { SchemaRegistry } from '../http/validation.js';
import { assetDecimals, rawToAmount, type DecimalsOf } from '../domain/assets.js';
import { categorize } from '../domain/categories.js';
import { memoized } from '../domain/memo.js';
import { caip2Network } from '../domain/networks.js';
import { BUILT_IN_BOOK, bookDecimals, type RateBook } from '../domain/rates.js';
import { leaveUnvalued, valueRow } from './valuation.js';
import type { EventRow, IngestSource } from '../domain/record-row.js';

export type { EventRow, IngestSource };

/** An incoming record after schema validation (audit-record.json). */
export interface AuditRecordInput {
  id?: string;
  agent_id: string;
  endpoint: string;
  method: string;
  amount?: string;
  amount_raw?: string;
  asset?: string;
  network?: string;
  scheme?: string | null;
  policy_evaluation?: 'allowed' | 'flagged' | 'blocked';
  team?: string | null;
  tx_hash?: string | null;
  payer_address?: string | null;
  payee_address?: string | null;
  facilitator?: string | null;
  status_code?: number;
  response_time_ms?: number;
  tags?: string[];
  metadata?: Record<string, unknown>;
  category?: string;
  created_at?: number | string;
  timestamp?: number | string;
  settled_at?: number | string | null;
  human_sponsor?: string | null;
  policy_id?: string | null;
  budget_remaining?: string | null;
  task_id?: string | null;
  session_id?: string | null;
  /** The authorization this payment captures (POST /authorizations); also read from metadata.authorization_id. */
  authorization_id?: string;
}


/**
 * Fields of the SDK's AuditRecord. Each is kept by a column, so the record can be rebuilt exactly;
 * anything else a client sends goes to record_extra.
 */
const AUDIT_RECORD_FIELDS = new Set([
  'id', 'agent_id', 'team', 'human_sponsor', 'amount', 'amount_raw', 'asset', 'network', 'scheme', 'tx_hash',
  'payer_address', 'payee_address', 'facilitator', 'endpoint', 'method', 'status_code', 'response_time_ms',
  'policy_id', 'policy_evaluation', 'budget_remaining', 'task_id', 'session_id', 'metadata', 'created_at',
  'settled_at', 'tags',
]);

/** Columns that hold '' for "not sent": a null sent there is kept in record_extra. */
const NOT_NULL_TEXT_FIELDS = ['scheme', 'payer_address', 'payee_address', 'asset', 'network', 'amount_raw'] as const;

/**
 * What the columns do not keep of a record: unknown fields, values a column normalises (a network
 * name mapped to CAIP-2, a lower-case method, an ISO time), and nulls where a column has ''.
 * Empty for a record as the SDK builds it, so the common case costs nothing.
 */
function recordExtra(input: Record<string, unknown>, record: AuditRecordInput, network: string, method: string, clientTime: ClientTime | undefined): string {
  let extra: Record<string, unknown> | undefined;
  const keep = (key: string, value: unknown) => ((extra ??= {})[key] = value);
  // for-in, not Object.keys: no array of keys per record (3.7% of what ingest allocated). A parsed
  // record is a plain object whose keys are its own (reserved keys were refused by the walk).
  for (const key in input) if (!AUDIT_RECORD_FIELDS.has(key)) keep(key, input[key]);
  if (record.network !== undefined && record.network !== network) keep('network', record.network);
  if (record.method !== method) keep('method', record.method);
  // A time too far ahead was replaced by the receive time; the client's own is kept beside it.
  if (clientTime) keep(`client_${clientTime.field}`, clientTime.value);
  else if (typeof record.created_at === 'string') keep('created_at', record.created_at);
  if (typeof record.settled_at === 'string') keep('settled_at', record.settled_at);
  for (const key of NOT_NULL_TEXT_FIELDS) if (input[key] === null) keep(key, null);
  return extra ? JSON.stringify(extra) : '';
}

/** The columns of EventRow in insert order; the writer sends rows as arrays in this order. */
export const EVENT_COLUMNS = [
  'team_id', 'event_time', 'id', 'agent_id', 'endpoint', 'domain', 'method', 'category', 'amount', 'amount_text', 'amount_raw',
  'asset', 'network', 'scheme', 'policy_evaluation', 'team_label', 'tx_hash', 'payer_address', 'payee_address',
  'facilitator', 'status_code', 'response_time_ms', 'human_sponsor', 'policy_id', 'budget_remaining', 'task_id',
  'session_id', 'tags', 'metadata', 'settled_at', 'received_at', 'source', 'record_extra', 'ingest_seq',
] as const satisfies readonly (keyof EventRow)[];

/** How far ahead of the receive time an event time may be (clock skew), per the ingest contract. */
export const MAX_FUTURE_SKEW_MS = 5 * 60 * 1000;
/** Event times before this are almost always Unix seconds sent as milliseconds. */
const EARLIEST_EVENT_TIME = Date.UTC(2000, 0, 1);
const MAX_METADATA_BYTES = 8 * 1024;
/** The end of ClickHouse's DateTime64 range: a later time cannot be stored. */
const LATEST_STORED_TIME = Date.UTC(2299, 11, 31, 23, 59, 59, 999);


/**
 * The first place in a record that cannot be stored as sent, or undefined: a string (or object
 * key) that is not well-formed Unicode (it would be replaced on the way to UTF-8) or holds NUL
 * (NUL_REFUSED), or a key named
 * `__proto__`, `constructor` or `prototype` (RESERVED_KEYS: the body check leaves a batch's
 * records to this one walk). The record is refused, naming the field.
 */
function unstorable(value: unknown, field: string, depth = 0): FieldError | undefined {
  // The usual record has nothing to name: checked first without building a path per key.
  if (depth === 0 && storable(value, 0)) return undefined;
  if (typeof value === 'string') return !wellFormed(value) ? { field, message: ILL_FORMED } : hasNul(value) ? { field, message: NUL_REFUSED } : undefined;
  if (value === null || typeof value !== 'object' || depth > 64) return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = unstorable(value[i], `${field}[${i}]`, depth + 1);
      if (found) return found;
    }
    return undefined;
  }
  for (const [key, inner] of Object.entries(value)) {
    if (!wellFormed(key)) return { field: field ? `${field} (a key)` : 'record (a key)', message: ILL_FORMED };
    if (hasNul(key)) return { field: field ? `${field} (a key)` : 'record (a key)', message: NUL_REFUSED };
    const path = field ? `${field}.${key}` : key;
    if (RESERVED_KEYS.has(key)) return { field: path, message: 'is a reserved name (no field is called that)' };
    const found = unstorable(inner, path, depth + 1);
    if (found) return found;
  }
  return undefined;
}

/** What unstorable checks, as a yes or no: no field paths built (they are only needed for an error). */
function storable(value: unknown, depth: number): boolean {
  if (typeof value === 'string') return wellFormed(value) && !value.includes('\u0000');
  if (value === null || typeof value !== 'object' || depth > 64) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!storable(value[i], depth + 1)) return false;
    return true;
  }
  // for...in over a parsed JSON object: its own keys (an inherited one could only make this say
  // no, and unstorable, which reads own entries, then decides).
  for (const key in value) {
    if (!wellFormed(key) || key.includes('\u0000') || RESERVED_KEYS.has(key)) return false;
    if (!storable((value as Record<string, unknown>)[key], depth + 1)) return false;
  }
  return true;
}

/**
 * A stored record may come with warnings: what was stored differs from what was sent (an event time
 * too far ahead), or cannot be counted as spend (an amount in an asset whose decimals are unknown).
 */
export type RecordOutcome =
  | {
      ok: true;
      row: EventRow;
      warnings: FieldError[];
      unpriced: boolean;
      /** Its time is before the book's horizon: valued by the caller from the versions then (RateBooks.olderValue). */
      older: boolean;
    }
  | { ok: false; errors: FieldError[] };

/** A client's event time that was not used (it was too far ahead), as it was sent. */
interface ClientTime {
  field: 'created_at' | 'timestamp';
  value: number | string;
}

/** Amounts have at most 20 integer digits (Decimal(38,18) in the event store). */
const MAX_AMOUNT_INTEGER_DIGITS = 20;

/**
 * The lower-case host of an absolute http or https URL, or undefined. Remembered per URL: an agent
 * calls the same few URLs again and again, and parsing one costs about as much as the rest of its
 * record's checks.
 */
const domainOf = memoized((endpoint: string): string | undefined => {
  try {
    const url = new URL(endpoint);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.hostname.toLowerCase() : undefined;
  } catch {
    return undefined;
  }
});

/** Unix ms of a record time (Unix ms or ISO 8601), or a reason it is not usable. */
function parseTime(value: number | string): number | string {
  const ms = typeof value === 'number' ? value : Date.parse(value);
  if (!Number.isFinite(ms)) return 'is not a valid time';
  if (ms < EARLIEST_EVENT_TIME) return 'is before 2000-01-01: send Unix milliseconds, not seconds';
  return ms;
}

/** Service settings a record is checked against. */
export interface RecordRules {
  /** Decimals of assets beyond the built-in ones (ASSET_DECIMALS). */
  decimalsOf?: DecimalsOf;
  /** Raw events are kept this many days after their event time (EVENTS_TTL_DAYS; 0: forever). */
  eventsTtlDays?: number;
}

/**
 * Validates one record and turns it into an event row: exact amount, event time, domain and
 * category derived. Invalid records come back with every field that is wrong. `plain`: the record
 * comes from a body that scanned plain (src/http/body-shape.ts, ScanFacts), so none of its strings
 * or keys can be unstorable, and its row needs no TSV escaping: the walk over its values is skipped.
 * `book`: the team's currency and rates, that value the record (src/ingest/valuation.ts).
 */
export function recordToRow(
  input: unknown,
  schemas: SchemaRegistry,
  teamId: string,
  source: IngestSource,
  receivedAt: number,
  rules: RecordRules = {},
  plain = false,
  book: RateBook = BUILT_IN_BOOK,
): RecordOutcome {
  const decimalsOf = rules.decimalsOf ?? assetDecimals;
  const problems = schemas.problems('audit-record.json', input);
  if (problems.length > 0) return { ok: false, errors: problems.map((p) => ({ ...p, field: p.field || 'record' })) };
  const record = input as AuditRecordInput;
  const errors: FieldError[] = [];
  const problem = plain ? undefined : unstorable(input, '');
  if (problem) errors.push(problem);

  const domain = domainOf(record.endpoint);
  if (domain === undefined) errors.push({ field: 'endpoint', message: 'must be an absolute http or https URL' });

  const timeField = record.created_at !== undefined ? 'created_at' : record.timestamp !== undefined ? 'timestamp' : undefined;
  let eventTime = receivedAt;
  const warnings: FieldError[] = [];
  let clientTime: ClientTime | undefined;
  if (timeField) {
    const parsed = parseTime(record[timeField]!);
    if (typeof parsed === 'string') errors.push({ field: timeField, message: parsed });
    else if (parsed > receivedAt + MAX_FUTURE_SKEW_MS) {
      // A client clock running fast must not lose its records (the SDK drops a refused batch into
      // local storage for good): stored at the receive time, the client's time kept beside it.
      clientTime = { field: timeField, value: record[timeField]! };
      warnings.push({
        field: timeField,
        message: `is more than 5 minutes ahead of the server's clock: stored with the receive time ${new Date(receivedAt).toISOString()}; the time sent is kept as client_${timeField}`,
      });
    } else if (rules.eventsTtlDays && parsed < receivedAt - rules.eventsTtlDays * 86_400_000) {
      // It would expire as it arrived, and could be gone before the loader copies it to the rollups.
      errors.push({
        field: timeField,
        message: `is more than ${rules.eventsTtlDays} days ago, past the retention of raw events (EVENTS_TTL_DAYS): not stored`,
      });
    } else eventTime = parsed;
  }
  let settledAt: number | null = null;
  if (record.settled_at !== undefined && record.settled_at !== null) {
    const parsed = parseTime(record.settled_at);
    if (typeof parsed === 'string') errors.push({ field: 'settled_at', message: parsed });
    else if (parsed > LATEST_STORED_TIME) errors.push({ field: 'settled_at', message: 'is after 2299-12-31, beyond what the event store keeps' });
    else settledAt = parsed;
  }

  const network = caip2Network(record.network ?? '');
  if (network === undefined) errors.push({ field: 'network', message: 'must be CAIP-2 (<namespace>:<reference>) or a known x402 network name' });

  const metadata = record.metadata ?? {};
  const metadataJson = JSON.stringify(metadata);
  if (Buffer.byteLength(metadataJson) > MAX_METADATA_BYTES) {
    errors.push({ field: 'metadata', message: `is larger than ${MAX_METADATA_BYTES} bytes as JSON` });
  }
  // A given amount wins; else the smallest-unit amount when the asset's decimals are known. A
  // non-zero amount_raw in an unknown asset is stored as 0 spend, but said so and counted as unpriced.
  let amount = record.amount ?? '0';
  let unpriced = false;
  if (record.amount === undefined && record.amount_raw !== undefined && /[1-9]/.test(record.amount_raw)) {
    const decimals = record.asset ? (decimalsOf(record.asset) ?? bookDecimals(book, record.asset)) : undefined;
    if (decimals === undefined) {
      unpriced = true;
      warnings.push({
        field: 'amount_raw',
        message: record.asset
          ? `is in asset "${record.asset}" whose decimals are unknown: stored unvalued and unpriced, not counted as spend (send amount, or give the asset's decimals in its rate or ASSET_DECIMALS)`
          : 'has no asset to give its decimals: stored unvalued and unpriced, not counted as spend (send amount or asset)',
      });
    } else {
      amount = rawToAmount(record.amount_raw, decimals);
      if (amount.split('.')[0]!.length > MAX_AMOUNT_INTEGER_DIGITS) {
        errors.push({ field: 'amount_raw', message: `is more than 10^20 ${record.asset} with ${decimals} decimals: too large to store` });
      }
    }
  }
  if (errors.length > 0) return { ok: false, errors };
  const authorizationId = record.authorization_id ?? (typeof metadata.authorization_id === 'string' && metadata.authorization_id ? metadata.authorization_id : undefined);
  const tags = record.tags ?? [];
  const method = record.method.toUpperCase();
  const row: EventRow = {
      team_id: teamId,
      event_time: eventTime,
      id: record.id ?? `srv_${crypto.randomUUID()}`,
      agent_id: record.agent_id,
      endpoint: record.endpoint,
      domain: domain!,
      method,
      category: categorize(record.category, metadata, tags, domain!),
      amount,
      amount_text: record.amount ?? '',
      amount_raw: record.amount_raw ?? '',
      asset: record.asset ?? '',
      network: network!,
      scheme: record.scheme ?? '',
      policy_evaluation: record.policy_evaluation ?? 'allowed',
      team_label: record.team ?? null,
      tx_hash: record.tx_hash ?? null,
      payer_address: record.payer_address ?? '',
      payee_address: record.payee_address ?? '',
      facilitator: record.facilitator ?? null,
      status_code: record.status_code ?? 0,
      response_time_ms: record.response_time_ms ?? 0,
      human_sponsor: record.human_sponsor ?? null,
      policy_id: record.policy_id ?? null,
      budget_remaining: record.budget_remaining ?? null,
      task_id: record.task_id ?? null,
      session_id: record.session_id ?? null,
      tags,
      metadata: metadataJson,
      settled_at: settledAt,
      received_at: receivedAt,
      source,
      record_extra: recordExtra(input as Record<string, unknown>, record, network!, method, clientTime),
      ingest_seq: 0, // set by the writer, in the order it stores rows
      value: null,
      currency: book.currency,
      valuation: '',
      plain,
      ...(authorizationId === undefined ? {} : { authorization_id: authorizationId }),
  };
  const older = !unpriced && eventTime < book.horizon;
  if (unpriced || older) leaveUnvalued(row, book.currency);
  else {
    const unvalued = valueRow(row, book);
    if (unvalued) warnings.push(unvalued);
  }
  return { ok: true, warnings, unpriced, older, row };
}
