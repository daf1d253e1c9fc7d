import type { RequestHandler } from 'express';
import { ApiError } from './errors.js';

/**
 * Limits on the shape of a parsed JSON body, checked before validation touches it. No route needs
 * more: records nest their metadata a few levels, and the largest batch that fits MAX_BODY_BYTES
 * holds well under 100,000 records. Past them, validation (which lists every error) and the
 * recursive code after it would cost far more than the body did to send.
 */
export const MAX_BODY_DEPTH = 32;
export const MAX_ARRAY_ITEMS = 100_000;

/** The first place a value breaks the limits, as a field path, or undefined. Iterative: no stack to overflow. */
export function shapeProblem(body: unknown): { field: string; message: string } | undefined {
  const stack: { value: unknown; path: string; depth: number }[] = [{ value: body, path: '', depth: 0 }];
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
      for (const key of Object.keys(value)) {
        const item = (value as Record<string, unknown>)[key];
        if (item !== null && typeof item === 'object') stack.push({ value: item, path: path ? `${path}.${key}` : key, depth: depth + 1 });
      }
    }
  }
  return undefined;
}

/** After express.json: a body past the limits is a 400 naming where. */
export const checkBodyShape: RequestHandler = (req, _res, next) => {
  const problem = shapeProblem(req.body);
  if (problem) throw new ApiError('validation_failed', `Request body is invalid: ${problem.field} ${problem.message}`, [problem]);
  next();
};
