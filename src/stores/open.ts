import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import type { Config, SharedDatabaseConfig } from '../config.js';
import { SCHEMA_DIR } from '../paths.js';
import { createEventStore, ensureDatabase, type EventStore } from './clickhouse.js';
import { migrateEventStore, migrateRegistry, migrateSharedStore } from './migrations.js';
import { openSharedStore, withConnection, type SharedStore } from './postgres.js';
import { applyRetention } from './retention.js';
import { postgresDatabase, sqliteDatabase, type Database } from './sql.js';
import { openRegistry, type Registry } from './sqlite.js';

export interface EventStores {
  /** Reads (routes, evaluation) and migrations. */
  events: EventStore;
  /** The ingest loader's own session or client, so a read never queues behind an insert. */
  loaderEvents: EventStore;
}

export interface Stores extends EventStores {
  registry: Registry;
}

/** The stores of an instance that shares its state with others (DATABASE_URL). */
export interface SharedStores extends EventStores {
  pool: SharedStore;
  db: Database;
}

/** Opens both stores and brings their schemas up to date; closes what it opened on failure. */
export async function openStores(config: Config, logger: Logger): Promise<Stores> {
  // The scripts that call this work on one instance's own files; with PostgreSQL they would
  // quietly work on a SQLite registry nobody reads.
  if (config.database) throw new Error('this works on the SQLite registry under DATA_DIR; unset DATABASE_URL');
  const registry = openRegistry(config.dataDir);
  try {
    const applied = migrateRegistry(registry, path.join(SCHEMA_DIR, 'sqlite'));
    if (applied.length) logger.info({ applied }, 'registry migrations applied');
    return { registry, ...(await openEventStores(config, logger)) };
  } catch (err) {
    registry.close();
    throw err;
  }
}

/**
 * Opens PostgreSQL (migrated under an advisory lock: instances starting together apply each
 * migration once) and ClickHouse; closes what it opened on failure.
 */
export async function openSharedStores(config: Config & { database: SharedDatabaseConfig }, logger: Logger): Promise<SharedStores> {
  const pool = openSharedStore(config.database.url, { max: config.database.poolMax });
  try {
    const applied = await migrateSharedStore(pool, path.join(SCHEMA_DIR, 'postgres'));
    if (applied.length) logger.info({ applied }, 'PostgreSQL migrations applied');
    // ClickHouse's migrations are recorded in ClickHouse, which has no transactions: one instance at a time.
    // The session's lock ends with it: the connection is destroyed, not returned to the pool.
    return await withConnection(
      pool,
      async (client) => {
        await client.query("SELECT pg_advisory_lock(hashtext('spendscope:clickhouse migrations'))");
        return { pool, db: postgresDatabase(pool), ...(await openEventStores(config, logger)) };
      },
      true,
    );
  } catch (err) {
    await pool.end().catch(() => {});
    throw err;
  }
}

async function openEventStores(config: Config, logger: Logger): Promise<EventStores> {
  let events: EventStore | undefined;
  let loaderEvents: EventStore | undefined;
  try {
    events = createEventStore(config.clickhouse);
    await ensureDatabase(events, config.clickhouse);
    const appliedCh = await migrateEventStore(events, path.join(SCHEMA_DIR, 'clickhouse'));
    if (appliedCh.length) logger.info({ applied: appliedCh }, 'ClickHouse migrations applied');
    await applyRetention(events, config.retention, logger);
    loaderEvents = createEventStore(config.clickhouse);
    await ensureDatabase(loaderEvents, config.clickhouse);
    return { events, loaderEvents };
  } catch (err) {
    await events?.close().catch(() => undefined);
    await loaderEvents?.close().catch(() => undefined);
    throw err;
  }
}

/** The registry a tool works on (npm run team:create), wherever the service keeps it. */
export interface ToolRegistry {
  db: Database;
  /** Where it is, for the tool to say: the SQLite file, or PostgreSQL's host and database (no credentials). */
  where: string;
  close(): Promise<void>;
}

/** A tool was asked to do what the configuration does not allow; its message says what to do instead. */
export class RegistryNotFound extends Error {}

/**
 * Opens the registry the service's configuration names, migrated: PostgreSQL with DATABASE_URL
 * (under the migrations' advisory lock, as instances starting together), else the SQLite file
 * under DATA_DIR, which must exist unless `init` (a key made in a registry no server reads would
 * be refused everywhere).
 */
export async function openToolRegistry(config: Config, options: { init: boolean }): Promise<ToolRegistry> {
  if (config.database) {
    if (options.init) {
      throw new RegistryNotFound(
        '--init creates a SQLite registry under DATA_DIR; with DATABASE_URL the registry is PostgreSQL, which the instances migrate (and this does too): drop --init',
      );
    }
    const url = new URL(config.database.url);
    const pool = openSharedStore(config.database.url, { max: 2 });
    try {
      await migrateSharedStore(pool, path.join(SCHEMA_DIR, 'postgres'));
    } catch (err) {
      await pool.end().catch(() => {});
      throw err;
    }
    return { db: postgresDatabase(pool), where: `PostgreSQL ${url.host}${url.pathname}`, close: () => pool.end() };
  }
  const file = path.join(config.dataDir, 'registry.db');
  const exists = fs.existsSync(file);
  if (!exists && !options.init) {
    throw new RegistryNotFound(
      `no registry in DATA_DIR=${config.dataDir} (no ${file}): no server has run with this DATA_DIR.\n` +
        'Set DATA_DIR to the directory your server uses (or DATABASE_URL to its PostgreSQL), or pass --init to create a new registry here.',
    );
  }
  const registry = openRegistry(config.dataDir);
  try {
    migrateRegistry(registry, path.join(SCHEMA_DIR, 'sqlite'));
  } catch (err) {
    registry.close();
    throw err;
  }
  const db = sqliteDatabase(registry);
  return { db, where: `DATA_DIR=${config.dataDir}${exists ? '' : ' (new registry, --init)'}`, close: () => db.close() };
}
