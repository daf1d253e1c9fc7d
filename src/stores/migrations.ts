import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { EventStore } from './clickhouse.js';
import { MIGRATION_STEPS, type MigrationStep } from './migration-steps.js';
import { inTransaction, type SharedStore } from './postgres.js';
import { perform, performInTransaction, postgresSql } from './sql.js';
import type { Registry } from './sqlite.js';

/** One `NNN_name.sql` file of `schema/sqlite`, `schema/postgres` or `schema/clickhouse`. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
}

/** A migration that cannot be applied; start-up stops with this message. */
export class MigrationError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'MigrationError';
  }
}

const FILE_NAME = /^(\d{3,})_([a-z0-9_]+)\.sql$/;
const TABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Reads the migrations of a folder in version order; other files (a README) are ignored. */
export function readMigrations(dir: string): Migration[] {
  const migrations = fs
    .readdirSync(dir)
    .filter((file) => file.endsWith('.sql'))
    .map((file) => {
      const match = FILE_NAME.exec(file);
      if (!match) throw new MigrationError(`${path.join(dir, file)}: name must be NNN_name.sql (lowercase)`);
      const sql = fs.readFileSync(path.join(dir, file), 'utf8');
      return {
        version: Number(match[1]),
        name: file,
        sql,
        checksum: crypto.createHash('sha256').update(sql).digest('hex'),
      };
    })
    .sort((a, b) => a.version - b.version);
  for (let i = 1; i < migrations.length; i++) {
    if (migrations[i]!.version === migrations[i - 1]!.version) {
      throw new MigrationError(`${dir}: two migrations share version ${migrations[i]!.version}`);
    }
  }
  return migrations;
}

/** The code step a registry migration runs before its SQL (migration-steps.ts), if it has one. */
function stepOf(migration: Migration, steps: Readonly<Record<string, MigrationStep>>): MigrationStep | undefined {
  const name = FILE_NAME.exec(migration.name)?.[2];
  return name === undefined || !Object.hasOwn(steps, name) ? undefined : steps[name];
}

interface AppliedMigration {
  version: number;
  name: string;
  checksum: string;
}

/**
 * Decides what to apply. An applied migration whose file changed is refused: schema changes are
 * new files, never edits of applied ones, or two deployments would disagree about their schema.
 */
function pendingMigrations(all: Migration[], applied: AppliedMigration[], store: string): Migration[] {
  const byVersion = new Map(applied.map((m) => [Number(m.version), m]));
  for (const migration of all) {
    const done = byVersion.get(migration.version);
    if (done && done.checksum !== migration.checksum) {
      throw new MigrationError(
        `${store} migration ${migration.name} was changed after it was applied (as ${done.name}); ` +
          'add a new migration file instead of editing an applied one',
      );
    }
  }
  return all.filter((m) => !byVersion.has(m.version));
}

/**
 * Applies pending registry migrations, each in a transaction with its record, its code step (if
 * any) first. Returns their names.
 */
export function migrateRegistry(db: Registry, dir: string, table = 'schema_migrations', steps = MIGRATION_STEPS): string[] {
  if (!TABLE_NAME.test(table)) throw new MigrationError(`bad migrations table name ${table}`);
  db.exec(`CREATE TABLE IF NOT EXISTS ${table} (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    checksum TEXT NOT NULL,
    applied_at INTEGER NOT NULL
  )`);
  const all = readMigrations(dir);
  // IMMEDIATE takes the write lock first, so a server and the team CLI starting together
  // cannot both apply the same migration.
  const run = db.transaction(() => {
    const applied = db.prepare(`SELECT version, name, checksum FROM ${table}`).all() as AppliedMigration[];
    const pending = pendingMigrations(all, applied, 'registry');
    const record = db.prepare(`INSERT INTO ${table} (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)`);
    for (const migration of pending) {
      try {
        const step = stepOf(migration, steps);
        if (step) performInTransaction(db, step());
        db.exec(migration.sql);
      } catch (err) {
        throw new MigrationError(`registry migration ${migration.name} failed: ${(err as Error).message}`, {
          cause: err,
        });
      }
      record.run(migration.version, migration.name, migration.checksum, Date.now());
    }
    return pending;
  });
  const applied = run.immediate();
  // A step rewrites stored values, some to take credentials out: no older version stays in the WAL.
  if (applied.some((m) => stepOf(m, steps))) db.pragma('wal_checkpoint(TRUNCATE)');
  return applied.map((m) => m.name);
}

const MIGRATION_LOCK_TIMEOUT_MS = 2_000;
const MIGRATION_LOCK_ATTEMPTS = 30;
/** SQLSTATE of a lock not taken within lock_timeout. */
const LOCK_NOT_AVAILABLE = '55P03';

/** Runs a migration's transaction again while it gives up on a table lock, then fails naming it. */
async function retryOnLockTimeout<T>(attempt: () => Promise<T>, name: string): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (err) {
      if ((err as { code?: string }).code !== LOCK_NOT_AVAILABLE) throw err;
      if (n === MIGRATION_LOCK_ATTEMPTS) {
        throw new MigrationError(`PostgreSQL migration ${name} could not take its table locks in ${MIGRATION_LOCK_ATTEMPTS} tries of ${MIGRATION_LOCK_TIMEOUT_MS} ms: a long transaction holds them`, { cause: err });
      }
      await new Promise((r) => setTimeout(r, 200 * n));
    }
  }
}

