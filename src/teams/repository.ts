import type { Registry } from '../stores/sqlite.js';
import { generateApiKey, hashApiKey, newId, visiblePrefix } from './keys.js';

export interface Team {
  id: string;
  name: string;
  createdAt: number;
}

/** The team an API key authenticates, and which key it was. */
export interface KeyOwner {
  teamId: string;
  teamName: string;
  keyId: string;
}

/** A key as shown once to its creator. */
export interface IssuedKey {
  keyId: string;
  apiKey: string;
  prefix: string;
  createdAt: number;
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

function insertKey(db: Registry, teamId: string, apiKey: string, now: number): IssuedKey {
  const keyId = newId('key');
  db.prepare('INSERT INTO api_keys (id, team_id, prefix, key_hash, created_at) VALUES (?, ?, ?, ?, ?)').run(
    keyId,
    teamId,
    visiblePrefix(apiKey),
    hashApiKey(apiKey),
    now,
  );
  return { keyId, apiKey, prefix: visiblePrefix(apiKey), createdAt: now };
}

/** Issues one more key for an existing team (tools; rotation replaces a key instead). */
export function issueKey(db: Registry, teamId: string): IssuedKey {
  return insertKey(db, teamId, generateApiKey(), Date.now());
}

/** Creates a team and its first key (generated unless given). Throws TeamNameTaken. */
export function createTeam(db: Registry, name: string, apiKey = generateApiKey()): { team: Team; key: IssuedKey } {
  const create = db.transaction(() => {
    if (db.prepare('SELECT 1 FROM teams WHERE name = ?').get(name)) throw new TeamNameTaken(name);
    const team: Team = { id: newId('team'), name, createdAt: Date.now() };
    db.prepare('INSERT INTO teams (id, name, created_at) VALUES (?, ?, ?)').run(team.id, team.name, team.createdAt);
    return { team, key: insertKey(db, team.id, apiKey, team.createdAt) };
  });
  return create.immediate();
}

/**
 * Finds the team of a presented key. No cache on purpose: the team CLI and rotation write from
 * other requests or processes, and a rotated key must fail from the very next request.
 */
export function findKeyOwner(db: Registry, apiKey: string): KeyOwner | undefined {
  const row = db
    .prepare(
      `SELECT k.id AS keyId, t.id AS teamId, t.name AS teamName
         FROM api_keys k JOIN teams t ON t.id = k.team_id
        WHERE k.key_hash = ? AND k.revoked_at IS NULL`,
    )
    .get(hashApiKey(apiKey)) as KeyOwner | undefined;
  return row;
}

/**
 * Replaces the presented key with a new one; the old key is revoked in the same transaction.
 * Undefined when the key was revoked meanwhile (two rotations racing must not yield two keys).
 */
export function rotateKey(db: Registry, owner: KeyOwner): IssuedKey | undefined {
  const rotate = db.transaction(() => {
    const now = Date.now();
    const revoked = db
      .prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL')
      .run(now, owner.keyId);
    return revoked.changes === 1 ? insertKey(db, owner.teamId, generateApiKey(), now) : undefined;
  });
  return rotate.immediate();
}

/** Keys of a team that still authenticate. */
export function countActiveKeys(db: Registry, teamId: string): number {
  return (
    db.prepare('SELECT count(*) AS n FROM api_keys WHERE team_id = ? AND revoked_at IS NULL').get(teamId) as {
      n: number;
    }
  ).n;
}
