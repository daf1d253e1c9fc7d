import type { Request, RequestHandler } from 'express';
import { allows, type KeyOwner, type Scope } from '../domain/keys.js';
import { ApiError } from './errors.js';

export { allows };

/** Where keys are looked up: the teams feature's store, handed in by the composition root. */
export interface KeyDirectory {
  /** The owner of a presented key that works (undefined: unknown, revoked or expired). */
  owner(apiKey: string, now: number): Promise<KeyOwner | undefined>;
  /** Whether a key found before still works now, and its team is not suspended. */
  standing(owner: KeyOwner, now: number): Promise<'working' | 'revoked' | 'suspended'>;
  /** Records that the key was used, to the minute. */
  touch(keyId: string, minute: number): Promise<void>;
}

const CHALLENGE = { 'WWW-Authenticate': 'Bearer realm="spendscope"' };

/** last_used_at is kept to the minute: a key's row is written at most once a minute, not per request. */
const LAST_USED_RESOLUTION_MS = 60_000;

// Unknown, revoked and expired keys get the same answer: the response must not tell which.
const invalidKey = () => new ApiError('unauthorized', 'Invalid, revoked or expired API key', undefined, CHALLENGE);

/** The message of a suspended team's 403, on every interface (REST, MCP, BI). */
export const TEAM_SUSPENDED_MESSAGE = "This API key's team is suspended by the service's operator; its records are kept. Contact the operator";

export const teamSuspended = () => new ApiError('team_suspended', TEAM_SUSPENDED_MESSAGE);

/** The key of `Authorization: Bearer <key>`; a 401 (with `challenge`) when it is missing or malformed. */
export function bearerKey(req: Request, challenge: Record<string, string>): string {
  const header = req.headers.authorization;
  if (!header) throw new ApiError('unauthorized', 'Missing API key: send "Authorization: Bearer <key>"', undefined, challenge);
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match) throw new ApiError('unauthorized', 'Authorization header must be "Bearer <key>"', undefined, challenge);
  return match[1]!;
}

/** Reads `Authorization: Bearer <key>` and puts the key's team in `res.locals.team`; else 401. */
export function authenticate(keys: KeyDirectory): RequestHandler {
  const touched = new Map<string, number>();
  return async (req, res, next) => {
    const now = Date.now();
    const owner = await keys.owner(bearerKey(req, CHALLENGE), now);
    if (!owner) throw invalidKey();
    if (owner.suspended) throw teamSuspended();
    const minute = now - (now % LAST_USED_RESOLUTION_MS);
    if (touched.get(owner.keyId) !== minute) {
      if (touched.size > 100_000) touched.clear();
      touched.set(owner.keyId, minute);
      // After the answer: the request does not wait for this write.
      setImmediate(() => void keys.touch(owner.keyId, minute).catch(() => {}));
    }
    res.locals.team = owner;
    next();
  };
}

/**
 * The 401 of a revoked or expired key, or the 403 of a suspended team, for a request that outlived
 * its authentication (a long poll, a queued call of an MCP batch): what it answers must not reach
 * a key that no longer works.
 */
export async function assertKeyStillWorks(keys: KeyDirectory, owner: KeyOwner, now = Date.now()): Promise<void> {
  const standing = await keys.standing(owner, now);
  if (standing === 'revoked') throw invalidKey();
  if (standing === 'suspended') throw teamSuspended();
}


/** The 403 naming the missing scope, for a key used outside its scopes (a route or an MCP tool). */
export function assertScope(owner: KeyOwner, scope: Scope | 'any'): void {
  if (scope !== 'any' && !allows(owner, scope)) {
    throw new ApiError('forbidden', `This API key lacks the "${scope}" scope (it has: ${owner.scopes.join(', ')})`, [
      { field: 'scope', message: `"${scope}" is required` },
    ]);
  }
}

/** 403 naming the missing scope, for a key used outside its scopes. */
export function requireScope(scope: Scope | 'any'): RequestHandler {
  return (_req, res, next) => {
    assertScope(res.locals.team as KeyOwner, scope);
    next();
  };
}