/**
 * Applies pending migrations of the shared PostgreSQL store, each in a transaction with its record.
 * Several instances may start at once: each migration's transaction first takes one advisory lock
 * (held until it commits), then reads what is applied, so a migration another instance applied
 * meanwhile is skipped, never applied twice. A migration's code step (if any) runs first in its
 * transaction. Returns the names this call applied.
 */
export async function migrateSharedStore(store: SharedStore, dir: string, table = 'schema_migrations', steps = MIGRATION_STEPS): Promise<string[]> {
  if (!TABLE_NAME.test(table)) throw new MigrationError(`bad migrations table name ${table}`);
  const all = readMigrations(dir);
  const lock = `SELECT pg_advisory_xact_lock(hashtextextended('spendscope:${table}', 0))`;
  const applied: string[] = [];
  for (const migration of all) {
    const done = await retryOnLockTimeout(() => inTransaction(store, async (client) => {
      // Waiting for another instance's migration, and a long migration itself, may take longer
      // than the pool's statement timeout.
      await client.query('SET LOCAL statement_timeout = 0');
      await client.query(lock);
      await client.query(`CREATE TABLE IF NOT EXISTS ${table} (
        version integer PRIMARY KEY,
        name text NOT NULL,
        checksum text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`);
      const rows = (await client.query<AppliedMigration>(`SELECT version, name, checksum FROM ${table}`)).rows;
      if (pendingMigrations([migration], rows, 'PostgreSQL').length === 0) return false;
      // A DDL statement waiting for a table lock holds up every query behind it (a key lookup
      // joins teams): it gives up after a while and the migration is tried again.
      await client.query(`SET LOCAL lock_timeout = ${MIGRATION_LOCK_TIMEOUT_MS}`);
      try {
        const step = stepOf(migration, steps);
        if (step) await perform(postgresSql(client, client), step());
        await client.query(migration.sql);
      } catch (err) {
        if ((err as { code?: string }).code === LOCK_NOT_AVAILABLE) throw err;
        throw new MigrationError(`PostgreSQL migration ${migration.name} failed: ${(err as Error).message}`, { cause: err });
      }
      await client.query(`INSERT INTO ${table} (version, name, checksum) VALUES ($1, $2, $3)`, [migration.version, migration.name, migration.checksum]);
      return true;
    }), migration.name);
    if (done) applied.push(migration.name);
  }
  return applied;
}

/**
 * Applies pending event-store migrations in order. ClickHouse has no transactional DDL, so each
 * statement should be idempotent (IF NOT EXISTS); a migration is recorded only after all of its
 * statements succeeded, and a failed one is retried whole at the next start.
 */
export async function migrateEventStore(store: EventStore, dir: string, table = 'schema_migrations'): Promise<string[]> {
  if (!TABLE_NAME.test(table)) throw new MigrationError(`bad migrations table name ${table}`);
  await store.command(`CREATE TABLE IF NOT EXISTS ${table} (
    version UInt32 COMMENT 'number prefix of the migration file',
    name String COMMENT 'file name of the migration',
    checksum String COMMENT 'sha256 of the file as applied',
    applied_at DateTime64(3, 'UTC') COMMENT 'when it was applied'
  ) ENGINE = ReplacingMergeTree ORDER BY version
  COMMENT 'Migrations of schema/clickhouse applied to this database'`);
  const applied = await store.query<AppliedMigration>(`SELECT version, name, checksum FROM ${table} FINAL`);
  const pending = pendingMigrations(readMigrations(dir), applied, 'ClickHouse');
  for (const migration of pending) {
    for (const statement of splitStatements(migration.sql)) {
      try {
        await store.command(statement);
      } catch (err) {
        throw new MigrationError(`ClickHouse migration ${migration.name} failed: ${(err as Error).message}`, {
          cause: err,
        });
      }
    }
    await store.insert(table, [
      { version: migration.version, name: migration.name, checksum: migration.checksum, applied_at: Date.now() },
    ]);
  }
  return pending.map((m) => m.name);
}

/**
 * Splits a SQL file into statements at semicolons outside quotes and comments: the ClickHouse
 * HTTP interface runs one statement per request.
 */
export function splitStatements(sql: string): string[] {
  const statements: string[] = [];
  let current = '';
  let quote: string | null = null;
  for (let i = 0; i < sql.length; i++) {
    const ch = sql[i]!;
    if (quote) {
      current += ch;
      if (ch === '\\') current += sql[++i] ?? '';
      else if (ch === quote) quote = null;
    } else if (ch === "'" || ch === '"' || ch === '`') {
      quote = ch;
      current += ch;
    } else if (ch === '-' && sql[i + 1] === '-') {
      const end = sql.indexOf('\n', i);
      i = end === -1 ? sql.length : end - 1;
    } else if (ch === ';') {
      if (current.trim()) statements.push(current.trim());
      current = '';
    } else {
      current += ch;
    }
  }
  if (current.trim()) statements.push(current.trim());
  return statements;
}
