import type { RequestHandler } from 'express';
import { ApiError, type FieldError } from './errors.js';

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

/** The field path of a key below `path`, as the validation messages write it. */
const child = (path: string, key: string) => (/^[A-Za-z_$][\w$-]*$/.test(key) ? (path ? `${path}.${key}` : key) : `${path}[${JSON.stringify(key)}]`);

/**
 * The first place a value breaks the limits, as a field path, or undefined. Iterative: no stack to
 * overflow. Reserved keys are looked for only where `reservedKeys` says (a batch's records are
 * checked one by one instead, so that one bad record does not refuse the batch).
 */
export function shapeProblem(body: unknown, reservedKeys: (path: string) => boolean = () => true, root = ''): FieldError | undefined {
  const stack: { value: unknown; path: string; depth: number }[] = [{ value: body, path: root, depth: 0 }];
  while (stack.length > 0) {
    const { value, path, depth } = stack.pop()!;
    if (value === null || typeof value !== 'object') continue;
    if (depth >= MAX_BODY_DEPTH) return { field: path || 'body', message: `nests deeper than ${MAX_BODY_DEPTH} levels` };
    if (Array.isArray(value)) {
      if (value.length > MAX_ARRAY_ITEMS) return { field: path || 'body', message: `has more than ${MAX_ARRAY_ITEMS} items` };
      for (let i = 0; i < value.length; i++) {
        const item: unknown = value[i];
        if (item !== null && typeof item === 'object') stack.push({ value: item, path: `${path}[${i}]`, depth: depth + 1 });
      }
    } else {
      const checkKeys = reservedKeys(path);
      for (const key of Object.keys(value)) {
        if (checkKeys && RESERVED_KEYS.has(key)) return { field: child(path, key), message: 'is a reserved name (no field is called that)' };
        const item = (value as Record<string, unknown>)[key];
        if (item !== null && typeof item === 'object') stack.push({ value: item, path: child(path, key), depth: depth + 1 });
      }
    }
  }
  return undefined;
}

/**
 * After express.json: a body past the limits is a 400 naming where. On an ingest route
 * (`batchField`), reserved keys inside the records are left to the per-record check.
 */
export function checkBodyShape(batchField?: string): RequestHandler {
  const inBatch = batchField === undefined ? undefined : new RegExp(`^${batchField}\\[\\d+\\]`);
  const reservedKeys = inBatch ? (path: string) => !inBatch.test(path) : undefined;
  return (req, _res, next) => {
    const problem = shapeProblem(req.body, reservedKeys);
    if (problem) throw new ApiError('validation_failed', `Request body is invalid: ${problem.field} ${problem.message}`, [problem]);
    next();
  };
}
