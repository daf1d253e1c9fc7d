import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { MigrationError, migrateEventStore, migrateRegistry, readMigrations, splitStatements } from '../../src/stores/migrations.js';
import { openRegistry } from '../../src/stores/sqlite.js';
import { SCHEMA_DIR } from '../../src/paths.js';
import { testEnv } from '../helpers/context.js';
import { tempDir } from '../helpers/processes.js';

function writeMigrations(files: Record<string, string>): string {
  const dir = tempDir('migrations');
  for (const [name, sql] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), sql);
  return dir;
}

describe('migrations', () => {
  describe('registry (SQLite)', () => {
    it('applies files in version order, records them, and is safe to re-run', () => {
      const db = openRegistry(tempDir('registry'));
      const dir = writeMigrations({
        '002_add_color.sql': 'ALTER TABLE widgets ADD COLUMN color TEXT;',
        '001_widgets.sql': 'CREATE TABLE widgets (id INTEGER PRIMARY KEY);',
        'README.md': 'not a migration',
      });
      expect(migrateRegistry(db, dir)).to.deep.equal(['001_widgets.sql', '002_add_color.sql']);
      expect(migrateRegistry(db, dir)).to.deep.equal([]);
      const recorded = db.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all();
      expect(recorded).to.deep.equal([
        { version: 1, name: '001_widgets.sql' },
        { version: 2, name: '002_add_color.sql' },
      ]);
      db.prepare('INSERT INTO widgets (id, color) VALUES (1, ?)').run('red');
      db.close();
    });

    it('stops with a clear message on a failing migration and records nothing of it', () => {
      const db = openRegistry(tempDir('registry'));
      const dir = writeMigrations({
        '001_ok.sql': 'CREATE TABLE a (id INTEGER);',
        '002_broken.sql': 'CREATE TABLE b (id INTEGER); CREATE TABLE oops (;',
      });
      expect(() => migrateRegistry(db, dir)).to.throw(MigrationError, /002_broken\.sql failed/);
      // The failing file rolled back whole: its first statement left no table behind.
      const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'b'").all();
      expect(tables).to.deep.equal([]);
      const recorded = db.prepare('SELECT name FROM schema_migrations').all();
      expect(recorded).to.deep.equal([]);
      db.close();
    });

    it('refuses an applied migration whose file was edited', () => {
      const db = openRegistry(tempDir('registry'));
      const dir = writeMigrations({ '001_a.sql': 'CREATE TABLE a (id INTEGER);' });
      migrateRegistry(db, dir);
      fs.writeFileSync(path.join(dir, '001_a.sql'), 'CREATE TABLE a (id INTEGER, x TEXT);');
      expect(() => migrateRegistry(db, dir)).to.throw(MigrationError, /changed after it was applied/);
      db.close();
    });

    it('rejects badly named files and duplicate versions', () => {
      expect(() => readMigrations(writeMigrations({ 'create.sql': 'SELECT 1;' }))).to.throw(MigrationError, /NNN_name/);
      expect(() => readMigrations(writeMigrations({ '001_a.sql': '', '001_b.sql': '' }))).to.throw(MigrationError, /share version 1/);
    });

    it('the project registry migrations apply to an empty file', () => {
      const db = openRegistry(tempDir('registry'));
      expect(migrateRegistry(db, path.join(SCHEMA_DIR, 'sqlite'))).to.include('001_teams_and_keys.sql');
      db.close();
    });
  });

  describe('event store (ClickHouse)', () => {
    // The run has one engine; these tests use their own migrations table and table names.
    const suffix = Math.random().toString(36).slice(2, 8);

    it('applies, records and skips on re-run', async () => {
      const { events } = testEnv();
      const table = `mig_${suffix}_a`;
      const dir = writeMigrations({
        '001_t.sql': `CREATE TABLE IF NOT EXISTS ${table} (id UInt32 COMMENT 'a; b') ENGINE = MergeTree ORDER BY id;\n` +
          `-- a comment; with a semicolon\nINSERT INTO ${table} VALUES (1);`,
      });
      const migrations = `schema_migrations_${suffix}_a`;
      expect(await migrateEventStore(events, dir, migrations)).to.deep.equal(['001_t.sql']);
      expect(await migrateEventStore(events, dir, migrations)).to.deep.equal([]);
      const rows = await events.query<{ n: string }>(`SELECT count() AS n FROM ${table}`);
      expect(rows).to.deep.equal([{ n: '1' }]);
    });

    it('stops with a clear message on a failing statement and does not record it', async () => {
      const { events } = testEnv();
      const dir = writeMigrations({ '001_bad.sql': 'CREATE TABLE nowhere (x NoSuchType) ENGINE = Memory;' });
      const migrations = `schema_migrations_${suffix}_b`;
      let error: unknown;
      try {
        await migrateEventStore(events, dir, migrations);
      } catch (err) {
        error = err;
      }
      expect(error).to.be.instanceOf(MigrationError);
      expect((error as Error).message).to.match(/ClickHouse migration 001_bad\.sql failed/);
      const recorded = await events.query(`SELECT name FROM ${migrations}`);
      expect(recorded).to.deep.equal([]);
    });

    it('records the project migrations in the run database', async () => {
      const { events } = testEnv();
      const rows = await events.query<{ name: string }>('SELECT name FROM schema_migrations FINAL ORDER BY version');
      const files = fs.readdirSync(path.join(SCHEMA_DIR, 'clickhouse')).filter((f) => f.endsWith('.sql')).sort();
      expect(rows.map((r) => r.name)).to.deep.equal(files);
    });
  });

  describe('splitStatements', () => {
    it('splits at semicolons outside quotes and comments', () => {
      const sql = "CREATE TABLE t (a String COMMENT 'x; y', b String DEFAULT 'it''s;');\n-- note; here\nSELECT \"a;b\";";
      expect(splitStatements(sql)).to.deep.equal([
        "CREATE TABLE t (a String COMMENT 'x; y', b String DEFAULT 'it''s;')",
        'SELECT "a;b"',
      ]);
    });
  });
});
