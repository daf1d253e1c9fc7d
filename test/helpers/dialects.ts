/**
 * The state-touching suites run once on the SQLite registry and once on PostgreSQL, each store
 * migrated by its own schema folder, so the two dialects cannot drift apart (issue 30).
 */
import path from 'node:path';
import { SCHEMA_DIR } from '../../src/paths.js';
import { migrateRegistry, migrateSharedStore } from '../../src/stores/migrations.js';
import { openSharedStore, type SharedStore } from '../../src/stores/postgres.js';
import { postgresDatabase, sqliteDatabase, type Database, type Dialect } from '../../src/stores/sql.js';
import { openRegistry } from '../../src/stores/sqlite.js';
import { freshDatabase } from './postgres.js';
import { tempDir } from './processes.js';

export interface DialectStore {
  /** A freshly migrated store, empty. */
  db: Database;
  /**
   * Another instance on the same store: on PostgreSQL a pool of its own (its transactions run at
   * the same time as db's and meet at row locks); on SQLite the same connection, as a second
   * process would queue on the file's write lock.
   */
  another(): Database;
}

/**
 * Declares `body`'s tests twice, in a describe per dialect; `open()` gives each test a store of
 * its own (a temp SQLite file, or a fresh PostgreSQL database). Pools are closed after the suite.
 */
export function forEachDialect(label: string, body: (open: () => Promise<DialectStore>, dialect: Dialect) => void): void {
  const pools: SharedStore[] = [];
  after(async () => {
    await Promise.all(pools.splice(0).map((p) => p.end()));
  });
  describe('SQLite', () =>
    body(async () => {
      const registry = openRegistry(tempDir(label));
      migrateRegistry(registry, path.join(SCHEMA_DIR, 'sqlite'));
      const db = sqliteDatabase(registry);
      return { db, another: () => db };
    }, 'sqlite'));
  describe('PostgreSQL', () =>
    body(async () => {
      const url = await freshDatabase(label);
      const open = () => {
        const pool = openSharedStore(url);
        pools.push(pool);
        return pool;
      };
      const first = open();
      await migrateSharedStore(first, path.join(SCHEMA_DIR, 'postgres'));
      return { db: postgresDatabase(first), another: () => postgresDatabase(open()) };
    }, 'postgres'));
}
