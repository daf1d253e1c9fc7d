import type { Request, RequestHandler } from 'express';
import type { Database } from '../stores/sql.js';
import { findKeyOwner, findTeam, listKeys, touchKey, type KeyOwner, type Scope } from '../teams/repository.js';
import { ApiError } from './errors.js';

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
export function authenticate(db: Database): RequestHandler {
  const touched = new Map<string, number>();
  return async (req, res, next) => {
    const now = Date.now();
    const owner = await findKeyOwner(db, bearerKey(req, CHALLENGE), now);
    if (!owner) throw invalidKey();
    if (owner.suspended) throw teamSuspended();
    const minute = now - (now % LAST_USED_RESOLUTION_MS);
    if (touched.get(owner.keyId) !== minute) {
      if (touched.size > 100_000) touched.clear();
      touched.set(owner.keyId, minute);
      // After the answer: the request does not wait for this write.
      setImmediate(() => void touchKey(db, owner.keyId, minute).catch(() => {}));
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
export async function assertKeyStillWorks(db: Database, owner: KeyOwner, now = Date.now()): Promise<void> {
  const working = await listKeys(db, owner.teamId, now);
  if (!working.some((k) => k.id === owner.keyId)) throw invalidKey();
  if ((await findTeam(db, owner.teamId))?.suspendedAt !== null) throw teamSuspended();
}

/** Whether a key may use a route of this scope: admin may use every route. */
export const allows = (owner: KeyOwner, scope: Scope) => owner.scopes.includes('admin') || owner.scopes.includes(scope);

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
