import type { KeyRates } from '../limits/rate-limiter.js';
import type { Registry } from '../stores/sqlite.js';
import type { Statement } from 'better-sqlite3';
import { generateApiKey, hashApiKey, newId, visiblePrefix } from './keys.js';

export interface Team {
  id: string;
  name: string;
  createdAt: number;
}

/**
 * What a key may do. `ingest`: send records. `read`: every GET and the SDK's queries. `admin`:
 * everything, changes included. An agent needs ingest (and read for the SDK's queries); a
 * dashboard or a BI job needs read.
 */
export const SCOPES = ['ingest', 'read', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];

/** The team an API key authenticates, and which key it was. */
export interface KeyOwner {
  teamId: string;
  teamName: string;
  keyId: string;
  keyName: string;
  /**
   * The first key of this key's rotation chain (its own id unless it was issued by a rotation):
   * rate buckets belong to it, so rotating a key does not refill them.
   */
  holderId: string;
  scopes: Scope[];
  /** The key's own rate limits (null: the service's defaults). */
  rates: KeyRates;
}

/** A key as shown once to its creator. */
export interface IssuedKey {
  keyId: string;
  apiKey: string;
  prefix: string;
  createdAt: number;
  name: string;
  scopes: Scope[];
  expiresAt: number | null;
  rates: KeyRates;
}

/** What a new key is: its name, scopes and expiry. */
export interface KeySpec {
  name: string;
  scopes: readonly Scope[];
  expiresAt?: number | null;
  rates?: KeyRates;
}

/** Bootstrap and team:create keys: the team's first, able to do everything. */
const FIRST_KEY: KeySpec = { name: 'default', scopes: ['admin'] };

/** A key's metadata, as listed: never the key itself. */
export interface KeyInfo {
  id: string;
  name: string;
  prefix: string;
  scopes: Scope[];
  createdAt: number;
  lastUsedAt: number | null;
  expiresAt: number | null;
  rates: KeyRates;
}

export class TeamNameTaken extends Error {
  constructor(readonly teamName: string) {
    super(`a team named "${teamName}" already exists`);
  }
}

interface TeamRow {
  id: string;
  name: string;
  created_at: number;
}

const toTeam = (row: TeamRow): Team => ({ id: row.id, name: row.name, createdAt: row.created_at });

export function countTeams(db: Registry): number {
  return (db.prepare('SELECT count(*) AS n FROM teams').get() as { n: number }).n;
}

export function findTeam(db: Registry, teamId: string): Team | undefined {
  const row = db.prepare('SELECT id, name, created_at FROM teams WHERE id = ?').get(teamId) as TeamRow | undefined;
  return row && toTeam(row);
}

const NO_OWN_RATES: KeyRates = { requestsPerSecond: null, recordsPerSecond: null };

const parseScopes = (text: string) => text.split(' ').filter((s): s is Scope => (SCOPES as readonly string[]).includes(s));

