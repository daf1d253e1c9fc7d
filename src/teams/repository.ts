import { SCOPES, type KeyOwner, type KeyRates, type Scope } from '../domain/keys.js';
import type { Database, Sql } from '../stores/sql.js';
import type { Statement } from 'better-sqlite3';
import type { Registry } from '../stores/sqlite.js';
import { generateApiKey, hashApiKey, newId, visiblePrefix } from '../domain/ids.js';
import { DEFAULT_CURRENCY } from '../domain/currencies.js';
import { announceRatesChange } from '../rates/changes.js';

export { SCOPES, type KeyOwner, type Scope };

export interface Team {
  id: string;
  name: string;
  createdAt: number;
  /** When the operator suspended it (its keys are refused, its records kept); null: active. */
  suspendedAt: number | null;
  /** ISO 4217: what the team's records are valued in (src/rates/). */
  currency: string;
}

/** Team names: 1 to 64 characters once trimmed, no control characters; unique per installation. */
export const TEAM_NAME_MAX = 64;

/** A team name as stored: trimmed, in Unicode NFC (so one name has one spelling). */
export const normalTeamName = (name: string) => name.trim().normalize('NFC');

/** What is wrong with a team name (normalised), or undefined when it is a good one. */
export function teamNameProblem(name: string): string | undefined {
  if (name.length === 0) return 'must not be empty';
  if ([...name].length > TEAM_NAME_MAX) return `must be at most ${TEAM_NAME_MAX} characters`;
  // Control characters, line separators and bidirectional overrides make a name that reads as another.
  if (/[\p{Cc}\p{Zl}\p{Zp}\u202a-\u202e\u2066-\u2069]/u.test(name)) return 'must not hold control characters';
  return undefined;
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

export interface TeamRow {
  id: string;
  name: string;
  created_at: number;
  suspended_at: number | null;
  currency: string;
}

export const TEAM_COLUMNS = 'id, name, created_at, suspended_at, currency';

export const toTeam = (row: TeamRow): Team => ({
  id: row.id,
  name: row.name,
  createdAt: Number(row.created_at),
  suspendedAt: row.suspended_at === null ? null : Number(row.suspended_at),
  currency: row.currency,
});

/** Sets the team's currency; false when it had that one already. */
export async function setTeamCurrency(sql: Sql, teamId: string, currency: string): Promise<boolean> {
  if ((await sql.run('UPDATE teams SET currency = ? WHERE id = ? AND currency <> ?', [currency, teamId, currency])) !== 1) return false;
  await announceRatesChange(sql, teamId, { currency });
  return true;
}

/**
 * On PostgreSQL, locks the team's row until the transaction ends, so instances counting what the
 * team has (active policies, webhook endpoints) before adding one do it in turn. NO KEY UPDATE: it
 * does not wait for, nor hold up, the inserts of rows that reference the team. SQLite's write
 * transactions already take turns.
 */
export async function lockTeam(sql: Sql, teamId: string): Promise<void> {
  if (sql.dialect === 'postgres') await sql.get('SELECT id FROM teams WHERE id = ? FOR NO KEY UPDATE', [teamId]);
}

export async function countTeams(sql: Sql): Promise<number> {
  return Number((await sql.get<{ n: number }>('SELECT count(*) AS n FROM teams'))!.n);
}

export async function findTeam(sql: Sql, teamId: string): Promise<Team | undefined> {
  const row = await sql.get<TeamRow>(`SELECT ${TEAM_COLUMNS} FROM teams WHERE id = ?`, [teamId]);
  return row && toTeam(row);
}

const NO_OWN_RATES: KeyRates = { requestsPerSecond: null, recordsPerSecond: null };

const parseScopes = (text: string) => text.split(' ').filter((s): s is Scope => (SCOPES as readonly string[]).includes(s));

/** Inserts a key; its holder is itself unless it replaces a key (rotation passes that key's holder). */
async function insertKey(sql: Sql, teamId: string, apiKey: string, now: number, spec: KeySpec, holderId?: string): Promise<IssuedKey> {
  const keyId = newId('key');
  // Stored in SCOPES order, each once.
  const scopes = SCOPES.filter((s) => spec.scopes.includes(s));
  const rates = spec.rates ?? NO_OWN_RATES;
  await sql.run(
    `INSERT INTO api_keys (id, team_id, prefix, key_hash, created_at, name, scopes, expires_at, requests_per_second, records_per_second, holder_id)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    [keyId, teamId, visiblePrefix(apiKey), hashApiKey(apiKey), now, spec.name, scopes.join(' '), spec.expiresAt ?? null, rates.requestsPerSecond, rates.recordsPerSecond, holderId ?? keyId],
  );
  keysChanged(sql);
  return { keyId, apiKey, prefix: visiblePrefix(apiKey), createdAt: now, name: spec.name, scopes, expiresAt: spec.expiresAt ?? null, rates };
}

/** Issues one more key for an existing team (POST /keys, tools; rotation replaces a key instead). */
export function issueKey(sql: Sql, teamId: string, spec: KeySpec = FIRST_KEY): Promise<IssuedKey> {
  return insertKey(sql, teamId, generateApiKey(), Date.now(), spec);
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

const KEY_COLUMNS = 'id, name, prefix, scopes, created_at, last_used_at, expires_at, requests_per_second, records_per_second';
const WORKING = 'team_id = ? AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)';

const toKeyInfo = (r: KeyRow): KeyInfo => ({
  id: r.id,
  name: r.name,
  prefix: r.prefix,
  scopes: parseScopes(r.scopes),
  createdAt: r.created_at,
  lastUsedAt: r.last_used_at,
  expiresAt: r.expires_at,
  rates: { requestsPerSecond: r.requests_per_second, recordsPerSecond: r.records_per_second },
});

/** Keys of a team that still authenticate (not revoked, not expired), newest first. */
export async function listKeys(sql: Sql, teamId: string, now = Date.now()): Promise<KeyInfo[]> {
  const rows = await sql.all<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE ${WORKING} ORDER BY created_at DESC, id`, [teamId, now]);
  return rows.map(toKeyInfo);
}

export type RevokeOutcome = 'revoked' | 'not_found' | 'last_admin';

/**
 * Revokes a key of the team at once, unless it is the team's last admin key that still works:
 * without one, nobody could make or revoke keys again. Run it in a transaction: on PostgreSQL the
 * team's working keys are locked first, so two revocations at once cannot each leave the other's
 * key as the last admin and revoke both.
 */
export async function revokeKey(sql: Sql, teamId: string, keyId: string, now = Date.now()): Promise<RevokeOutcome> {
  const keys = (
    await sql.all<KeyRow>(
      {
        sqlite: `SELECT ${KEY_COLUMNS} FROM api_keys WHERE ${WORKING}`,
        postgres: `SELECT ${KEY_COLUMNS} FROM api_keys WHERE team_id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $2) ORDER BY id FOR UPDATE`,
      },
      [teamId, now],
    )
  ).map(toKeyInfo);
  const key = keys.find((k) => k.id === keyId);
  if (!key) return 'not_found';
  if (key.scopes.includes('admin') && keys.filter((k) => k.scopes.includes('admin')).length === 1) return 'last_admin';
  await sql.run('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND team_id = ?', [now, keyId, teamId]);
  keysChanged(sql);
  return 'revoked';
}

/** Records that a key was used, to the minute. */
export async function touchKey(sql: Sql, keyId: string, at: number): Promise<void> {
  await sql.run('UPDATE api_keys SET last_used_at = ? WHERE id = ?', [at, keyId]);
}

/**
 * Creates a team and its first key (generated unless given). Throws TeamNameTaken. `alongside`
 * runs in the same transaction (the operator audit log's record of it).
 */
export async function createTeam(
  db: Database,
  name: string,
  apiKey = generateApiKey(),
  alongside?: (sql: Sql, team: Team) => Promise<void>,
): Promise<{ team: Team; key: IssuedKey }> {
  try {
    return await db.transaction(async (sql) => {
      if (await sql.get('SELECT 1 AS taken FROM teams WHERE name = ?', [name])) throw new TeamNameTaken(name);
      const team: Team = { id: newId('team'), name, createdAt: Date.now(), suspendedAt: null, currency: DEFAULT_CURRENCY };
      await sql.run('INSERT INTO teams (id, name, created_at) VALUES (?, ?, ?)', [team.id, team.name, team.createdAt]);
      const key = await insertKey(sql, team.id, apiKey, team.createdAt, FIRST_KEY);
      await alongside?.(sql, team);
      return { team, key };
    });
  } catch (err) {
    // Two creations of one name at once on PostgreSQL: the second meets the unique index.
    if ((err as { code?: string }).code === '23505' && /teams_name/.test((err as { constraint?: string }).constraint ?? '')) throw new TeamNameTaken(name);
    throw err;
  }
}

/** Found keys, per database, for the key lookup of every authenticated request. */
interface KeyOwnerCache {
  /** Key hash -> owner and expiry, for keys found since the last change to keys. */
  entries: Map<string, { owner: KeyOwner; expiresAt: number | null }>;
  /** SQLite's `PRAGMA data_version` when the cache was last known good: it changes when another connection commits. */
  version: unknown;
}

const keyOwnerCaches = new WeakMap<object, KeyOwnerCache>();
const MAX_CACHED_KEYS = 10_000;

/** Forgets the keys found so far once a change to keys (or to their team's suspension) made through this database commits. */
export function keysChanged(sql: Sql): void {
  sql.afterCommit(() => keyOwnerCaches.get(sql.origin)?.entries.clear());
}

/**
 * The registry's data_version, read on its connection at once: reading it changes nothing, so it
 * need not wait its turn behind a transaction in progress (a promise and a turn of the queue on
 * every request, the decision path's hottest statement). Read once per turn of the event loop:
 * the requests that arrived together share one reading (each reading is a read transaction), and
 * another process's change that landed during that turn is seen from the next request parsed
 * after it, as it would be had those requests come a moment earlier.
 */
function dataVersionOf(db: Registry): number {
  let reading = dataVersions.get(db);
  if (!reading) dataVersions.set(db, (reading = { statement: db.prepare<[], number>('PRAGMA data_version').pluck(), version: undefined }));
  if (reading.version === undefined) {
    reading.version = reading.statement.get()!;
    const forget = reading;
    setImmediate(() => (forget.version = undefined));
  }
  return reading.version;
}
const dataVersions = new WeakMap<Registry, { statement: Statement<[], number>; version: number | undefined }>();

type OwnerRow = {
  keyId: string;
  keyName: string;
  holderId: string;
  scopes: string;
  requests_per_second: number | null;
  records_per_second: number | null;
  expires_at: number | null;
  teamId: string;
  teamName: string;
  suspended_at: number | null;
};

/**
 * Finds the team of a presented key. On SQLite, found keys are kept in memory, and a revoked or
 * rotated key still fails from the very next request: a revocation through this connection clears
 * them, and one by another process (the team CLI) changes the registry's data_version, which is
 * compared on every lookup (a cheap pragma, where the join costs several times more on a busy
 * registry). On PostgreSQL, shared by several instances, every lookup asks the database: nothing
 * tells one instance that another revoked a key.
 */
export async function findKeyOwner(sql: Sql, apiKey: string, now = Date.now()): Promise<KeyOwner | undefined> {
  let cache: KeyOwnerCache | undefined;
  if (sql.dialect === 'sqlite') {
    cache = keyOwnerCaches.get(sql.origin);
    if (!cache) keyOwnerCaches.set(sql.origin, (cache = { entries: new Map(), version: undefined }));
    const version = dataVersionOf(sql.origin as Registry);
    if (version !== cache.version) {
      cache.entries.clear();
      cache.version = version;
    }
  }
  const hash = hashApiKey(apiKey);
  let found = cache?.entries.get(hash);
  if (!found) {
    // coalesce: a row inserted by an older build (its team CLI) after migration 015 has no holder yet, and is its own.
    const row = await sql.get<OwnerRow>(
      `SELECT k.id AS "keyId", k.name AS "keyName", coalesce(k.holder_id, k.id) AS "holderId", k.scopes, k.requests_per_second, k.records_per_second,
              k.expires_at, t.id AS "teamId", t.name AS "teamName", t.suspended_at
         FROM api_keys k JOIN teams t ON t.id = k.team_id
        WHERE k.key_hash = ? AND k.revoked_at IS NULL`,
      [hash],
    );
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
        suspended: row.suspended_at !== null,
      },
      expiresAt: row.expires_at,
    };
    if (cache) {
      if (cache.entries.size >= MAX_CACHED_KEYS) cache.entries.clear();
      cache.entries.set(hash, found);
    }
  }
  return found.expiresAt === null || found.expiresAt > now ? found.owner : undefined;
}

