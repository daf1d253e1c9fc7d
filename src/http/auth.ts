import type { RequestHandler } from 'express';
import type { Registry } from '../stores/sqlite.js';
import { findKeyOwner } from '../teams/repository.js';
import { ApiError } from './errors.js';

const CHALLENGE = { 'WWW-Authenticate': 'Bearer realm="spendscope"' };

/** Reads `Authorization: Bearer <key>` and puts the key's team in `res.locals.team`; else 401. */
export function authenticate(registry: Registry): RequestHandler {
  return (req, res, next) => {
    const header = req.get('authorization');
    if (!header) {
      throw new ApiError('unauthorized', 'Missing API key: send "Authorization: Bearer <key>"', undefined, CHALLENGE);
    }
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) {
      throw new ApiError('unauthorized', 'Authorization header must be "Bearer <key>"', undefined, CHALLENGE);
    }
    const owner = findKeyOwner(registry, match[1]!);
    // Unknown and revoked keys get the same answer: the response must not tell which.
    if (!owner) throw new ApiError('unauthorized', 'Invalid or revoked API key', undefined, CHALLENGE);
    res.locals.team = owner;
    next();
  };
}