/** Inserts a key; its holder is itself unless it replaces a key (rotation passes that key's holder). */
function insertKey(db: Registry, teamId: string, apiKey: string, now: number, spec: KeySpec, holderId?: string): IssuedKey {
  const keyId = newId('key');
  // Stored in SCOPES order, each once.
  const scopes = SCOPES.filter((s) => spec.scopes.includes(s));
  const rates = spec.rates ?? NO_OWN_RATES;
  db.prepare(
    `INSERT INTO api_keys (id, team_id, prefix, key_hash, created_at, name, scopes, expires_at, requests_per_second, records_per_second, holder_id)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(keyId, teamId, visiblePrefix(apiKey), hashApiKey(apiKey), now, spec.name, scopes.join(' '), spec.expiresAt ?? null, rates.requestsPerSecond, rates.recordsPerSecond, holderId ?? keyId);
  return { keyId, apiKey, prefix: visiblePrefix(apiKey), createdAt: now, name: spec.name, scopes, expiresAt: spec.expiresAt ?? null, rates };
}

/** Issues one more key for an existing team (POST /keys, tools; rotation replaces a key instead). */
export function issueKey(db: Registry, teamId: string, spec: KeySpec = FIRST_KEY): IssuedKey {
  return insertKey(db, teamId, generateApiKey(), Date.now(), spec);
}

interface KeyRow {
  id: string;
  name: string;
  prefix: string;
  scopes: string;
  created_at: number;
  last_used_at: number | null;
  expires_at: number | null;
  requests_per_second: number | null;
  records_per_second: number | null;
}

/** Keys of a team that still authenticate (not revoked, not expired), newest first. */
export function listKeys(db: Registry, teamId: string, now = Date.now()): KeyInfo[] {
  const rows = db
    .prepare(
      `SELECT id, name, prefix, scopes, created_at, last_used_at, expires_at, requests_per_second, records_per_second FROM api_keys
        WHERE team_id = ? AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)
        ORDER BY created_at DESC, id`,
    )
    .all(teamId, now) as KeyRow[];
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    prefix: r.prefix,
    scopes: parseScopes(r.scopes),
    createdAt: r.created_at,
    lastUsedAt: r.last_used_at,
    expiresAt: r.expires_at,
    rates: { requestsPerSecond: r.requests_per_second, recordsPerSecond: r.records_per_second },
  }));
}

export type RevokeOutcome = 'revoked' | 'not_found' | 'last_admin';

/**
 * Revokes a key of the team at once, unless it is the team's last admin key that still works:
 * without one, nobody could make or revoke keys again.
 */
export function revokeKey(db: Registry, teamId: string, keyId: string, now = Date.now()): RevokeOutcome {
  const revoke = db.transaction((): RevokeOutcome => {
    const keys = listKeys(db, teamId, now);
    const key = keys.find((k) => k.id === keyId);
    if (!key) return 'not_found';
    if (key.scopes.includes('admin') && keys.filter((k) => k.scopes.includes('admin')).length === 1) return 'last_admin';
    db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND team_id = ?').run(now, keyId, teamId);
    keysChanged(db);
    return 'revoked';
  });
  return revoke.immediate();
}

/** Records that a key was used, to the minute. */
export function touchKey(db: Registry, keyId: string, at: number): void {
  db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ?').run(at, keyId);
}

/** Creates a team and its first key (generated unless given). Throws TeamNameTaken. */
export function createTeam(db: Registry, name: string, apiKey = generateApiKey()): { team: Team; key: IssuedKey } {
  const create = db.transaction(() => {
    if (db.prepare('SELECT 1 FROM teams WHERE name = ?').get(name)) throw new TeamNameTaken(name);
    const team: Team = { id: newId('team'), name, createdAt: Date.now() };
    db.prepare('INSERT INTO teams (id, name, created_at) VALUES (?, ?, ?)').run(team.id, team.name, team.createdAt);
    return { team, key: insertKey(db, team.id, apiKey, team.createdAt, FIRST_KEY) };
  });
  return create.immediate();
}

/** The key lookup of every authenticated request, prepared once per registry (preparing costs more than running it). */
interface KeyOwnerLookup {
  owner: Statement;
  dataVersion: Statement;
  /** Key hash → owner and expiry, for keys found since the last change to keys. */
  cache: Map<string, { owner: KeyOwner; expiresAt: number | null }>;
  /** `PRAGMA data_version` when the cache was last known good: it changes when another connection commits. */
  version: unknown;
}

const keyOwnerLookups = new WeakMap<Registry, KeyOwnerLookup>();
const MAX_CACHED_KEYS = 10_000;

function keyOwnerLookup(db: Registry): KeyOwnerLookup {
  let lookup = keyOwnerLookups.get(db);
  if (!lookup) {
    lookup = {
      // coalesce: a row inserted by an older build (its team CLI) after migration 015 has no holder yet, and is its own.
      owner: db.prepare(
        `SELECT k.id AS keyId, k.name AS keyName, coalesce(k.holder_id, k.id) AS holderId, k.scopes, k.requests_per_second, k.records_per_second,
                k.expires_at, t.id AS teamId, t.name AS teamName
           FROM api_keys k JOIN teams t ON t.id = k.team_id
          WHERE k.key_hash = ? AND k.revoked_at IS NULL`,
      ),
      dataVersion: db.prepare('PRAGMA data_version').pluck(),
      cache: new Map(),
      version: undefined,
    };
    keyOwnerLookups.set(db, lookup);
  }
  return lookup;
}

/** Forgets the keys found so far: called by every change to keys made through this connection. */
function keysChanged(db: Registry): void {
  keyOwnerLookups.get(db)?.cache.clear();
}

/**
 * Finds the team of a presented key. Found keys are kept in memory, and a revoked or rotated key
 * still fails from the very next request: a revocation through this connection clears them, and
 * one by another process (the team CLI) changes the registry's data_version, which is compared on
 * every lookup (a cheap pragma, where the join costs several times more on a busy registry).
 */
export function findKeyOwner(db: Registry, apiKey: string, now = Date.now()): KeyOwner | undefined {
  const lookup = keyOwnerLookup(db);
  const version = lookup.dataVersion.get();
  if (version !== lookup.version) {
    lookup.cache.clear();
    lookup.version = version;
  }
  const hash = hashApiKey(apiKey);
  let found = lookup.cache.get(hash);
  if (!found) {
    const row = lookup.owner.get(hash) as
      | { keyId: string; keyName: string; holderId: string; scopes: string; requests_per_second: number | null; records_per_second: number | null; expires_at: number | null; teamId: string; teamName: string }
      | undefined;
    // Unknown keys are not kept: a key issued a moment later must work at once.
    if (!row) return undefined;
    found = {
      owner: {
        teamId: row.teamId,
        teamName: row.teamName,
        keyId: row.keyId,
        keyName: row.keyName,
        holderId: row.holderId,
        scopes: parseScopes(row.scopes),
        rates: { requestsPerSecond: row.requests_per_second, recordsPerSecond: row.records_per_second },
      },
      expiresAt: row.expires_at,
    };
    if (lookup.cache.size >= MAX_CACHED_KEYS) lookup.cache.clear();
    lookup.cache.set(hash, found);
  }
  return found.expiresAt === null || found.expiresAt > now ? found.owner : undefined;
}

/**
 * Replaces the presented key with a new one of the same name, scopes, expiry, rate limits and holder
 * (so the same rate buckets); the old key is revoked in the same transaction. Undefined when the key
 * was revoked meanwhile (two rotations racing must not yield two keys).
 */
export function rotateKey(db: Registry, owner: KeyOwner): IssuedKey | undefined {
  const rotate = db.transaction(() => {
    const now = Date.now();
    const old = db.prepare('SELECT expires_at, coalesce(holder_id, id) AS holder_id FROM api_keys WHERE id = ?').get(owner.keyId) as
      | { expires_at: number | null; holder_id: string }
      | undefined;
    const revoked = db
      .prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL')
      .run(now, owner.keyId);
    if (revoked.changes !== 1) return undefined;
    keysChanged(db);
    return insertKey(db, owner.teamId, generateApiKey(), now, {
      name: owner.keyName,
      scopes: owner.scopes,
      expiresAt: old?.expires_at ?? null,
      rates: owner.rates,
    }, old?.holder_id ?? owner.holderId);
  });
  return rotate.immediate();
}

/** Keys of a team that still authenticate. */
export function countActiveKeys(db: Registry, teamId: string, now = Date.now()): number {
  return (
    db.prepare('SELECT count(*) AS n FROM api_keys WHERE team_id = ? AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)').get(teamId, now) as {
      n: number;
    }
  ).n;
}
