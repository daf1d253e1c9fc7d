import type { RequestHandler } from 'express';
import { ApiError, BODY_SHAPE_REFUSED, type FieldError } from './errors.js';

/**
 * Limits on the shape of a parsed JSON body, checked before validation touches it. No route needs
 * more: records nest their metadata a few levels, and the largest batch that fits MAX_BODY_BYTES
 * holds well under 100,000 records. Past them, validation (which lists every error) and the
 * recursive code after it would cost far more than the body did to send.
 */
export const MAX_BODY_DEPTH = 32;
export const MAX_ARRAY_ITEMS = 100_000;

/**
 * Keys that name JavaScript's prototype machinery. JSON.parse makes them plain own keys, but any
 * code that copies or merges such an object can change the prototype of what it builds: no field
 * of this API has these names, so a body (or a record) that carries one is refused.
 */
export const RESERVED_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * No string of the API may hold NUL (U+0000): PostgreSQL's text cannot store it, so one such
 * string would fail the statement (and, in a group commit, other teams' records with it). Refused
 * everywhere, whichever store runs, so the two behave alike.
 */
export const NUL_REFUSED = 'contains a NUL character (\\u0000), which cannot be stored';
export const hasNul = (value: unknown): boolean => typeof value === 'string' && value.includes('\u0000');

/** A UTF-16 surrogate without its pair: JSON allows it (`"\ud800"`), UTF-8 and every store do not. */
export const ILL_FORMED = 'is not well-formed Unicode (a lone UTF-16 surrogate such as \\ud800)';
/** A string without lone surrogates (String.prototype.isWellFormed, Node 20; ten times the regex's speed). */
export const wellFormed = (value: string): boolean => (value as string & { isWellFormed(): boolean }).isWellFormed();

/** What makes a string of a body unstorable (NUL, a lone surrogate), or undefined. */
function textProblem(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  return value.includes('\u0000') ? NUL_REFUSED : wellFormed(value) ? undefined : ILL_FORMED;
}

/** The field path of a key below `path`, as the validation messages write it. */
const child = (path: string, key: string) => (/^[A-Za-z_$][\w$-]*$/.test(key) ? (path ? `${path}.${key}` : key) : `${path}[${JSON.stringify(key)}]`);

/**
 * The first place a value breaks the limits, as a field path, or undefined. Iterative: no stack to
 * overflow. Reserved keys and NUL in strings are looked for only where `reservedKeys` says (everywhere
 * unless told; the limits alone are what scanShapeProblem checks on the raw bytes).
 */
export function shapeProblem(body: unknown, reservedKeys: (path: string) => boolean = () => true, root = ''): FieldError | undefined {
  const stack: { value: unknown; path: string; depth: number }[] = [{ value: body, path: root, depth: 0 }];
  while (stack.length > 0) {
    const { value, path, depth } = stack.pop()!;
    if (value === null || typeof value !== 'object') continue;
    if (depth >= MAX_BODY_DEPTH) return { field: path || 'body', message: `nests deeper than ${MAX_BODY_DEPTH} levels` };
    if (Array.isArray(value)) {
      if (value.length > MAX_ARRAY_ITEMS) return { field: path || 'body', message: `has more than ${MAX_ARRAY_ITEMS} items` };
      const checkStrings = reservedKeys(path);
      for (let i = 0; i < value.length; i++) {
        const item: unknown = value[i];
        const problem = checkStrings ? textProblem(item) : undefined;
        if (problem) return { field: `${path}[${i}]`, message: problem };
        if (item !== null && typeof item === 'object') stack.push({ value: item, path: `${path}[${i}]`, depth: depth + 1 });
      }
    } else {
      const checkKeys = reservedKeys(path);
      for (const key of Object.keys(value)) {
        if (checkKeys && RESERVED_KEYS.has(key)) return { field: child(path, key), message: 'is a reserved name (no field is called that)' };
        const item = (value as Record<string, unknown>)[key];
        const problem = checkKeys ? (textProblem(key) ?? textProblem(item)) : undefined;
        if (problem) return { field: child(path, key), message: problem };
        if (item !== null && typeof item === 'object') stack.push({ value: item, path: child(path, key), depth: depth + 1 });
      }
    }
  }
  return undefined;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

/**
 * The field path of the container opened at `depth`, from what the scan recorded per open level:
 * the item index of each open array, the raw bytes of the current key of each open object. Keys
 * are decoded only here, once a limit is hit; one that does not decode makes the path `body`.
 */
function scannedPath(text: Uint8Array, depth: number, isArray: Uint8Array, items: Uint32Array, keyStart: Int32Array, keyEnd: Int32Array): string {
  let path = '';
  for (let level = 0; level < depth; level++) {
    if (isArray[level]) {
      path += `[${items[level]}]`;
      continue;
    }
    if (keyStart[level]! < 0) return 'body';
    let key: unknown;
    try {
      key = JSON.parse(Buffer.from(text.buffer, text.byteOffset + keyStart[level]!, keyEnd[level]! - keyStart[level]!).toString('utf8'));
    } catch {
      return 'body';
    }
    if (typeof key !== 'string') return 'body';
    path = child(path, key);
  }
  return path;
}

/**
 * What scanShapeProblem keeps of each open level, made once: the scan is synchronous, so one set
 * serves every body, and a level's entries are written when it opens, before they are read.
 * Allocating the four arrays per body would cost more than scanning it.
 */
const SCAN_LEVELS = {
  isArray: new Uint8Array(MAX_BODY_DEPTH),
  items: new Uint32Array(MAX_BODY_DEPTH),
  keyStart: new Int32Array(MAX_BODY_DEPTH),
  keyEnd: new Int32Array(MAX_BODY_DEPTH),
};

/**
 * The nesting and array limits of shapeProblem, checked on the raw UTF-8 bytes of a body before
 * JSON.parse: one pass, constant memory (a few numbers per open level, never more than
 * MAX_BODY_DEPTH of them), so a body of deep nesting costs a scan, not a parse into millions of
 * objects. It reads structure only: anything malformed that it can step over is left for JSON.parse
 * to refuse, and it stops at the first bracket that closes nothing. The first problem in document
 * order is the one named (shapeProblem may name another of several).
 */
export function scanShapeProblem(text: Uint8Array, facts?: ScanFacts): FieldError | undefined {
  const { isArray, items, keyStart, keyEnd } = SCAN_LEVELS;
  let depth = 0;
  let escaped = false;
  // In an object, the next string is a key: after `{` and after each `,`.
  let expectKey = false;
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const byte = text[i]!;
    if (byte === QUOTE) {
      const start = i;
      // UTF-8 never has a byte below 0x80 inside a multi-byte character: only ASCII `"` and `\` matter.
      for (i++; i < length; i++) {
        const b = text[i]!;
        if (b === BACKSLASH) {
          i++;
          escaped = true;
        } else if (b === QUOTE) break;
      }
      if (expectKey && depth > 0 && !isArray[depth - 1]) {
        keyStart[depth - 1] = start;
        keyEnd[depth - 1] = Math.min(i + 1, length);
        expectKey = false;
        if (!escaped && isReservedKey(text, start + 1, i)) escaped = true;
      }
    } else if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) {
      if (depth >= MAX_BODY_DEPTH) {
        return { field: scannedPath(text, depth, isArray, items, keyStart, keyEnd) || 'body', message: `nests deeper than ${MAX_BODY_DEPTH} levels` };
      }
      isArray[depth] = byte === OPEN_ARRAY ? 1 : 0;
      items[depth] = 0;
      keyStart[depth] = -1;
      expectKey = byte === OPEN_OBJECT;
      depth++;
    } else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) {
      if (depth === 0 || isArray[depth - 1] !== (byte === CLOSE_ARRAY ? 1 : 0)) return undefined;
      depth--;
      expectKey = false;
    } else if (byte === COMMA && depth > 0) {
      if (isArray[depth - 1]) {
        // A comma opens item number items + 1: past the limit, the array has one item too many.
        if (++items[depth - 1]! >= MAX_ARRAY_ITEMS) {
          return { field: scannedPath(text, depth - 1, isArray, items, keyStart, keyEnd) || 'body', message: `has more than ${MAX_ARRAY_ITEMS} items` };
        }
      } else {
        expectKey = true;
        keyStart[depth - 1] = -1;
      }
    }
  }
  if (facts) facts.plain = !escaped;
  return undefined;
}

