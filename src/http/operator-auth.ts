import crypto from 'node:crypto';
import type { RequestHandler } from 'express';
import { bearerKey } from './auth.js';
import { ApiError } from './errors.js';

const CHALLENGE = { 'WWW-Authenticate': 'Bearer realm="spendscope operator"' };

/**
 * The operator routes' key check: the presented key's SHA-256 against the configured one's, in
 * constant time. Team keys are never looked up here, so a team key is just a wrong operator key;
 * and the operator key is in no team's table, so it is an unknown key on every team route.
 */
export function authenticateOperator(keyHash: Buffer): RequestHandler {
  return (req, res, next) => {
    const presented = crypto.createHash('sha256').update(bearerKey(req, CHALLENGE)).digest();
    if (!crypto.timingSafeEqual(presented, keyHash)) throw new ApiError('unauthorized', 'Invalid operator key', undefined, CHALLENGE);
    res.locals.operator = true;
    next();
  };
}