/**
 * Replaces the presented key with a new one of the same name, scopes, expiry, rate limits and holder
 * (so the same rate buckets); the old key is revoked in the same transaction (run it in one).
 * Undefined when the key was revoked meanwhile (two rotations racing must not yield two keys).
 */
export async function rotateKey(sql: Sql, owner: KeyOwner): Promise<IssuedKey | undefined> {
  const now = Date.now();
  const old = await sql.get<{ expires_at: number | null; holder_id: string }>('SELECT expires_at, coalesce(holder_id, id) AS holder_id FROM api_keys WHERE id = ?', [owner.keyId]);
  // The revocation is the race's arbiter: of two rotations, one changes the row and the other finds it revoked.
  if ((await sql.run('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL', [now, owner.keyId])) !== 1) return undefined;
  keysChanged(sql);
  return insertKey(sql, owner.teamId, generateApiKey(), now, {
    name: owner.keyName,
    scopes: owner.scopes,
    expiresAt: old?.expires_at ?? null,
    rates: owner.rates,
  }, old?.holder_id ?? owner.holderId);
}

/** Keys of a team that still authenticate. */
export async function countActiveKeys(sql: Sql, teamId: string, now = Date.now()): Promise<number> {
  return Number((await sql.get<{ n: number }>(`SELECT count(*) AS n FROM api_keys WHERE ${WORKING}`, [teamId, now]))!.n);
}

/** The key lookups of every interface (src/http/auth.ts), over this store. */
export function keyDirectory(db: Database) {
  return {
    owner: (apiKey: string, now: number) => findKeyOwner(db, apiKey, now),
    async standing(owner: KeyOwner, now: number): Promise<'working' | 'revoked' | 'suspended'> {
      // The one key and its team in one read, not the team's whole key list.
      const row = await db.get<{ revoked_at: number | null; expires_at: number | null; suspended_at: number | null }>(
        'SELECT k.revoked_at, k.expires_at, t.suspended_at FROM api_keys k JOIN teams t ON t.id = k.team_id WHERE k.id = ? AND k.team_id = ?',
        [owner.keyId, owner.teamId],
      );
      if (!row || row.revoked_at !== null || (row.expires_at !== null && Number(row.expires_at) <= now)) return 'revoked';
      return row.suspended_at === null ? 'working' : 'suspended';
    },
    touch: (keyId: string, minute: number) => touchKey(db, keyId, minute),
  };
}