/**
 * What a scan learnt of a body beside its shape. `plain`: no string of it holds an escape (the raw
 * bytes have no backslash) and no key is a reserved name. Such a body's strings, once parsed, hold
 * no NUL, no lone surrogate (UTF-8 cannot carry one; only `\u` escapes can), no tab, newline, CR or
 * backslash (JSON has them raw in no string), and its objects no reserved key: what the per-record
 * checks (records.ts) and the TSV escaping (tsv.ts) look for, known without walking the records.
 */
export interface ScanFacts {
  plain: boolean;
}

const RESERVED_KEY_BYTES = [...RESERVED_KEYS].map((key) => Buffer.from(key, 'latin1'));

/** Whether text[start..end) (a key's bytes, between its quotes) is a reserved name. */
function isReservedKey(text: Uint8Array, start: number, end: number): boolean {
  const length = end - start;
  if (length !== 9 && length !== 11) return false;
  next: for (const name of RESERVED_KEY_BYTES) {
    if (name.length !== length) continue;
    for (let k = 0; k < length; k++) if (text[start + k] !== name[k]) continue next;
    return true;
  }
  return false;
}

/**
 * Requests whose JSON body scanned plain (ScanFacts): an ingest route skips the per-record walk for
 * what the scan already rules out. Only UTF-8 bodies: a body decoded from UTF-16 can hold a lone
 * surrogate without any escape.
 */
const plainBodies = new WeakSet<object>();

/** Whether the request's body scanned plain (see ScanFacts). */
export const isPlainBody = (req: object): boolean => plainBodies.has(req);

/** A body past the shape limits: the 400 every route gives, naming where. */
function shapeError(problem: FieldError): ApiError {
  return new ApiError('validation_failed', `Request body is invalid: ${problem.field} ${problem.message}`, [problem]);
}

/**
 * express.json's `verify` hook, which sees the raw bytes before JSON.parse: a body past the limits
 * is refused by the scan alone. Charsets other than UTF-8 are scanned after transcoding (UTF-16) or
 * refused (UTF-7 and UTF-32 can hide a bracket from a byte scan; RFC 8259 asks for UTF-8 anyway).
 */
export function scanBodyShape(req: object, _res: unknown, raw: Buffer, charset: string | null): void {
  const text = utf8Of(raw, charset ?? 'utf-8');
  const facts: ScanFacts = { plain: false };
  const problem = scanShapeProblem(text, facts);
  if (problem) throw new BodyShapeRefusal(shapeError(problem));
  if (facts.plain && text === raw) plainBodies.add(req);
}

function utf8Of(raw: Buffer, charset: string): Uint8Array {
  const name = charset.toLowerCase();
  if (name === 'utf-8' || name === 'utf8') return raw;
  if (name === 'utf-16' || name === 'utf-16le' || name === 'utf-16be') {
    // iconv, which decodes the body next, reads a BOM for plain utf-16 and takes little-endian without one.
    const bigEndian = name === 'utf-16be' || (name === 'utf-16' && raw[0] === 0xfe && raw[1] === 0xff);
    return Buffer.from(new TextDecoder(bigEndian ? 'utf-16be' : 'utf-16le').decode(raw), 'utf8');
  }
  throw new BodyShapeRefusal(new ApiError('unsupported_media_type', `Charset ${name} is not supported; send JSON in UTF-8`));
}

/**
 * What scanBodyShape throws through body-parser, which wraps errors of `verify` (setting a status
 * that ApiError keeps as a getter); errors.ts unwraps `apiError` by the `type` body-parser keeps.
 */
export class BodyShapeRefusal extends Error {
  readonly type = BODY_SHAPE_REFUSED;
  constructor(readonly apiError: ApiError) {
    super(apiError.message);
  }
}

/**
 * After express.json: reserved keys, and the limits again on what the scan did not see (a route's
 * `bodyWhenEmpty`, duplicate keys aside), as a 400 naming where. On an ingest route (`batchField`),
 * the records are left to the raw scan and the per-record check.
 */
export function checkBodyShape(batchField?: string): RequestHandler {
  return (req, _res, next) => {
    const body: unknown = req.body;
    let problem: FieldError | undefined;
    if (batchField !== undefined && body !== null && typeof body === 'object' && !Array.isArray(body) && Array.isArray((body as Record<string, unknown>)[batchField])) {
      // The records are not walked here: their nesting and count were checked on the raw bytes
      // (scanBodyShape), their keys and strings one by one (records.ts), so one bad record does
      // not refuse the batch. Walking them again cost a field path per key of every record.
      const { [batchField]: records, ...rest } = body as Record<string, unknown>;
      problem = shapeProblem(rest);
      if (!problem && (records as unknown[]).length > MAX_ARRAY_ITEMS) problem = { field: batchField, message: `has more than ${MAX_ARRAY_ITEMS} items` };
    } else problem = shapeProblem(body);
    if (problem) throw shapeError(problem);
    next();
  };
}
